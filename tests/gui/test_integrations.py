"""The main window with every feature panel wired: issues follow the tab, a finding zooms the
timeline and highlights its evidence, HTA sits in each trace's tabs, Run and Export are enabled."""
from __future__ import annotations

from helpers import shared_trace


def test_issues_follow_tabs_and_drive_the_timeline(qtbot, main_window, open_and_wait):
    win = main_window
    integ = win.integrations
    assert win.action_run_script.isEnabled()
    assert win.issues_dock.widget() is integ.issues

    ts = open_and_wait(win, shared_trace("gpu_issues.pt.trace.json.gz"))
    qtbot.waitUntil(lambda: ts in integ.analyses, timeout=60_000)
    analysis = integ.analyses[ts]
    rules = {f.rule for f in analysis.findings}
    assert {"host_sync", "pageable_memcpy", "launch_bound"} <= rules

    view = win.current_view()
    titles = [view.tabs.tabText(i) for i in range(view.tabs.count())]
    assert "HTA" in titles

    # selecting the launch_bound finding zooms to its first time range and highlights its slices
    finding = next(f for f in analysis.findings if f.rule == "launch_bound")
    t0, t1 = finding.time_ranges[0]
    panel = integ.issues
    rows = [r for r in range(panel.proxy.rowCount())
            if panel.model.finding(panel.proxy.mapToSource(panel.proxy.index(r, 0)).row()) is finding]
    assert rows
    with qtbot.waitSignal(panel.sig_finding_selected, timeout=5000):
        panel.select_row(rows[0])
    qtbot.wait(50)
    v0, v1 = view.timeline.view_range()
    assert v0 <= t0 + (t1 - t0) * 0.2 and v1 >= t1 - (t1 - t0) * 0.2
    assert (v1 - v0) < (t1 - t0) * 3

    # a second trace gets its own analysis; switching back reuses the first without re-running
    ts2 = open_and_wait(win, shared_trace("gpu_clean.pt.trace.json.gz"))
    qtbot.waitUntil(lambda: ts2 in integ.analyses, timeout=60_000)
    win.tabs.setCurrentIndex(0)
    assert integ.issues.analysis() is integ.analyses[ts]
    assert not integ.issues.is_running()
