"""GUI test fixtures: settings in a temp dir, one theme, real traces loaded once per session."""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _isolated_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("PTPROF_SETTINGS_DIR", str(tmp_path / "settings"))
    yield
    from gui import actions
    actions.flush_recent()  # the recent list is written off the UI thread: done before the next test


@pytest.fixture
def main_window(qtbot):
    from gui.main_window import MainWindow
    win = MainWindow()
    win.resize(1400, 900)
    qtbot.addWidget(win)
    win.show()
    yield win
    # a test that failed with a run still going would reach closeEvent's "Stop it and quit?" box at
    # teardown, which nothing answers: end the run here first (SIGKILL, no dialog)
    run = getattr(getattr(win, "integrations", None), "run_panel", None)
    if run is not None and run.is_running:
        run.controller.session.proc.kill()
        run.controller.session.poll()


@pytest.fixture
def open_and_wait(qtbot):
    """open_and_wait(win, path) -> TraceSet, after the window opened it in a tab."""
    def run(win, path, timeout_ms=120_000):
        with qtbot.waitSignal(win.sig_trace_loaded, timeout=timeout_ms) as blocker:
            win.open_path(str(path))
        return blocker.args[0]
    return run
