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
    # ... through the window's session (core/session.py), which also knows the current tab
    assert win.session.selection.model_index == finding.model_index and win.session.selection.has_rows
    assert (win.session.trace_set, win.session.tab_kind) == (ts, "trace")
    # a step clicked in the breakdown: a range-only selection, the view zooms to it
    s0, s1 = t0 - 1_000_000, t1 + 1_000_000
    panel.sig_range_requested.emit(s0, s1)
    qtbot.wait(50)
    assert win.session.selection.rows is None
    v0, v1 = view.timeline.view_range()
    assert abs(v0 - s0) < (s1 - s0) * 0.2 and abs(v1 - s1) < (s1 - s0) * 0.2

    # a second trace gets its own analysis; switching back reuses the first without re-running
    ts2 = open_and_wait(win, shared_trace("gpu_clean.pt.trace.json.gz"))
    qtbot.waitUntil(lambda: ts2 in integ.analyses, timeout=60_000)
    win.tabs.setCurrentIndex(0)
    assert integ.issues.analysis() is integ.analyses[ts]
    assert not integ.issues.is_running()


def test_run_script_opens_its_bundle_in_a_tab_with_findings(qtbot, main_window, tmp_path):
    """File > Run Script… path end to end: the run dock runs the example on the CPU, the finished bundle
    opens as a trace tab and the issues dock analyses it (the deliberate .item() per step)."""
    import pytest
    pytest.importorskip("torch")
    from helpers import REPO

    from core.runner.config import RunConfig, Schedule, validate

    win = main_window
    integ = win.integrations
    cfg = validate(RunConfig(script=str(REPO / "resources" / "examples" / "train_small.py"), args=("--steps", "8"),
                             schedule=Schedule(1, 1, 3, 1), out_dir=str(tmp_path / "bundle"), nvml_hz=10))
    loaded = []
    win.sig_trace_loaded.connect(loaded.append)
    assert integ.run_panel.start(cfg)
    assert integ.run_dock.isVisible()
    qtbot.waitUntil(lambda: any(t.bundle is not None for t in loaded), timeout=120_000)
    # the cycle's trace opened while the script went on (issue 31), then the bundle replaced its tab
    if loaded[0].bundle is None:  # unless the script ended within the poll that saw its cycle
        assert "cycle1" in str(loaded[0].path)
    qtbot.wait(200)
    ts = next(t for t in loaded if t.bundle is not None)
    assert [v.trace_set for v in win.views()] == [ts]
    assert ts.bundle is not None and ts.bundle.get("exit_code") == 0
    assert len(ts.primary.steps) == 3
    assert win.current_view().trace_set is ts
    qtbot.waitUntil(lambda: ts in integ.analyses, timeout=60_000)
    hints = [f for f in integ.analyses[ts].findings if f.rule == "host_sync"]
    assert hints and "item" in hints[0].title


def test_table_context_menus_export_csv(qtbot, main_window, open_and_wait, tmp_path, monkeypatch):
    """Kernels / Ops / Steps / findings tables offer "Export … as CSV…" in their context menus; the
    findings CSV is complete even when the Issues panel has not finished its analysis."""
    import csv

    from helpers import shared_trace
    win = main_window
    integ = win.integrations
    ts = open_and_wait(win, shared_trace("gpu_issues.pt.trace.json.gz"))
    view = win.current_view()
    exporter = integ.exporter
    for panel, name in ((view.kernels, "kernels"), (view.ops, "ops"), (view.steps, "steps")):
        actions = [a.text() for a in panel.table.context_menu().actions()]
        assert actions == ["Copy", "Export table as CSV…"]
        out = tmp_path / f"{name}.csv"
        monkeypatch.setattr(exporter, "_ask_file", lambda *a, p=out: p)
        with qtbot.waitSignal(exporter.sig_export_finished, timeout=60_000):
            panel.table.context_menu().actions()[1].trigger()
        rows = list(csv.reader(out.open(encoding="utf-8")))
        assert len(rows) > 1 and rows[0][0]
    # findings: no cached analysis (as if the Issues panel were still running) -> the rules run in the export
    integ.analyses.pop(ts, None)
    out = tmp_path / "findings.csv"
    monkeypatch.setattr(exporter, "_ask_file", lambda *a: out)
    with qtbot.waitSignal(exporter.sig_export_finished, timeout=60_000):
        integ.issues.csv_export()
    rows = list(csv.reader(out.open(encoding="utf-8")))
    assert len(rows) > 3  # header + the planted problems
    assert "Export findings as CSV…" in [a.text() for a in integ.issues.context_menu().actions()]


def test_filtered_tables_count_and_export_the_shown_rows(qtbot, main_window, open_and_wait, tmp_path,
                                                        monkeypatch):
    """The filter updates the row count ('7 of 61 rows') and 'Export table as CSV…' writes the rows the
    filter shows, in the CSV's own columns (they wrote every row, under a '61 rows' label)."""
    import csv

    from helpers import shared_trace
    win = main_window
    exporter = win.integrations.exporter
    open_and_wait(win, shared_trace("gpu_issues.pt.trace.json.gz"))
    view = win.current_view()
    for panel, name, text, column in ((view.kernels, "kernels", "gemm", "name"), (view.ops, "ops", "aten::add", "name"),
                                      (view.steps, "steps", "#4", "step")):
        qtbot.waitUntil(lambda p=panel: p.ready, timeout=60_000)
        total = panel.table_model.rowCount()
        assert panel.info.text().startswith(f"{total:,} rows")
        panel.filter.setText(text)
        shown = panel.proxy.rowCount()
        assert 0 < shown < total
        assert panel.info.text().startswith(f"{shown:,} of {total:,} rows")
        out = tmp_path / f"{name}.csv"
        monkeypatch.setattr(exporter, "_ask_file", lambda *a, p=out: p)
        with qtbot.waitSignal(exporter.sig_export_finished, timeout=60_000):
            panel.table.context_menu().actions()[1].trigger()
        rows = list(csv.DictReader(out.open(encoding="utf-8")))
        assert len(rows) == shown, (name, len(rows), shown)
        if column == "step":
            assert [r["step"] for r in rows] == ["4"]
        panel.filter.setText("")
        assert panel.info.text().startswith(f"{total:,} rows")


def test_run_dock_opens_tall_enough_for_the_live_plots(qtbot, main_window):
    """The first time the Run dock opens it gets ~40 % of the window, and the live plots (4 rows with a
    GPU) keep at least their minimum height beside the console: from its size hint the dock was 272 px
    and each plot ~30 px."""
    from PySide6 import QtCore, QtWidgets

    from gui.live.panel import PLOT_MIN_PX
    from gui.run.dock import show_run_dock
    win = main_window
    win.resize(1904, 1040)
    qtbot.wait(20)
    live = win.live_panel
    live._show_gpu(True)
    dock = win.integrations.run_dock
    show_run_dock(win, dock)
    qtbot.wait(50)
    assert dock.height() >= 0.35 * win.height()
    assert all(p.height() >= PLOT_MIN_PX for p in live.plots() if p.isVisible())
    split = live.parentWidget()
    assert isinstance(split, QtWidgets.QSplitter) and live.width() >= 0.55 * split.width()
    win.resizeDocks([dock], [300], QtCore.Qt.Orientation.Vertical)  # the user's size is kept next time
    qtbot.wait(20)
    h = dock.height()
    dock.hide()
    show_run_dock(win, dock)
    qtbot.wait(20)
    assert abs(dock.height() - h) <= 2


def test_the_hta_tab_is_built_when_first_opened(qtbot, main_window, open_and_wait):
    """Not while the trace opens (its plot took ~0.1 s of the UI thread there): when its tab is shown."""
    from gui.hta import HtaTab
    win = main_window
    ts = open_and_wait(win, shared_trace("gpu_clean.pt.trace.json.gz"))
    view = win.current_view()
    assert view.trace_set is ts and view.tabs.indexOf(view.hta_placeholder) >= 0
    assert not view.findChildren(HtaTab)
    view.tabs.setCurrentWidget(view.hta_placeholder)
    (hta,) = view.findChildren(HtaTab)
    assert view.tabs.currentWidget() is hta and view.tabs.tabText(view.tabs.currentIndex()) == "HTA"
    assert view.tabs.indexOf(view.hta_placeholder) == -1
    qtbot.wait(50)
    assert hta._worker is None and hta.report() is None  # opening the tab runs nothing: Run HTA does
    view.tabs.setCurrentIndex(0)
    view.tabs.setCurrentWidget(hta)  # shown again: still the one tab
    assert len(view.findChildren(HtaTab)) == 1
