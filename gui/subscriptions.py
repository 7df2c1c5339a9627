"""Adapters between the window's `core.session.Session` and the panels (the only Qt <-> session glue).

A panel's Qt signals become session calls (`session.select`, `session.set_analysis`); the session's events
("tab", "analysis", "selection") become panel calls. Panels never read each other: the Issues panel
does not know the trace views, the views do not know the Issues panel.
"""
from __future__ import annotations

from PySide6 import QtCore

from core.session import Selection, Session

# what the Issues dock says on a tab that is not a trace (by the tab's `tab_kind`)
ISSUES_NOTE = {
    "compare": "Compare tab: the findings fixed, new and changed between the two runs are in its Findings tab.",
    "snapshot": "Memory snapshot tab: the findings are for profiler traces (open the run's trace to diagnose it).",
}


def dock_px(win) -> int:
    """Issues dock width: ~28 % of the window, at least what its table needs to read (420 px)."""
    return max(420, win.width() * 28 // 100)


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
                win.resizeDocks([win.issues_dock], [dock_px(win)], QtCore.Qt.Orientation.Horizontal)
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
