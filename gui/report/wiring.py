"""Hook the export actions into the main window (gui/main_window.py's documented extension points).

    from gui.report.wiring import install
    exporter = install(main_window, findings_for=lambda trace_set: cached_analysis_or_None)

File menu: the window's placeholder `action_export` ("Export…", Ctrl+E) opens "Export report…", and an
"Export as" submenu next to it holds timeline / memory / GPU PNG and tables CSV. Everything is enabled
while a trace tab is current; the GPU plot PNG (and so the submenu) also while a run is in progress (its
live plot), tabs or not. gui/subscriptions.py `connect_export_menu` refreshes them on the window session's
"tab", "trace_loaded" and "run" events. Duck-typed on the window: current_view() -> view with `.trace_set`
and `.timeline.view_range()`; menu(title); action_export; session (core/session.py: `run_in_progress`).
"""
from __future__ import annotations

from collections.abc import Callable

from gui.report.actions import ExportContext, ReportActions


def context_from_window(win, findings_for: Callable | None = None) -> ExportContext | None:
    view = win.current_view() if hasattr(win, "current_view") else None
    if view is None or getattr(view, "trace_set", None) is None:
        return None
    rng = None
    timeline = getattr(view, "timeline", None)
    if timeline is not None and hasattr(timeline, "view_range"):
        t0, t1 = timeline.view_range()
        if t1 > t0:
            rng = (int(t0), int(t1))
    findings = findings_for(view.trace_set) if findings_for is not None else None
    return ExportContext(view.trace_set, findings=findings, view_range_ns=rng)


def install(win, findings_for: Callable | None = None, live_plot=None) -> ReportActions:
    """Create the exporter for `win` and put its actions in the File menu. With `live_plot` (the Run dock's
    live GPU panel) the GPU plot export is offered while the window's session has a run in progress. Call
    `exporter.update_enabled()` when the current tab changes, a trace loads or a run starts / ends
    (gui/subscriptions.py `connect_export_menu`)."""
    session = getattr(win, "session", None)

    def live():
        return live_plot if live_plot is not None and session is not None and session.run_in_progress else None
    exporter = ReportActions(win, lambda: context_from_window(win, findings_for), live)
    file_menu = win.menu("File") if hasattr(win, "menu") else win.menuBar().addMenu("&File")
    placeholder = getattr(win, "action_export", None)
    submenu = exporter.menu("Export as")
    for act in (exporter.act_report,):
        submenu.removeAction(act)
    if placeholder is not None:
        placeholder.setText("&Export Report…")
        placeholder.triggered.connect(exporter.export_report)
        file_menu.insertMenu(placeholder, submenu)
        exporter.act_report.setShortcut("")  # the placeholder keeps its Ctrl+E
        exporter.follow_report(placeholder)
    else:
        file_menu.addMenu(submenu)
        file_menu.addAction(exporter.act_report)
    exporter.update_enabled()
    return exporter
