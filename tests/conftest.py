"""Shared fixtures. Real traces: tests/helpers.py shared_trace() (tests/data/traces, big ones optional).

No test may block on a modal dialog that nothing answers (offscreen, a QMessageBox.question waits
forever): `_no_unanswered_modal` replaces every blocking Qt dialog entry point for each test. A test
that means a dialog to open sets the answer itself, e.g.
    monkeypatch.setattr(QtWidgets.QMessageBox, "question", lambda *a, **k: QtWidgets.QMessageBox.StandardButton.Yes)
    monkeypatch.setattr(MainWindow, "confirm_quit_during_run", lambda self: True)
Any other dialog gets a harmless default answer (Yes to "stop the run and quit?", so no training
process outlives the test; Cancel / no file elsewhere) and fails the test, naming the dialog.
A hang anywhere else ends at pytest-timeout's per-test limit (pyproject.toml) with every thread's stack.
"""
from __future__ import annotations

import os
import signal

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# the profiled test scripts are tiny: one intra-op thread each (OpenMP's spinning threads in two xdist
# workers' torch children competed for the 2 cores: ~7 % of a run's CPU)
os.environ.setdefault("OMP_NUM_THREADS", "1")


def pytest_sessionstart(session):
    """Run in the background by a shell without job control (`pytest &` in a script), this process starts
    with SIGINT ignored, and every child would inherit it: the stop tests would test the shell, not us."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _signal_handlers_restored():
    """A test that runs child code in-process (ChildRunner.finish ignores SIGINT/SIGTERM while it flushes)
    must not leave this process deaf: every later subprocess and fork worker would inherit SIG_IGN, and a
    Stop or a cancelled load would wait on a child that cannot be terminated."""
    sigs = [getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n)]
    before = {s: signal.getsignal(s) for s in sigs}
    yield
    for s, handler in before.items():
        if signal.getsignal(s) is not handler and handler is not None:
            signal.signal(s, handler)


@pytest.fixture(autouse=True)
def _gc_on_the_ui_thread():
    """As in the app (gui/gc_guard.py, installed by MainWindow): cyclic garbage collected only from the UI
    thread's event loop in every test that has a QApplication - an automatic collection inside a Qt
    disconnect deadlocked a GUI test. Stopped after each test: later tests get automatic collection back."""
    from PySide6 import QtWidgets

    from gui import gc_guard
    app = QtWidgets.QApplication.instance()
    if app is not None:
        gc_guard.install(app)
    yield
    app = QtWidgets.QApplication.instance()
    if app is not None:
        for guard in app.findChildren(gc_guard.UiThreadGC):
            guard.stop()


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    """Every test gets its own columnar cache dir and settings file: no test sees another's, and the suite
    never writes the user's own ~/.config/ptprof (gui/settings.py honours PTPROF_SETTINGS_DIR)."""
    monkeypatch.setenv("PTPROF_CACHE_DIR", str(tmp_path / "ptprof-cache"))
    monkeypatch.setenv("PTPROF_SETTINGS_DIR", str(tmp_path / "settings"))


def _blocking_entry_points():
    """(class, method name, default answer) for every Qt call that runs a modal event loop."""
    from PySide6 import QtGui, QtWidgets
    box, files, inputs = QtWidgets.QMessageBox, QtWidgets.QFileDialog, QtWidgets.QInputDialog
    yes, ok = box.StandardButton.Yes, box.StandardButton.Ok
    return [
        (box, "question", yes), (box, "warning", ok), (box, "critical", ok), (box, "information", ok),
        (box, "about", None), (box, "aboutQt", None),
        (QtWidgets.QDialog, "exec", QtWidgets.QDialog.DialogCode.Rejected.value),  # also QMessageBox/QFileDialog/RunDialog
        (QtWidgets.QMenu, "exec", None),
        (files, "getOpenFileName", ("", "")), (files, "getOpenFileNames", ([], "")),
        (files, "getSaveFileName", ("", "")), (files, "getExistingDirectory", ""),
        (files, "getOpenFileUrl", (None, "")), (files, "getExistingDirectoryUrl", None),
        (inputs, "getText", ("", False)), (inputs, "getMultiLineText", ("", False)), (inputs, "getItem", ("", False)),
        (inputs, "getInt", (0, False)), (inputs, "getDouble", (0.0, False)),
        (QtWidgets.QColorDialog, "getColor", QtGui.QColor()), (QtWidgets.QFontDialog, "getFont", (False, QtGui.QFont())),
    ]


@pytest.fixture(autouse=True)
def _no_unanswered_modal(monkeypatch):
    opened: list[str] = []

    def stand_in(cls, name, default):
        def answer(*args, **kwargs):
            text = [a for a in args if isinstance(a, str)][:2]
            opened.append(f"{cls.__name__}.{name}({', '.join(map(repr, text))})")
            return default
        return staticmethod(answer) if name != "exec" else (lambda self, *a, **k: answer(type(self).__name__, *a))

    for cls, name, default in _blocking_entry_points():
        monkeypatch.setattr(cls, name, stand_in(cls, name, default))
    yield opened
    if opened:
        pytest.fail("a modal dialog nothing answered was opened (offscreen it would block forever): "
                    + "; ".join(opened) + ". Set its answer in the test (see tests/conftest.py).", pytrace=False)
