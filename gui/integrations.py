"""Wire the feature panels into the MainWindow: Issues dock, HTA tab per trace, Run dock, export actions.

Each panel lives in its own package and knows nothing of the others; this module creates them and hands
each to its `connect_<panel>` in gui/subscriptions.py, which links it to the window's session
(core/session.py) and the window's documented extension points (see gui/main_window.py).
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass
from functools import partial

from PySide6 import QtCore

from gui.issues import IssuesPanel
from gui.report.wiring import install as install_export
from gui.run.dock import show_run_dock
from gui.run.panel import RunPanel
from gui.subscriptions import (
    connect_csv_export,
    connect_export_menu,
    connect_hta,
    connect_issues,
    connect_run,
    connect_try,
    connect_views,
    fit_issues_dock,
)


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


def install_all(win) -> Integrations:
    """Create the feature panels and connect each to the window's session (gui/subscriptions.py): no
    closure here reads another panel's state."""
    # --- issues: one dock that follows the current tab; each trace is analysed once -------------
    issues = IssuesPanel(win)
    win.set_issues_widget(issues)
    win.issues_dock.hide()  # shown with the first trace tab: on the start page it would be a third of nothing
    QtCore.QTimer.singleShot(0, partial(fit_issues_dock, win))  # after the window is laid out
    connect_issues(win, win.session, issues)  # follows the current tab; its findings go to the session
    connect_views(win, win.session)  # a chosen finding / step zooms the current view; stragglers marked
    connect_hta(win, win.session)  # an HTA tab in each loaded trace's bottom panel, built when first opened

    # --- run: dock with status, live GPU plots and console; cycles and the bundle open as tabs ---
    run_panel = RunPanel(win)
    run_dock = win.add_dock(run_panel, "Run", QtCore.Qt.DockWidgetArea.BottomDockWidgetArea)
    run_dock.hide()
    win.action_run_script.triggered.connect(lambda _checked=False: run_panel.open_dialog())
    win.action_run_script.setEnabled(True)
    connect_run(win, win.session, run_panel, run_dock)
    from gui.remote.open_remote import install_open_remote
    open_remote = install_open_remote(win)  # File > Open Remote… (SSH host: browse, fetch, open)
    from gui.remote.reattach import install_reattach
    install_reattach(win, run_panel.attach, partial(show_run_dock, win, run_dock))  # remote runs left going

    # --- export: File > Export report… and Export as > PNG / CSV; the tables' "Export … as CSV…" --
    exporter = install_export(win, findings_for=win.session.analysis_for, live_plot=run_panel.live)
    connect_export_menu(win.session, exporter)  # enabled with a trace tab, the GPU plot while a run goes
    connect_csv_export(win, win.session, exporter, issues)
    from gui.compare.wiring import CompareActions
    compare = CompareActions(win)
    from gui.tryfix import install as install_try  # Try it: a finding's fix at run time, then a Compare
    try_controller = install_try(win, win.session, partial(run_panel.start, open_when_done=False), compare)
    connect_try(win.session, try_controller, issues)
    return Integrations(issues, run_panel, run_dock, exporter, win.session.analyses, compare, open_remote,
                        try_controller)
