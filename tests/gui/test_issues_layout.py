"""Issues panel as a user sees it: errors first, no sideways scroll when a finding is selected, the
evidence table's name column readable, "checks not run" once on multi-rank traces."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from helpers import shared_trace
from PySide6 import QtCore

from core.rules import analyze
from core.rules.base import Finding, Severity
from core.trace.loader import load


def _finding(rule: str, sev: Severity, impact_ns: int, title: str = "") -> Finding:
    return Finding(rule=rule, severity=sev, title=title or f"{rule} " + "long problem title " * 6, count=3,
                   impact_ns=impact_ns, impact_pct=1.0, time_ranges=((0, 10),), evidence=(), source=None,
                   fix="do the thing")


def test_errors_sort_first_then_by_saving_or_impact(qtbot):
    from gui.issues import IssuesPanel
    panel = IssuesPanel()
    qtbot.addWidget(panel)
    findings = [_finding("a", Severity.WARNING, 9_000_000), _finding("b", Severity.ERROR, 1_000),
                _finding("c", Severity.INFO, 50_000_000), _finding("d", Severity.ERROR, 2_000_000),
                _finding("e", Severity.WARNING, 1_000_000)]
    panel.model.set_findings(findings)
    panel.table.sortByColumn(0, panel.table.horizontalHeader().sortIndicatorOrder().DescendingOrder)
    order = [panel.model.finding(panel.proxy.mapToSource(panel.proxy.index(r, 0)).row()).rule
             for r in range(panel.proxy.rowCount())]
    assert order == ["d", "b", "a", "e", "c"]
    # a finding with an estimated saving per step sorts by it, before those without one (by their impact)
    from core.analysis.vocab import order_key
    assert order_key(SimpleNamespace(severity=1, saving_ns=20_000, saving_pct=1.0, impact_ns=5, rule="x")) < \
        order_key(SimpleNamespace(severity=1, saving_ns=None, impact_ns=9_000_000, rule="y"))


def test_selecting_a_finding_never_scrolls_the_table_sideways(qtbot):
    from gui.issues import IssuesPanel
    ts = load(shared_trace("gpu_issues.pt.trace.json.gz"))
    panel = IssuesPanel()
    panel.resize(460, 700)  # a narrow dock
    qtbot.addWidget(panel)
    panel.show()
    panel.set_analysis(ts, analyze(ts))
    qtbot.wait(20)
    bar = panel.table.horizontalScrollBar()
    for row in range(panel.proxy.rowCount()):
        panel.select_row(row)
        qtbot.wait(5)
        assert bar.value() == 0 and bar.maximum() == 0
    header = panel.table.horizontalHeader()
    assert header.sectionViewportPosition(0) == 0  # Severity stays at the left edge
    total = sum(header.sectionSize(c) for c in range(header.count()) if not header.isSectionHidden(c))
    assert total <= panel.table.viewport().width() + 1  # every column fits the dock
    # the problem's title gets the room: the severity is an icon, the count is in the title
    problem = header.sectionSize(1)
    assert problem >= 0.4 * panel.table.viewport().width(), (problem, panel.table.viewport().width())
    assert panel.proxy.index(0, 0).data(QtCore.Qt.ItemDataRole.ToolTipRole) in ("error", "warning", "info")


def test_evidence_names_are_not_wrapped_into_tall_rows(qtbot):
    from gui.issues import IssuesPanel
    ts = load(shared_trace("gpu_issues.pt.trace.json.gz"))
    panel = IssuesPanel()
    panel.resize(520, 900)
    qtbot.addWidget(panel)
    panel.show()
    panel.set_analysis(ts, analyze(ts))
    f = next(r for r in range(panel.proxy.rowCount())
             if panel.model.finding(panel.proxy.mapToSource(panel.proxy.index(r, 0)).row()).evidence)
    panel.select_row(f)
    doc = panel.details.document()
    table_rows = max(1, len(panel.model.finding(panel.proxy.mapToSource(panel.proxy.index(f, 0)).row()).evidence[:20]))
    line_px = panel.details.fontMetrics().lineSpacing()
    assert doc.size().height() < (table_rows + 12) * line_px * 2.2  # no 90 px rows


def test_checks_not_run_are_listed_once_on_multi_rank_traces(qtbot):
    from gui.issues import IssuesPanel
    ts = load(shared_trace("gpu_ddp2"))
    panel = IssuesPanel()
    qtbot.addWidget(panel)
    panel.set_analysis(ts, analyze(ts))
    text = panel.not_run.text()
    assert text.count("no Python stacks") == 1 and "ranks 0, 1" in text
    assert "Checks not run" not in panel.details.toHtml()  # not a second time in Details


def test_breakdown_and_hta_follow_the_theme(qtbot):
    from gui.hta import HtaTab
    from gui.hta.frame_model import human_header
    from gui.issues.breakdown_view import BreakdownView
    from gui.theme import category_color, load_theme
    for dark in (False, True):
        theme = load_theme(dark=dark)
        view, tab = BreakdownView(theme=theme), HtaTab(auto_run=False, theme=theme)
        qtbot.addWidget(view)
        qtbot.addWidget(tab)
        for plot in (view.plot, tab.plot):
            assert plot.backgroundBrush().color() == theme.background
    light, dark = load_theme(dark=False), load_theme(dark=True)
    # every category has its own colour, a new one (not in theme.toml) too
    from core.analysis.breakdown import PARTS
    colours = {category_color(light, p, i).name() for i, p in enumerate(PARTS)}
    assert len(colours) == len(PARTS)
    assert category_color(light, "some_new_category_ns", 3).isValid()
    assert category_color(light, "compute_ns") != category_color(dark, "compute_ns")
    assert human_header("idle_time(us)") == "Idle time (µs)"
    assert human_header("compute_time_pctg") == "Compute time (%)"


def test_breakdown_legend_is_text_beside_the_bars(qtbot):
    from core.analysis.breakdown import step_breakdown
    from gui.issues.breakdown_view import BreakdownView
    ts = load(shared_trace("gpu_issues.pt.trace.json.gz"))
    view = BreakdownView()
    qtbot.addWidget(view)
    view.set_breakdown(step_breakdown(ts.primary))
    assert view.plot.getPlotItem().legend is None  # nothing drawn over the bars
    assert "compute" in view.totals.text() and "■" in view.totals.text()


def _render_every_finding(qtbot, name: str, width: int):
    from gui.issues import IssuesPanel
    ts = load(shared_trace(name))
    panel = IssuesPanel()
    panel.resize(width, 900)
    qtbot.addWidget(panel)
    panel.show()
    panel.set_analysis(ts, analyze(ts))
    for row in range(panel.proxy.rowCount()):
        panel.select_row(row)
        qtbot.wait(5)
        yield panel, panel.model.finding(panel.proxy.mapToSource(panel.proxy.index(row, 0)).row())


@pytest.mark.parametrize("name", ["gpu_issues.pt.trace.json.gz", "gpu_ddp2", "cpu_train.pt.trace.json.gz"])
def test_evidence_fits_the_details_pane(qtbot, name):
    """Every finding's evidence is laid out for the pane: nothing wider than the viewport (no sideways
    scrolling), the text once (a re-layout on resize must not append), and again after a resize."""
    n = 0
    for panel, f in _render_every_finding(qtbot, name, 533):
        d = panel.details
        doc = d.document()
        assert doc.idealWidth() <= d.viewport().width() + 1, (f.rule, doc.idealWidth(), d.viewport().width())
        assert doc.toPlainText().count(f.title) == 1, f.rule
        n += bool(f.evidence)
    assert n >= 3
    panel.resize(420, 900)  # a narrower dock: laid out again, still inside
    qtbot.waitUntil(lambda: panel.details.document().idealWidth() <= panel.details.viewport().width() + 1,
                    timeout=2_000)
    assert panel.details.document().toPlainText().count(f.title) == 1


def test_launch_bound_evidence_shows_each_kernel_with_its_time(qtbot):
    """The facts are the summary line above the evidence; the kernel rows one table of name / ts / dur whose
    names keep the part that tells kernels apart (no 20 x "at::native::vectorized_elementwise_kernel<C…")."""
    for panel, f in _render_every_finding(qtbot, "gpu_issues.pt.trace.json.gz", 533):
        if f.rule != "launch_bound":
            continue
        text = panel.details.document().toPlainText()
        assert "Summary: kernels 1005 · gpu kernel " in text and " · runs " in text
        assert text.index("Summary:") < text.index("Evidence")
        assert "CUDAFunctorOnSelf_add" in text  # the functor, not cut away
        heads = [c.strip() for c in text.split("\n") if c.strip() in ("ts", "dur", "kernels", "name")]
        assert heads == ["name", "ts", "dur"]  # one table, of the kernels' shape
        return
    pytest.fail("no launch_bound finding")


def test_evidence_table_and_names():
    from PySide6 import QtCore as QC

    from gui.issues.evidence import column_widths, columns, display_names, evidence_html, facts_html
    rows = [{"name": "k1", "ts_ns": 1, "dur_ns": 2, "rank": 0, "row": 7, "extra": None, "cause": "aten::item"},
            {"name": "k2", "ts_ns": 3, "dur_ns": 4, "rank": 0, "row": 8, "extra": None, "cause": "aten::item"}]
    assert columns(rows) == ["name", "ts_ns", "dur_ns", "cause"]  # no row / rank, no column empty in every row
    page = evidence_html(rows, 600, lambda s: 7 * len(s), lambda s, px, mode: s)
    assert page.count("<table") == 1 and "In all 2: cause aten::item" in page and ">extra<" not in page
    line = facts_html({"kernels": 3, "idle_ns": 5_000, "busy_pct": 12.5, "none": None,
                       "sites": ["a.py:1", "b.py:2"], "reasons": ["a long reason " * 5, "another " * 10]})
    assert "<b>Summary:</b> kernels <b>3</b> · idle <b>5.00 µs</b> · busy <b>12.5 %</b> · sites <b>a.py:1, b.py:2</b>" \
        in line
    assert "reasons:</p><ul><li>a long reason" in line and "none" not in line  # long texts: a list of their own
    only_list = facts_html({"reasons": ["a long reason " * 5, "another " * 10]})
    assert only_list.startswith("<p><b>Summary:</b> reasons:</p><ul><li>a long reason")
    assert facts_html({}) == facts_html({"n": None}) == ""
    measure = lambda s: 7 * len(s)  # noqa: E731
    elide = lambda s, px, mode: s if 7 * len(s) <= px else (  # noqa: E731
        s[: px // 14] + "…" + s[-(px // 14):] if mode == QC.Qt.TextElideMode.ElideMiddle else s[: px // 7 - 1] + "…")
    gemms = ["void cutlass::Kernel2<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>(Params)",
             "void cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_nn_align1>(Params)"]
    shown = display_names(gemms, 7 * 40, measure, elide)
    assert len(set(shown)) == 2 and all(len(s) <= 41 for s in shown)  # told apart, and they fit
    assert display_names(["void at::native::f<4>(int)"], 7 * 40, measure, elide) == ["void at::native::f<4>(int)"]
    # short columns keep their width, long ones share the rest (the name twice the others)
    assert column_widths([400, 60, 300], 460, [2, 1, 1]) == [266, 60, 133]
    assert column_widths([400, 60, 120], 460, [2, 1, 1]) == [280, 60, 120]  # 120 < its share: kept
    assert column_widths([60, 100, 80], 460, [2, 1, 1]) == [60, 100, 80]
