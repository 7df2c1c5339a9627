"""Issue 35 item 7: what read the Issues panel and the Run dock directly now reads the window's session
(core/session.py, gui/subscriptions.py): Try it (the current tab's trace, its findings, whether the Run dock
is busy, how a try's run ended), the File menu's export entries (the current tab, the run) and File >
Reattach Remote Run… (handed only the dock's attach). Each test drives the window: the panels' signals,
buttons and menus, never a private hook."""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

from helpers import REPO, shared_trace
from PySide6 import QtWidgets


def _bundle(tmp_path) -> Path:
    """tests/data/bundles/c1 (a run with a tf32 finding) whose recorded command runs here."""
    before = tmp_path / "before"
    shutil.copytree(REPO / "tests" / "data" / "bundles" / "c1", before)
    script = tmp_path / "comp.py"
    script.write_text("print('never run by these tests')\n")
    run = json.loads((before / "run.json").read_text())
    run["config"].update(script=str(script), python=sys.executable, cwd=str(tmp_path))
    (before / "run.json").write_text(json.dumps(run))
    return before


def _row_with_switch(panel, spec: str) -> int:
    from core.tryfix.fixes import switch_for_rule
    for row in range(panel.proxy.rowCount()):
        finding = panel.model.finding(panel.proxy.mapToSource(panel.proxy.index(row, 0)).row())
        if switch_for_rule(finding.rule) == spec:
            return row
    raise AssertionError(f"no finding that {spec} fixes")


def _menu_state(win):
    """(Export as submenu, File > Export Report…, timeline PNG, GPU plot PNG) enabled."""
    exporter = win.integrations.exporter
    (submenu,) = [a.menu() for a in win.menu("File").actions() if a.text().replace("&", "") == "Export as"]
    return (submenu.isEnabled(), win.action_export.isEnabled(), exporter.act_timeline_png.isEnabled(),
            exporter.act_gpu_png.isEnabled())


def test_try_it_reads_the_current_trace_and_the_run_from_the_session(qtbot, main_window, open_and_wait,
                                                                     tmp_path, monkeypatch):
    win = main_window
    issues, run_panel, controller = win.integrations.issues, win.integrations.run_panel, win.try_controller
    assert not controller.try_fix("tf32")  # no trace tab: no findings to try
    assert "needs the run's findings" in win.statusBar().currentMessage()

    ts = open_and_wait(win, _bundle(tmp_path))
    qtbot.waitUntil(lambda: win.session.analysis_for(ts) is not None, timeout=120_000)
    qtbot.waitUntil(lambda: issues.analysis() is not None, timeout=10_000)
    issues.select_row(_row_with_switch(issues, "tf32"))
    assert issues.try_button.isVisibleTo(issues) and issues.try_button.text() == "Try it: tf32"

    # a run going in the Run dock: Try it refuses, from the Details button too, and says why in both places
    run_panel.sig_run_started.emit(str(tmp_path / "other"))
    assert win.session.run_in_progress
    issues.try_button.click()
    assert not controller.busy
    assert issues.status.text().startswith("A run is in progress") and \
        win.statusBar().currentMessage().startswith("A run is in progress")
    run_panel.sig_run_finished.emit(str(tmp_path / "other"), 0)
    assert not win.session.run_in_progress

    # a remote start (or reattach) still connecting is a run in progress too; a failed one frees the dock
    run_panel.controller.sig_state_changed.emit("connecting")
    assert win.session.run_in_progress and win.session.run.connecting
    assert not controller.try_fix("tf32") and issues.status.text().startswith("A run is in progress")
    run_panel.controller.sig_state_changed.emit("idle")
    assert not win.session.run_in_progress

    # free: the baseline run starts through the Run dock; its end (the session's "finished", with the
    # dock's RunSession) decides what follows: here the script failed, so the try ends and says so
    started = []

    def start(cfg, doctor=None, host=None, remote_dir=""):
        started.append(cfg)
        run_panel.controller.session = SimpleNamespace(
            exit_code=2, cfg=cfg, stopping_requested=False, stopped_after_window=False, finished=True,
            state=SimpleNamespace(exception="RuntimeError: boom"), bundle=SimpleNamespace(root=Path(cfg.out_dir)))
        return True
    monkeypatch.setattr(run_panel.controller, "start", start)
    issues.try_button.click()
    (cfg,) = started
    assert controller.busy and cfg.out_dir and Path(cfg.script).name == "comp.py"
    assert "running comp.py the baseline (no switch) (step 1 of 2" in issues.status.text()
    run_panel.sig_run_started.emit(cfg.out_dir)
    assert not controller.try_fix("tf32")  # one try at a time
    run_panel.sig_run_finished.emit(cfg.out_dir, 2)
    assert win.session.run.runner is run_panel.controller.session and not controller.busy
    assert issues.status.text() == "Try it: tf32: the baseline run: the script failed (exit 2): RuntimeError: boom"
    assert len(started) == 1  # the run with tf32 on never started

    # the current tab decides: a plain trace file (not a run bundle) cannot be run again
    other = open_and_wait(win, shared_trace("gpu_clean.pt.trace.json.gz"))
    qtbot.waitUntil(lambda: win.session.analysis_for(other) is not None, timeout=120_000)
    assert not controller.try_fix("tf32")
    assert "not a ptprof run bundle" in win.statusBar().currentMessage() and len(started) == 1


def test_export_menu_follows_the_tab_and_the_run(qtbot, main_window, open_and_wait, tmp_path):
    win = main_window
    run_panel = win.integrations.run_panel
    assert _menu_state(win) == (False, False, False, False)  # start page
    # a run going with no trace tab: its live GPU plot can be saved (the submenu used to stay closed)
    run_panel.sig_run_started.emit(str(tmp_path / "run"))
    assert _menu_state(win) == (True, False, False, True)
    run_panel.sig_run_finished.emit(str(tmp_path / "run"), 0)
    assert _menu_state(win) == (False, False, False, False)

    trace = open_and_wait(win, shared_trace("gpu_clean.pt.trace.json.gz"))
    assert _menu_state(win) == (True, True, True, True)
    with qtbot.waitSignal(win.sig_snapshot_loaded, timeout=120_000):
        win.open_path(str(shared_trace("gpu_memory.snapshot.pickle")))
    assert win.session.tab_kind == "snapshot" and _menu_state(win) == (False, False, False, False)
    win.tabs.setCurrentIndex(0)  # back to the trace
    assert win.session.trace_set is trace and _menu_state(win) == (True, True, True, True)
    run_panel.sig_run_started.emit(str(tmp_path / "run2"))
    run_panel.sig_run_finished.emit(str(tmp_path / "run2"), 1)
    assert _menu_state(win) == (True, True, True, True)  # the trace tab still exports after the run
    while win.tabs.count():
        win.close_tab(0)
    assert win.session.trace_set is None and _menu_state(win) == (False, False, False, False)


def test_reattach_follows_the_chosen_run_through_the_run_dock(qtbot, main_window, tmp_path, monkeypatch):
    from gui.remote import reattach
    win = main_window
    run_panel, dock = win.integrations.run_panel, win.integrations.run_dock
    folder = tmp_path / "slow-1"
    folder.mkdir()
    monkeypatch.setattr(reattach, "unfinished_mirrors", lambda root: [(folder, {"host": "gpu-box", "id": "r-7"})])
    asked = []

    def get_item(parent, title, label, items, current=0, editable=True):
        asked.append(list(items))
        return items[0], True
    monkeypatch.setattr(QtWidgets.QInputDialog, "getItem", staticmethod(get_item))
    attached = []
    monkeypatch.setattr(run_panel.controller, "attach",
                        lambda host, run_id, out_dir: attached.append((host.label, run_id, out_dir)) or True)
    (action,) = [a for a in win.menu("File").actions() if a.text().replace("&", "") == "Reattach Remote Run…"]
    assert not dock.isVisible()
    action.trigger()
    assert asked == [[f"gpu-box · r-7 · {folder}"]]
    assert attached == [("gpu-box", "r-7", str(folder))]
    assert dock.isVisible() and run_panel.status.text() == "Reattaching to r-7 on gpu-box …"
