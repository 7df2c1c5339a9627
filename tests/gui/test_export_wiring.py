"""The export actions inside the real main window (runs once gui/main_window.py is on the branch)."""
from __future__ import annotations

import pytest
from helpers import SAMPLE


def test_file_menu_exports_the_open_trace(qtbot, tmp_path):
    main_window = pytest.importorskip("gui.main_window")
    from gui.report.wiring import context_from_window

    win = main_window.MainWindow()
    qtbot.addWidget(win)
    exporter = win.integrations.exporter  # gui.report.wiring.install, refreshed on the session's events
    assert not exporter.act_timeline_png.isEnabled()  # nothing open yet
    with qtbot.waitSignal(win.sig_trace_loaded, timeout=60_000):
        win.open_path(str(SAMPLE))
    qtbot.waitUntil(lambda: exporter.act_timeline_png.isEnabled(), timeout=10_000)
    file_actions = [a.text().replace("&", "") for a in win.menu("File").actions()]
    assert "Export Report…" in file_actions and "Export as" in file_actions
    ctx = context_from_window(win)
    assert ctx is not None and ctx.trace_set is win.current_view().trace_set
    assert ctx.view_range_ns is not None and ctx.view_range_ns[1] > ctx.view_range_ns[0]
    with qtbot.waitSignal(exporter.sig_export_finished, timeout=120_000):
        exporter.run_report(ctx, tmp_path)
    for name in ("timeline.png", "memory.png", "breakdown.png", "kernels.csv", "steps.csv", "report.html"):
        assert (tmp_path / name).stat().st_size > 0
