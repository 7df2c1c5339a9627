"""What a user reads at first sight (issue: first-sight review, h31r): no label of the Issues dock clipped
or drawn over the findings table in a laptop-sized dock; counts read as words ("1 error", "2 warnings")."""
from __future__ import annotations

from pathlib import Path

import pytest
from PySide6 import QtCore

from core.rules import analyze
from core.trace.loader import load

pytest.importorskip("pytestqt")
DATA = Path(__file__).resolve().parents[1] / "data"


def _analysed(rel: str):
    ts = load(str(DATA / rel), use_cache=False)
    return ts, analyze(ts)


@pytest.fixture(scope="module")
def straggler():
    return _analysed("multi/straggler")


@pytest.fixture(scope="module")
def cycles():
    return _analysed("bundles/c1")


def _rect_in(widget, ancestor) -> QtCore.QRect:
    return QtCore.QRect(widget.mapTo(ancestor, QtCore.QPoint(0, 0)), widget.size())


@pytest.mark.parametrize("width", [400, 520])
@pytest.mark.parametrize("which", ["straggler", "cycles"])
def test_issues_dock_labels_are_never_clipped(qtbot, request, which, width):
    """At 1366x768 the dock is ~410 px wide: 'Checks not run' (6 lines there) got 4 lines' height, its first
    line hidden under the table, and the status line lost its last line."""
    from gui.issues import IssuesPanel
    ts, analysis = request.getfixturevalue(which)
    panel = IssuesPanel()
    qtbot.addWidget(panel)
    panel.resize(width, 690)
    panel.show()
    panel.set_analysis(ts, analysis)
    qtbot.wait(50)
    assert analysis.not_run and panel.not_run.isVisible()
    for label in (panel.status, panel.not_run):
        need = label.heightForWidth(label.width())
        assert label.height() >= need > 0, (label.text()[:40], label.height(), need)
    combo = [panel.rank_combo.itemText(i) for i in range(panel.rank_combo.count())]
    assert len(set(combo)) == len(combo) == len(ts.models), combo  # each trace told apart
    # two findings in view at least (one of nine was shown), the label below the table, not over it
    if len(analysis.findings) > 2:
        assert panel.table.rowHeight(0) + panel.table.rowHeight(1) <= panel.table.viewport().height()
    assert not _rect_in(panel.not_run, panel).intersects(_rect_in(panel.table, panel))
    assert _rect_in(panel.status, panel).bottom() < _rect_in(panel.table, panel).top()


def test_status_counts_read_as_words(qtbot, straggler):
    from gui.issues import IssuesPanel
    ts, analysis = straggler
    panel = IssuesPanel()
    qtbot.addWidget(panel)
    panel.set_analysis(ts, analysis)
    text = panel.status.text()
    assert "(s)" not in text and " 0 warning" not in text and "0 error" not in text, text
    n = len(analysis.findings)
    assert text.startswith(f"{n} finding{'' if n == 1 else 's'}")


def test_a_run_bundles_cycles_are_told_apart(qtbot):
    """c1 holds rank0.cycle1 and rank0.cycle2: the timeline's header rows and rank filter said
    'rank 0 · rank0.c…1.pt.trace.json' (elided where the cycles differ), the memory legend 'rank 0 GPU 0'
    twice (the second cut off) and the Kernels table '2 ranks'."""
    from gui.theme import load_theme
    from gui.timeline.rows import HEADER
    from gui.trace_view import TraceView
    ts = load(str(DATA / "bundles" / "c1"), use_cache=False)
    assert [m.rank for m in ts.models] == [0, 0]
    view = TraceView(ts, None, load_theme(dark=False))
    view.resize(940, 740)  # a 1366x768 window less the Issues dock
    qtbot.addWidget(view)
    view.show()
    qtbot.waitUntil(lambda: view.kernels.ready, timeout=30_000)
    heads = [r.label for r in view.timeline.rows if r.track == HEADER]
    assert heads == ["rank 0 · cycle 1", "rank 0 · cycle 2"], heads
    assert [view.rank_filter.itemText(i) for i in range(view.rank_filter.count())][1:] == heads
    assert view.kernels.info.text().endswith("· 2 traces"), view.kernels.info.text()
    from gui.workers import describe_set
    assert describe_set(ts).startswith("2 traces · ")
    qtbot.waitUntil(lambda: "rank 0 · cycle 2 GPU 0 peak" in view.memory.summary.toPlainText(), timeout=10_000)
    assert "rank 0 · cycle 1 GPU 0 peak" in view.memory.summary.toPlainText()
    assert " of 139.80 GiB" not in view.memory.summary.toPlainText()  # the capacity once, in the tooltip
    assert view.memory.summary.toPlainText().count("allocated") == 1  # the line styles once, then per series
    assert view.memory.summary.item.boundingRect().width() < view.memory.width() - 20  # one line
    assert "cycle 2" in view.memory.summary.toolTip() and " of 139.80 GiB" in view.memory.summary.toolTip()


def test_a_many_rank_tables_count_ranks():
    from types import SimpleNamespace

    from gui.timeline.rows import model_short, model_title
    m = SimpleNamespace(rank=1, path="/x/rank1.pt.trace.json.gz")
    assert model_title(m) == "rank 1 · rank1.pt.trace.json.gz" and model_short(m) == "rank 1"
    c = SimpleNamespace(rank=0, path="/x/traces/rank0.cycle12.pt.trace.json.gz")
    assert model_title(c) == model_short(c) == "rank 0 · cycle 12"


def test_compare_breakdown_fits_a_laptop_screen(qtbot, main_window):
    """Compare s1 vs s2 at 1366x768: the breakdown plot is ~95 px tall; the top bar's value was cut in half and
    the y label read 'ms per step (mean'."""
    import pyqtgraph as pg
    main_window.resize(1366, 740)
    with qtbot.waitSignal(main_window.integrations.compare.sig_compare_shown, timeout=120_000) as blocker:
        main_window.compare_paths(str(DATA / "bundles" / "s1"), str(DATA / "bundles" / "s2"))
    view = blocker.args[0]
    view.tabs.setCurrentWidget(view.breakdown_plot)
    qtbot.wait(100)
    plot = view.breakdown_plot.getPlotItem()
    box = plot.getViewBox().sceneBoundingRect()
    assert 40 < box.height() < 400, box
    labels = [i for i in plot.items if isinstance(i, pg.TextItem)]
    assert labels
    for label in labels:
        r = label.sceneBoundingRect()
        assert r.top() >= box.top() - 1 and r.bottom() <= box.bottom() + 1, (label.textItem.toPlainText(), r, box)
    axis = plot.getAxis("left")
    assert axis.label.boundingRect().width() <= axis.sceneBoundingRect().height(), axis.labelText


def test_a_list_fact_is_not_read_as_a_count():
    """The straggler's summary said 'waiting ranks 0' (rank 0 waits), read as 'no rank waits'."""
    from gui.issues.evidence import facts_html
    line = facts_html({"waiting_ranks": [0], "waited_ns": [253_363_400], "kernels": 3})
    assert "waiting ranks: <b>0</b>" in line and "waited: <b>253.36 ms</b>" in line and "kernels <b>3</b>" in line


def test_a_findings_rows_are_scrolled_into_view(qtbot):
    """Selecting rank 1's finding (its evidence highlighted) left the timeline on rank 0's rows."""
    import numpy as np

    from gui.theme import load_theme
    from gui.trace_view import TraceView
    ts, analysis = _analysed("multi/straggler")
    f = next(f for f in analysis.findings if f.rule == "straggler")
    rows = np.asarray(f.evidence_rows, np.int64)
    assert f.model_index == 1 and len(rows)
    view = TraceView(ts, None, load_theme(dark=False))
    view.resize(1200, 520)
    qtbot.addWidget(view)
    view.show()
    qtbot.waitExposed(view)
    tl = view.timeline
    at = tl.item.rows_of_slices(1, rows)
    top, bottom = tl.vb.viewRange()[1]
    assert at.min() + 1 > bottom, (at.min(), top, bottom)  # below the view at first
    view.highlight_slices(1, rows)
    top, bottom = tl.vb.viewRange()[1]
    assert ((at >= top) & (at + 1 <= bottom)).any(), (at, top, bottom)
    before = tl.vb.viewRange()[1]
    view.highlight_slices(1, rows)  # already in view: no scroll
    assert tl.vb.viewRange()[1] == before


def test_an_oom_bar_segment_label_is_whole_or_absent():
    from gui.snapshot.oom_view import segment_text
    width = lambda s: 7 * len(s)  # noqa: E731
    assert segment_text("allocated: parameters", 256 * 2**20, 300, width) == "parameters 256.00 MiB"
    assert segment_text("allocated: parameters", 256 * 2**20, 80, width) == "256.00 MiB"  # the size alone
    assert segment_text("free", 193 * 2**20, 40, width) == ""  # never cut mid-number


def test_a_bold_rank_header_is_elided_in_its_own_font(qtbot):
    from PySide6 import QtGui

    from gui.timeline.axes import fit_label
    font = QtGui.QFont()
    font.setPixelSize(12)
    bold = QtGui.QFont(font)
    bold.setBold(True)
    text = "▸ rank 10 · rank10.pt.trace.json.gz"
    px = QtGui.QFontMetrics(font).horizontalAdvance(text) - 2  # fits in the regular font's widths, not in bold
    shown = fit_label(text, bold, px)
    assert "…" in shown and QtGui.QFontMetrics(bold).horizontalAdvance(shown) <= px
    assert fit_label(text, None, px + 10, QtGui.QFontMetrics(font)) == text


def test_an_evidence_role_reads_as_words():
    from gui.issues.evidence import evidence_html
    rows = [{"name": "load_batch", "ts_ns": t, "dur_ns": 5, "role": "what the straggler was doing"} for t in (1, 2)]
    page = evidence_html(rows, 600, lambda s: 7 * len(s), lambda s, px, mode: s)
    assert "In all 2: what the straggler was doing" in page and "role what" not in page
