"""Tests never block on a modal dialog (tests/conftest.py), closing the window asks through one function,
and every test has a time limit (pytest-timeout)."""
from __future__ import annotations

import dataclasses


def test_unanswered_dialogs_return_at_once_and_are_recorded(_no_unanswered_modal, qtbot):
    from PySide6 import QtWidgets
    box = QtWidgets.QMessageBox
    assert box.critical(None, "Cannot open trace", "x.json: bad") == box.StandardButton.Ok
    assert box.question(None, "Run in progress", "Stop it?") == box.StandardButton.Yes
    assert QtWidgets.QFileDialog.getOpenFileName(None, "Open trace") == ("", "")
    dlg = QtWidgets.QDialog()
    qtbot.addWidget(dlg)
    assert dlg.exec() == 0  # Rejected, without an event loop
    assert box(box.Icon.Warning, "Partial load", "w").exec() == 0
    recorded = list(_no_unanswered_modal)
    assert recorded[0] == "QMessageBox.critical('Cannot open trace', 'x.json: bad')" and len(recorded) == 5
    assert "QFileDialog.getOpenFileName('Open trace')" in recorded
    _no_unanswered_modal.clear()  # this test opened them on purpose


class _FakeRun:
    is_running = True

    def stop(self):
        self.is_running = False


def _with_fake_run(win, tmp_path):
    """A run the dock runs (what stops it) and the window's session follows (what closing reads)."""
    run = _FakeRun()
    win.integrations = dataclasses.replace(win.integrations, run_panel=run)
    win.session.run_started(str(tmp_path / "bundle"))
    return run


def test_closing_during_a_run_asks_through_one_function(qtbot, main_window, monkeypatch, tmp_path):
    from gui.main_window import MainWindow
    asked = []
    monkeypatch.setattr(MainWindow, "confirm_quit_during_run", lambda self: asked.append(1) or False)
    run = _with_fake_run(main_window, tmp_path)
    main_window.close()
    assert asked == [1] and main_window.isVisible() and run.is_running  # "No": nothing stopped
    monkeypatch.setattr(MainWindow, "confirm_quit_during_run", lambda self: True)
    main_window.close()
    assert not main_window.isVisible() and not run.is_running


def test_an_unanswered_quit_question_stops_the_run_instead_of_hanging(qtbot, main_window, _no_unanswered_modal,
                                                                     tmp_path):
    run = _with_fake_run(main_window, tmp_path)
    main_window.close()  # the guard answers "Yes" (stop and quit): no training process outlives a test
    assert not run.is_running and not main_window.isVisible()
    assert _no_unanswered_modal == ["QMessageBox.question('Run in progress', "
                                    "'A profiling run is in progress. Stop it (its trace is saved) and quit?')"]
    _no_unanswered_modal.clear()


def test_closing_asks_what_the_session_says_a_connecting_remote_run_included(qtbot, main_window, monkeypatch,
                                                                             tmp_path):
    """closeEvent reads session.run_in_progress: a remote start still connecting asks too; after the run
    ended (the session's "finished") the window closes without a question."""
    from gui.main_window import MainWindow
    asked = []
    monkeypatch.setattr(MainWindow, "confirm_quit_during_run", lambda self: asked.append(1) or False)
    main_window.session.run_connecting()
    main_window.close()
    assert asked == [1] and main_window.isVisible()
    main_window.session.run_not_started()
    main_window.close()
    assert asked == [1] and not main_window.isVisible()
    main_window.show()
    run = _with_fake_run(main_window, tmp_path)
    run.stop()
    main_window.session.run_finished(str(tmp_path / "bundle"), 0)
    main_window.close()
    assert asked == [1] and not main_window.isVisible()


def test_every_test_has_a_time_limit(request):
    assert float(request.config.getini("timeout")) >= 60
    assert request.config.getini("timeout_method") == "thread"  # prints every thread's stack, even in a Qt loop
