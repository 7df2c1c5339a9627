"""Memory / NVML plots under the timeline: aligned with it on screen, text outside the curves."""
from __future__ import annotations

import pytest
from helpers import shared_trace
from PySide6 import QtCore

from core.trace.loader import load


@pytest.fixture(scope="module")
def mem_set():
    return load(shared_trace("gpu_memory.pt.trace.json.gz"))


@pytest.fixture
def view(qtbot, mem_set):
    from gui.theme import load_theme
    from gui.trace_view import TraceView
    v = TraceView(mem_set, None, load_theme(dark=False))
    v.resize(1400, 900)
    qtbot.addWidget(v)
    v.show()
    qtbot.waitExposed(v)
    qtbot.waitUntil(lambda: v.ready, timeout=10_000)  # the plots come the turn after the timeline
    qtbot.wait(20)
    return v


def _global_x(widget, vb, t: float) -> float:
    return vb.mapViewToDevice(QtCore.QPointF(t, 0)).x() + widget.mapToGlobal(QtCore.QPoint(0, 0)).x()


def _assert_aligned(view):
    tl = view.timeline
    a, b = tl.view_range()
    plots = view.memory.shown_plots()
    assert len(plots) == 2  # memory + NVML (gpu_memory.nvml.csv)
    for t in (a + (b - a) * 0.01, (a + b) / 2, b - (b - a) * 0.01):
        x_tl = _global_x(tl, tl.vb, t)
        for p in plots:
            assert abs(_global_x(view.memory, p.getViewBox(), t) - x_tl) <= 1.0


def test_plots_line_up_with_the_timeline(qtbot, view):
    _assert_aligned(view)
    tl = view.timeline
    for r in list(tl.rows):  # many rows: the scroll bar gets enabled; nothing moves
        if r.collapsed:
            tl.toggle_track(r.model, r.track)
    qtbot.wait(20)
    assert view.row_scroll.isEnabled()
    _assert_aligned(view)
    tl.vb.zoom_at(0.3)
    qtbot.wait(20)
    _assert_aligned(view)
    view.resize(1100, 800)
    qtbot.wait(50)
    _assert_aligned(view)


def test_memory_text_sits_outside_the_curves(view, mem_set):
    mem = view.memory
    plot = mem.mem_plot
    vb_rect = plot.getViewBox().sceneBoundingRect()
    assert mem.summary.sceneBoundingRect().bottom() <= vb_rect.top() + 1
    assert "peak" in mem.summary.toPlainText() and "NVIDIA" in mem.summary.toPlainText()
    assert plot.legend is None and (mem.nvml_plot.legend is None)
    assert plot.getAxis("left").labelText in ("GiB", "MiB")  # the axis names its unit
    from core.analysis.memory import memory_series
    s = memory_series(mem_set.primary)[0]
    top = plot.getViewBox().viewRange()[1][1] * mem.mem_unit[0]
    assert top >= 1.1 * s.peak_reserved_bytes  # headroom for the peak label
    view.timeline.show_range(*view.timeline.item._span)
    label = next(i for i in plot.items if getattr(i, "textItem", None) is not None
                 and i.textItem.toPlainText().startswith("peak"))
    r = label.sceneBoundingRect()
    vb_rect = plot.getViewBox().sceneBoundingRect()
    assert vb_rect.top() - 1 <= r.top() and r.bottom() <= vb_rect.bottom() + 1
