"""A trace's tab opens in event-loop turns (gui/trace_view.py): the timeline first, the memory plots
the turn after, in the height planned in the first - no layout jump when they arrive, no timeline pulled
out to the whole trace by the plots' x link, and the lane's jobs wait for both."""
from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")


def test_the_plots_come_a_turn_later_in_their_planned_place(qtbot):
    from helpers import shared_trace

    from core.trace.loader import load
    from gui.theme import load_theme
    from gui.trace_view import TraceView

    ts = load(shared_trace("gpu_memory.pt.trace.json.gz"), use_cache=False)
    started = []
    v = TraceView(ts, None, load_theme(dark=False))
    qtbot.addWidget(v)
    for p in v.stats_panels():
        p.sig_table_ready.connect(lambda p=p: started.append(p))
    # the first turn: the timeline is filled, the plots are not built yet but their height is known
    assert not v.ready and v.memory.mem_plot is None and v.timeline.rows
    planned = v.memory_box.wanted_height()
    assert planned > 100
    v.resize(1400, 900)
    v.show()
    qtbot.waitExposed(v)
    qtbot.waitUntil(lambda: v.ready, timeout=10_000)
    sizes = v.split.sizes()
    assert v.memory.mem_plot is not None and v.memory.curves
    assert v.memory_box.wanted_height() == planned and sizes[1] == planned  # the place planned for them
    # the plots fill their panel (plots added to a shown panel once shrank it to a 9 px view box)
    assert v.memory.mem_plot.getViewBox().sceneBoundingRect().height() > 30
    # the timeline keeps its default zoom (the second step), not the plots' whole-trace x range
    t0, t1 = v.timeline.view_range()
    m = ts.primary
    assert t1 - t0 < 1.1 * m.steps.dur_ns[1]
    qtbot.waitUntil(lambda: len(started) == 3, timeout=60_000)  # and then the tables (the lane) run


def test_the_lane_waits_for_the_second_turn(qtbot):
    from helpers import shared_trace

    from core.trace.loader import load
    from gui import lane
    from gui.theme import load_theme
    from gui.trace_view import TraceView

    ts = load(shared_trace("gpu_clean.pt.trace.json.gz"), use_cache=False)
    v = TraceView(ts, None, load_theme(dark=False))
    qtbot.addWidget(v)
    v.resize(1200, 800)
    v.show()
    seen = []
    v.sig_ready.connect(lambda: seen.append(("ready", lane.idle(), bool(lane._RUNNING))))  # noqa: SLF001
    qtbot.waitUntil(lambda: v.ready, timeout=10_000)
    assert seen == [("ready", False, False)]  # jobs queued, none started before the plots were there
    for p in v.stats_panels():
        qtbot.waitUntil(lambda p=p: p.ready, timeout=60_000)


def test_the_memory_plots_frame_comes_a_turn_before_its_curves(qtbot):
    """Its PlotItem (~30 ms of pyqtgraph) in one turn, the curves in the next: together with their
    first paint they were one 100+ ms freeze at 10 GB."""
    from helpers import shared_trace

    from core.trace.loader import load
    from gui.theme import load_theme
    from gui.trace_view import TraceView

    ts = load(shared_trace("gpu_memory.pt.trace.json.gz"), use_cache=False)
    v = TraceView(ts, None, load_theme(dark=False))
    qtbot.addWidget(v)
    v.resize(1400, 900)
    v._load_plots()  # noqa: SLF001 - the turn the timeline's first paint starts
    assert v.memory.mem_plot is not None and not v.memory.curves and not v.ready
    v.show()
    qtbot.waitUntil(lambda: v.ready, timeout=10_000)
    assert v.memory.curves and v.memory.mem_plot.getViewBox().sceneBoundingRect().height() > 30
