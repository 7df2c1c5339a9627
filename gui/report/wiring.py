"""Hook the export actions into the main window (gui/main_window.py's documented extension points).

    from gui.report.wiring import install
    exporter = install(main_window, findings_for=lambda trace_set: cached_analysis_or_None)

File menu: the window's placeholder `action_export` ("Export…", Ctrl+E) opens "Export report…", and an
"Export as" submenu next to it holds timeline / memory / GPU PNG and tables CSV. Everything is enabled
while a trace tab is current. Duck-typed on the window: current_view() -> view with `.trace_set` and
`.timeline.view_range()`; menu(title); action_export; sig_trace_loaded; tabs.currentChanged.
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


def install(win, findings_for: Callable | None = None, run_panel=None) -> ReportActions:
    """Create the exporter for `win`, put its actions in the File menu, keep them enabled with the tabs
    (and, with `run_panel`, the GPU plot export while a run is in progress)."""
    live = (lambda: run_panel.live if run_panel.is_running else None) if run_panel is not None else None
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
        extra = [placeholder]
    else:
        file_menu.addMenu(submenu)
        file_menu.addAction(exporter.act_report)
        extra = []

    def refresh(*_):
        exporter.update_enabled()
        ok = exporter.act_report.isEnabled()
        submenu.setEnabled(ok)
        for a in extra:
            a.setEnabled(ok)

    if hasattr(win, "sig_trace_loaded"):
        win.sig_trace_loaded.connect(refresh)
    tabs = getattr(win, "tabs", None)
    if tabs is not None:
        tabs.currentChanged.connect(refresh)
    if run_panel is not None:
        run_panel.sig_run_started.connect(refresh)
        run_panel.sig_run_finished.connect(refresh)
    refresh()
    return exporter
