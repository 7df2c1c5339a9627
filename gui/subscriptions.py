"""Adapters between the window's `core.session.Session` and the panels (the only Qt <-> session glue).

A panel's Qt signals become session calls (`session.select`, `session.set_analysis`, `session.run_started`,
…); the session's events ("tab", "analysis", "selection", "trace_loaded", "run") become panel calls. Panels
never read each other: the Issues panel does not know the trace views, the views do not know the Issues
panel, the Run dock does not know which tabs its cycles opened (the session's `Run` does), Try it and the
export menu know neither the Issues panel nor the Run dock (they read the session).
"""
from __future__ import annotations

from functools import partial

from PySide6 import QtCore

from core.session import Run, Selection, Session
from gui.run.dock import fit_run_dock, show_run_dock

# what the Issues dock says on a tab that is not a trace (by the tab's `tab_kind`)
ISSUES_NOTE = {
    "compare": "Compare tab: the findings fixed, new and changed between the two runs are in its Findings tab.",
    "snapshot": "Memory snapshot tab: the findings are for profiler traces (open the run's trace to diagnose it).",
}


def dock_px(win) -> int:
    """Issues dock width: ~28 % of the window, at least what its table needs to read (420 px)."""
    return max(420, win.width() * 28 // 100)


def fit_issues_dock(win) -> None:
    win.resizeDocks([win.issues_dock], [dock_px(win)], QtCore.Qt.Orientation.Horizontal)


def view_of(win, trace_set):
    """The trace view (tab) showing `trace_set`, or None (closed meanwhile)."""
    return next((view for view in win.views() if view.trace_set is trace_set), None)


def close_view(win, view) -> None:
    i = win.tabs.indexOf(view)
    if i >= 0:
        win.close_tab(i)


def connect_issues(win, session: Session, issues) -> None:
    """The Issues panel follows the current tab (each trace analysed once, then shown from the session);
    its finished analyses and chosen findings / steps go to the session."""
    issues.sig_analysis_finished.connect(
        lambda analysis: session.set_analysis(issues.trace_set(), analysis) if issues.trace_set() is not None
        else None)
    issues.sig_finding_selected.connect(
        lambda model_index, t0_ns, t1_ns, rows: session.select(Selection(model_index, t0_ns, t1_ns, rows)))
    issues.sig_range_requested.connect(lambda t0_ns, t1_ns: session.select(Selection(t0_ns=t0_ns, t1_ns=t1_ns)))

    def _on_session_tab(trace_set, kind) -> None:
        # the dock is for traces: a snapshot tab (and the start page) get the whole width
        if (trace_set is not None) != win.issues_dock.isVisible():
            win.issues_dock.setVisible(trace_set is not None)
            if trace_set is not None:
                fit_issues_dock(win)
        if trace_set is not None and trace_set is issues.trace_set():
            return
        analysis = session.analysis_for(trace_set)
        if analysis is not None:
            issues.cancel()
            issues.set_analysis(trace_set, analysis)
        elif trace_set is None and kind in ISSUES_NOTE:
            issues.set_trace_set(None, ISSUES_NOTE[kind])
        else:
            issues.set_trace_set(trace_set)

    session.subscribe("tab", _on_session_tab)


def connect_views(win, session: Session) -> None:
    """Trace views follow the session: the current one shows a selection; a many-rank run's views mark the
    straggler rank once its analysis names one."""
    def _on_session_selection(selection: Selection) -> None:
        view = win.current_view()
        if view is None:
            return
        if selection.has_range:
            view.show_range(selection.t0_ns, selection.t1_ns)
        if selection.has_rows:
            view.highlight_slices(int(selection.model_index), selection.rows)

    def _on_session_analysis(trace_set, analysis) -> None:
        late = next((f for f in getattr(analysis, "findings", ()) if f.rule == "straggler"), None)
        for view in win.views() if late is not None else ():
            if view.trace_set is trace_set:
                view.set_straggler(late.model_index)  # marked on a many-rank run's rank strip

    session.subscribe("selection", _on_session_selection)
    session.subscribe("analysis", _on_session_analysis)


def connect_hta(win, session: Session) -> None:
    """Each loaded trace's view gets its HTA tab, built the first time that tab is opened."""
    from gui.hta.lazy import build_when_opened

    def _on_session_trace_loaded(trace_set) -> None:
        view = view_of(win, trace_set)
        if view is not None:
            build_when_opened(view)

    session.subscribe("trace_loaded", _on_session_trace_loaded)


def export_shown_csv(exporter, name: str, panel) -> None:
    """`panel`'s table (kernels | ops | steps) as CSV: the rows its filter shows, all while none is set."""
    keys = panel.shown_keys()
    exporter.export_table_csv(name, None if keys is None else (panel.csv_key_column, keys))


def connect_csv_export(win, session: Session, exporter, issues) -> None:
    """"Export … as CSV…" in the context menus: the findings table, and each loaded trace's Kernels, Ops
    and Steps tables (what their filters show)."""
    issues.csv_export = partial(exporter.export_table_csv, "findings")

    def _on_session_trace_loaded(trace_set) -> None:
        view = view_of(win, trace_set)
        for panel, name in ((view.kernels, "kernels"), (view.ops, "ops"), (view.steps, "steps")) if view else ():
            panel.table.csv_export = partial(export_shown_csv, exporter, name, panel)

    session.subscribe("trace_loaded", _on_session_trace_loaded)


def _on_panel_run_finished(session: Session, run_panel, bundle: str, code: int) -> None:
    session.run_finished(bundle, code, run_panel.controller.session)  # the RunSession: how it ended (Try it)


def connect_run(win, session: Session, run_panel, run_dock) -> None:
    """The Run dock's run goes to the session (started, each cycle's trace saved, finished, its bundle
    ready); the session's `Run` opens the tabs: the dock shows when a run starts, each cycle's trace opens
    as soon as it is saved while the script goes on, and the finished bundle (every cycle, NVML, the run's
    record) replaces those cycle tabs, with the dock folded to its status line (at 1366x768 the open dock
    left the new trace's timeline ~130 px; its ▸ Live toggle unfolds it)."""
    run_panel.sig_run_connecting.connect(session.run_connecting)  # a remote start / reattach: busy already
    run_panel.sig_run_not_started.connect(session.run_not_started)
    run_panel.sig_run_started.connect(session.run_started)
    run_panel.sig_trace_saved.connect(session.run_cycle_saved)
    run_panel.sig_run_finished.connect(partial(_on_panel_run_finished, session, run_panel))
    run_panel.sig_bundle_ready.connect(session.run_bundle_ready)
    run_panel.sig_folded_changed.connect(partial(fit_run_dock, win, run_panel, run_dock))

    def _on_session_run(run: Run, change: str) -> None:
        if change == "started":
            show_run_dock(win, run_dock)
        elif change == "cycle":
            win.open_path(run.cycle_paths[-1])
        elif change == "bundle":
            for view in win.views():
                if run.opened_cycle(view.trace_set.path):
                    close_view(win, view)
            win.open_path(run.bundle)
            QtCore.QTimer.singleShot(0, partial(run_panel.set_folded, True))  # after the new tab's first layout

    def _on_session_trace_loaded(trace_set) -> None:
        # a cycle tab whose load finished after its run's bundle opened: the bundle holds it already
        if session.run is not None and session.run.replaced_by_bundle(trace_set.path):
            view = view_of(win, trace_set)
            if view is not None:
                close_view(win, view)

    session.subscribe("run", _on_session_run)
    session.subscribe("trace_loaded", _on_session_trace_loaded)


def connect_export_menu(session: Session, exporter) -> None:
    """File > Export Report… and Export as follow the current tab (a trace's), a trace that loads and the
    run (its live GPU plot can be saved while it runs, tabs or not). A trace's findings are read when an
    export starts, so "analysis" changes no entry."""
    def _on_session_changed(*_) -> None:
        exporter.update_enabled()

    for event in ("tab", "trace_loaded", "run"):
        session.subscribe(event, _on_session_changed)


def connect_try(session: Session, try_controller, issues) -> None:
    """Try it (gui/tryfix) reads the session for the current trace, its findings and whether a run is in
    progress; here it follows the run (each try run's end) and the Issues panel: its Try column / Details
    button ask, its status line shows the try's messages, its Details re-read the measured saving."""
    session.subscribe("run", try_controller.on_run_changed)
    issues.sig_try_requested.connect(try_controller.try_fix)
    try_controller.sig_message.connect(issues.show_try_message)
    try_controller.sig_measured.connect(lambda _entry: issues.refresh_tried())
