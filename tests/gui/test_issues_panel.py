"""IssuesPanel driven through real traces: worker fills it without blocking, selection emits the range and
evidence rows, checks not run are shown, the breakdown view draws one batched bar item per category."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import shared_trace
from PySide6 import QtCore

from core.rules import analyze
from core.trace.loader import load

pytest.importorskip("pytestqt")


@pytest.fixture(scope="module")
def issues_ts():
    return load(shared_trace("gpu_issues.pt.trace.json.gz"), use_cache=False)


def test_worker_fills_panel_and_selection_emits_range(qtbot, issues_ts):
    from gui.issues import IssuesPanel
    panel = IssuesPanel()
    qtbot.addWidget(panel)
    with qtbot.waitSignal(panel.sig_analysis_finished, timeout=30_000) as blocker:
        panel.set_trace_set(issues_ts)
        assert panel.status.text().startswith("Analysing")  # returned at once: the work is in the worker
    analysis = blocker.args[0]
    assert panel.model.rowCount() == len(analysis.findings) > 5
    # the one order of core (errors first, then by saving / impact), the order of report.html and `analyze`
    shown = [panel.model.finding(panel.proxy.mapToSource(panel.proxy.index(r, 0)).row())
             for r in range(panel.proxy.rowCount())]
    assert shown == list(analysis.findings)
    from core.export.findings import wrap
    assert [(f.rule, f.title) for f in wrap(analysis).findings] == [(f.rule, f.title) for f in shown]
    from gui.issues.model import COLUMNS
    texts = [panel.proxy.index(r, COLUMNS.index("Saves / step")).data() for r in range(panel.proxy.rowCount())]
    # positive times with units, then their share of the mean step (issue 31: one vocabulary)
    assert all((t[0].isdigit() and t.split("\n")[0].endswith("s") and t.endswith(" %")) if f.saving_ns >= 1_000
               else t == "≈ 0" for t, f in zip(texts, shown) if f.saving_ns is not None)
    # pick the host_sync finding and check what the timeline would get
    row = next(r for r in range(panel.proxy.rowCount())
               if panel.proxy.index(r, COLUMNS.index("Rule")).data() == "host_sync")
    with qtbot.waitSignal(panel.sig_finding_selected, timeout=2_000) as sel:
        panel.select_row(row)
    mi, t0, t1, rows = sel.args
    f = next(f for f in analysis.findings if f.rule == "host_sync" and f.impact_ns == max(
        g.impact_ns for g in analysis.findings if g.rule == "host_sync"))
    assert mi == 0 and t0 < t1 and isinstance(rows, np.ndarray) and len(rows) > 0
    names = {issues_ts.primary.name(int(r)) for r in rows}
    assert "cudaStreamSynchronize" in names
    html = panel.details.toHtml()
    assert "gpu_workloads.py" in html and "Fix:" in html and f.rule in html
    # breakdown: one BarGraphItem per non-empty category
    assert {"compute_ns", "sync_wait_ns"} <= set(panel.breakdown.bars)


def test_checks_not_run_are_visible(qtbot):
    from gui.issues import IssuesPanel
    ts = load(shared_trace("gpu_minimal_opts.pt.trace.json.gz"), use_cache=False)
    panel = IssuesPanel()
    qtbot.addWidget(panel)
    panel.set_analysis(ts, analyze(ts))
    assert not panel.not_run.isHidden()
    assert "memory_growth" in panel.not_run.text() and "with_stack" in panel.not_run.text()


def test_checks_not_run_do_not_stay_from_another_tab(qtbot, issues_ts):
    """A tab switch hands the panel another trace's finished analysis (gui/integrations.py): the label of
    the previous one's checks-not-run must go when the new one ran every check."""
    from gui.issues import IssuesPanel
    cpu = load(shared_trace("cpu_train.pt.trace.json.gz"), use_cache=False)
    cpu_analysis, gpu_analysis = analyze(cpu), analyze(issues_ts)
    assert cpu_analysis.not_run and not gpu_analysis.not_run
    panel = IssuesPanel()
    qtbot.addWidget(panel)
    panel.set_analysis(cpu, cpu_analysis)
    assert not panel.not_run.isHidden() and panel.not_run.text()
    panel.set_analysis(issues_ts, gpu_analysis)
    assert panel.not_run.isHidden() and panel.not_run.text() == ""
    panel.set_analysis(cpu, cpu_analysis)
    assert not panel.not_run.isHidden()


def test_new_trace_cancels_previous_run(qtbot, issues_ts):
    from gui.issues import IssuesPanel
    cpu = load(shared_trace("cpu_train.pt.trace.json.gz"), use_cache=False)
    panel = IssuesPanel()
    qtbot.addWidget(panel)
    finished = []
    panel.sig_analysis_finished.connect(finished.append)
    panel.set_trace_set(issues_ts)
    with qtbot.waitSignal(panel.sig_analysis_finished, timeout=30_000):
        panel.set_trace_set(cpu)
    qtbot.wait(300)
    assert len(finished) == 1  # the first run's result was dropped
    assert all(f.hint for f in finished[0].findings if f.rule == "host_sync")
    assert "CPU-only" in panel.breakdown.totals.text()


def test_connect_timeline_forwards_range_and_rows(qtbot, issues_ts):
    from gui.issues import IssuesPanel, connect_timeline

    class FakeTimeline:  # records calls like gui.timeline.view does
        def __init__(self):
            self.calls = []

        def show_range(self, t0, t1):
            self.calls.append(("range", t0, t1))

        def highlight(self, model_rows):
            self.calls.append(("hl", model_rows))

    panel = IssuesPanel()
    qtbot.addWidget(panel)
    panel.set_analysis(issues_ts, analyze(issues_ts))
    tl = FakeTimeline()
    connect_timeline(panel, tl)
    panel.select_row(0)
    kinds = [c[0] for c in tl.calls]
    assert kinds == ["range", "hl"] and 0 in tl.calls[1][1]


def test_multi_rank_breakdown_switches_rank(qtbot):
    from gui.issues import IssuesPanel
    ts = load(shared_trace("gpu_ddp2"), use_cache=False)
    panel = IssuesPanel()
    qtbot.addWidget(panel)
    panel.set_analysis(ts, analyze(ts))
    assert panel.rank_combo.count() == 2 and not panel.rank_combo.isHidden()
    first = panel.breakdown.breakdown()
    panel.rank_combo.setCurrentIndex(1)
    second = panel.breakdown.breakdown()
    assert first is not second and len(second) == 3
    assert "comm_wait_ns" in panel.breakdown.bars  # gloo all-reduce shows as collectives


def test_cancel_button_stops_analysis(qtbot, issues_ts):
    from gui.issues import IssuesPanel
    panel = IssuesPanel()
    qtbot.addWidget(panel)
    panel.show()
    finished = []
    panel.sig_analysis_finished.connect(finished.append)
    panel.set_trace_set(issues_ts)
    assert panel.cancel_button.isVisible()
    panel.cancel_button.click()
    qtbot.wait(1500)
    assert not finished and "cancelled" in panel.status.text() and not panel.is_running()


def test_panel_closed_while_analysing_ignores_the_late_result(qtbot):
    """A window closed mid-analysis (a test's teardown, a closed tab): the worker's late progress and
    result must not touch the deleted widgets (pytest-qt fails the test on any event-loop exception)."""
    import time

    import shiboken6
    from PySide6 import QtWidgets

    from gui.issues import IssuesPanel
    ts = load(shared_trace("gpu_dataloader.pt.trace.json.gz"))
    holder = QtWidgets.QWidget()
    panel = IssuesPanel(holder)
    panel.set_trace_set(ts)
    worker = panel._worker
    status = panel.status
    shiboken6.delete(holder)  # the C++ widgets go now, the Python wrappers and the worker stay
    assert not shiboken6.isValid(status)
    t0 = time.monotonic()
    while worker.is_running and time.monotonic() - t0 < 60:
        qtbot.wait(50)
    qtbot.wait(200)  # deliver the queued yielded/returned signals


def test_one_off_cost_has_its_own_label_in_the_table_and_details(qtbot):
    """gpu_compile_small's recompile: "one-off: 3.84 s at step 4", not a cost of every step (issue 31)."""
    from gui.issues import IssuesPanel
    from gui.issues.model import COLUMNS
    ts = load(shared_trace("gpu_compile_small.pt.trace.json.gz"), use_cache=False)
    analysis = analyze(ts)
    panel = IssuesPanel()
    qtbot.addWidget(panel)
    panel.set_analysis(ts, analysis)
    rules = [panel.proxy.index(r, COLUMNS.index("Rule")).data() for r in range(panel.proxy.rowCount())]
    row = rules.index("recompile")
    assert row == 0  # an error: first
    cell = panel.proxy.index(row, COLUMNS.index("Lost / step")).data()
    assert cell == "one-off: 3.84 s\nat step 4"
    assert "one-off: 3.84 s at step 4" in panel.proxy.index(row, COLUMNS.index("Problem")).data(
        QtCore.Qt.ItemDataRole.ToolTipRole)
    panel.select_row(row)
    assert "one-off: 3.84 s at step 4" in panel.details.toPlainText()
    # the one-off allocator_churn (info) is listed above the info findings that save ≈ 0 per step
    assert rules.index("allocator_churn") < rules.index("fp32_gemm")


def test_issues_panel_speaks_the_report_s_words(qtbot, issues_ts):
    """Lost / step and Saves / step, % of mean step, and the mean step of report.html (issue 31 item 4)."""
    from core.export import summary
    from gui.issues import IssuesPanel
    from gui.issues.model import COLUMNS
    panel = IssuesPanel()
    qtbot.addWidget(panel)
    analysis = analyze(issues_ts)
    panel.set_analysis(issues_ts, analysis)
    headers = [panel.proxy.headerData(c, QtCore.Qt.Orientation.Horizontal) for c in range(len(COLUMNS))]
    assert "Lost / step" in headers and "Saves / step" in headers
    tip = panel.proxy.headerData(COLUMNS.index("Lost / step"), QtCore.Qt.Orientation.Horizontal,
                                 QtCore.Qt.ItemDataRole.ToolTipRole)
    assert "% of mean step" in tip and "mean" in tip
    mean = dict(summary.headline(issues_ts))["mean step"]
    assert f"mean step {mean}" in panel.status.text().replace("\u00a0", " ")
    row = [f.rule for f in (panel.model.finding(r) for r in range(panel.model.rowCount()))].index("launch_bound")
    panel.select_row(row)
    text = panel.details.toPlainText()
    assert "Lost / step" in text and "Saves / step" in text and "% of mean step" in text and "−" not in text


def test_many_findings_get_rows_of_a_fixed_height(qtbot, issues_ts):
    """Past MANY_ROWS findings (a run of 100+ ranks) rows are not sized to their wrapped titles (every cell of
    every row measured on each layout held the UI thread ~1.5 s at 1,153 findings); few keep that sizing."""
    from dataclasses import replace

    from PySide6 import QtWidgets

    from gui.issues import IssuesPanel
    from gui.issues.panel import MANY_ROWS
    analysis = analyze(issues_ts)
    panel = IssuesPanel()
    qtbot.addWidget(panel)
    panel.set_analysis(issues_ts, analysis)
    mode = panel.table.verticalHeader().sectionResizeMode(0)
    assert mode == QtWidgets.QHeaderView.ResizeMode.ResizeToContents
    many = replace(analysis, findings=list(analysis.findings) * (MANY_ROWS // len(analysis.findings) + 1))
    panel.set_analysis(issues_ts, many)
    assert panel.model.rowCount() > MANY_ROWS
    assert panel.table.verticalHeader().sectionResizeMode(0) == QtWidgets.QHeaderView.ResizeMode.Fixed
    assert panel.table.rowHeight(0) >= 2 * panel.table.fontMetrics().lineSpacing()
    panel.set_analysis(issues_ts, analysis)  # a tab switch back to a small run
    assert panel.table.verticalHeader().sectionResizeMode(0) == QtWidgets.QHeaderView.ResizeMode.ResizeToContents
