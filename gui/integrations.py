"""Wire the feature panels into the MainWindow: Issues dock, HTA tab per trace, Run dock, export actions.

Each panel lives in its own package and knows nothing of the others; this module only connects
signals to the window's documented extension points (see gui/main_window.py).
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass
from pathlib import Path

from PySide6 import QtCore, QtWidgets

from gui.hta import HtaTab
from gui.issues import IssuesPanel
from gui.report.wiring import install as install_export
from gui.run.panel import RunPanel
from gui.subscriptions import connect_issues, connect_views, dock_px


@dataclass
class Integrations:
    issues: IssuesPanel
    run_panel: RunPanel
    run_dock: object
    exporter: object
    analyses: weakref.WeakKeyDictionary  # win.session.analyses: TraceSet -> Analysis (computed once per trace)
    compare: object = None  # gui.compare.wiring.CompareActions (File > Compare with…)
    open_remote: object = None  # gui.remote.open_remote.OpenRemote (File > Open Remote…)
    try_controller: object = None  # gui.tryfix controller (a finding's Try it)


def _run_dock_px(win) -> int:
    """Run dock height the first time it opens: ~40 % of the window, room for the live plots' four rows."""
    return max(360, win.height() * 40 // 100)


def show_run_dock(win, dock: QtWidgets.QDockWidget) -> None:
    """Show the Run dock; the first time at _run_dock_px (its size hint left the live plots ~30 px tall),
    later at whatever height the user gave it."""
    first = not dock.property("ptprof_sized")
    dock.show()
    dock.raise_()
    if first:
        dock.setProperty("ptprof_sized", True)
        win.resizeDocks([dock], [_run_dock_px(win)], QtCore.Qt.Orientation.Vertical)


def fit_run_dock(win, panel, dock, folded: bool) -> None:
    """Folded: the dock shrinks to its status line; unfolded: back to the height it had."""
    if not dock.isVisible():
        return
    if folded:
        dock.setProperty("ptprof_unfolded_px", dock.height())
        px = panel.minimumSizeHint().height() + 28
        QtCore.QTimer.singleShot(0, lambda: win.resizeDocks([dock], [px], QtCore.Qt.Orientation.Vertical))
    else:
        px = dock.property("ptprof_unfolded_px") or _run_dock_px(win)
        win.resizeDocks([dock], [int(px)], QtCore.Qt.Orientation.Vertical)


def _open_run_trace(win, panel, dock, bundle: str, cycle_paths: list[str] = ()) -> None:
    """A run's trace opens with the Run dock folded to its status line (at 1366x768 the open dock left the
    new trace's timeline ~130 px); the dock's ▸ Live toggle unfolds it. The bundle (every cycle, NVML, the
    run's record) replaces the cycle tabs opened while the script ran."""
    for i in reversed(range(win.tabs.count())):
        view = win.tabs.widget(i)
        ts = getattr(view, "trace_set", None)
        if ts is not None and str(Path(ts.path).resolve()) in cycle_paths:
            win.close_tab(i)
    panel._bundle_opened = True
    win.open_path(bundle)
    QtCore.QTimer.singleShot(0, lambda: panel.set_folded(True))  # after the new tab's first layout


def install_all(win) -> Integrations:
    # --- issues: one dock that follows the current tab; each trace is analysed once -------------
    issues = IssuesPanel(win)
    win.set_issues_widget(issues)
    win.issues_dock.hide()  # shown with the first trace tab: on the start page it would be a third of nothing
    QtCore.QTimer.singleShot(0, lambda: win.resizeDocks(  # after the window is laid out
        [win.issues_dock], [dock_px(win)], QtCore.Qt.Orientation.Horizontal))

    connect_issues(win, win.session, issues)  # follows the current tab; its findings go to the session
    connect_views(win, win.session)  # a chosen finding / step zooms the current view; stragglers marked

    # --- HTA: a tab in each trace's bottom panel, run when first shown ---------------------------
    def _on_trace_loaded(trace_set) -> None:
        view = win.current_view()
        if view is None or view.trace_set is not trace_set:
            return

        def make_hta(i: int) -> None:  # built when its tab is first opened: its plot cost ~0.1 s of the open
            if view.tabs.widget(i) is not view.hta_placeholder:
                return
            view.tabs.currentChanged.disconnect(make_hta)
            hta = HtaTab(view)
            view.tabs.setCurrentIndex(view.add_tab(hta, "HTA", replace_hta=True))
            hta.set_trace_set(trace_set)

        view.tabs.currentChanged.connect(make_hta)

    win.sig_trace_loaded.connect(_on_trace_loaded)

    # --- run: dock with status, live GPU plots and console; the bundle opens when the run ends ---
    run_panel = RunPanel(win)
    run_dock = win.add_dock(run_panel, "Run", QtCore.Qt.DockWidgetArea.BottomDockWidgetArea)
    run_dock.hide()
    win.action_run_script.triggered.connect(lambda _checked=False: run_panel.open_dialog())
    win.action_run_script.setEnabled(True)
    run_panel.sig_run_started.connect(lambda _bundle: show_run_dock(win, run_dock))
    run_panel.sig_bundle_ready.connect(lambda bundle: _open_run_trace(win, run_panel, run_dock, bundle, cycle_paths))
    cycle_paths: list[str] = []  # the running script's cycle traces opened so far

    def _open_cycle(path: str) -> None:  # each cycle's trace, as soon as saved, while the script goes on
        cycle_paths.append(str(Path(path).resolve()))
        win.open_path(path)

    def _late_cycle(ts) -> None:  # a cycle tab that finished loading after its run's bundle opened
        if not run_panel.is_running and cycle_paths and str(Path(ts.path).resolve()) in cycle_paths \
                and getattr(run_panel, "_bundle_opened", False):
            for i in range(win.tabs.count()):
                if getattr(win.tabs.widget(i), "trace_set", None) is ts:
                    win.close_tab(i)
                    break

    run_panel.sig_trace_saved.connect(_open_cycle)
    run_panel.sig_run_started.connect(lambda _b: (cycle_paths.clear(), setattr(run_panel, "_bundle_opened", False)))
    win.sig_trace_loaded.connect(_late_cycle)
    run_panel.sig_folded_changed.connect(lambda folded: fit_run_dock(win, run_panel, run_dock, folded))
    from gui.remote.open_remote import install_open_remote
    open_remote = install_open_remote(win)  # File > Open Remote… (SSH host: browse, fetch, open)
    from gui.remote.reattach import install_reattach
    install_reattach(win, run_panel, lambda: show_run_dock(win, run_dock))  # remote runs left going

    # --- export: File > Export report… and Export as > PNG / CSV --------------------------------
    exporter = install_export(win, findings_for=win.session.analysis_for, run_panel=run_panel)

    def _on_trace_loaded_attach_csv(trace_set) -> None:  # each table's context menu: "Export table as CSV…"
        view = win.current_view()
        if view is None or view.trace_set is not trace_set:
            return
        for panel, name in ((view.kernels, "kernels"), (view.ops, "ops"), (view.steps, "steps")):
            panel.table.csv_export = lambda n=name, p=panel: exporter.export_table_csv(
                n, None if p.shown_keys() is None else (p.csv_key_column, p.shown_keys()))

    win.sig_trace_loaded.connect(_on_trace_loaded_attach_csv)
    issues.csv_export = lambda: exporter.export_table_csv("findings")
    from gui.compare.wiring import CompareActions
    compare = CompareActions(win)
    from gui.tryfix import install as install_try  # Try it: a finding's fix at run time, then a Compare
    try_controller = install_try(win, issues, run_panel, compare)
    return Integrations(issues, run_panel, run_dock, exporter, win.session.analyses, compare, open_remote,
                        try_controller)
