"""Figure data (Qt-free): the timeline window and rows, memory peak, NVML panels, the step breakdown."""
from __future__ import annotations

import numpy as np

from core.analysis import steps
from core.export import breakdown_data, figures, plots_data, timeline_data
from core.export.figures import FigureSpec
from core.trace.model import Kind


def test_timeline_shows_the_busiest_step_with_bounded_rectangles(trace_set):
    spec = FigureSpec(width_px=1200)
    fig = timeline_data.build(trace_set, spec)
    st = steps.step_stats(trace_set.primary)
    i = int(np.argmax(st.gpu_busy_ns if st.gpu_busy_ns.max() > 0 else st.dur_ns))
    step_t0, step_t1 = st.ts_ns[i] / 1e6, (st.ts_ns[i] + st.dur_ns[i]) / 1e6
    assert fig.t0_ms <= step_t0 < step_t1 <= fig.t1_ms
    assert f"step {int(st.number[i])}" in fig.header.subtitle
    assert figures.trace_name(trace_set) in fig.header.title
    n_rows = len(fig.row_labels)
    assert n_rows == len(fig.row_labels) and fig.group_starts[0] == 0
    n_rects = 0
    for bars in fig.bars:
        assert (bars.x0_ms >= fig.t0_ms - 1e-9).all() and (bars.x1_ms <= fig.t1_ms + 1e-9).all()
        assert (bars.row >= 0).all() and (bars.row < n_rows).all()
        n_rects += len(bars.x0_ms)
        assert Kind[bars.color.split(":")[0]].name in fig.legend
    assert 0 < n_rects <= n_rows * spec.width_px
    labels = " ".join(fig.row_labels)
    if trace_set.primary.devices:
        assert "GPU" in labels and "KERNEL" in fig.legend
    if len(trace_set.models) > 1:
        assert all(f"r{r} ·" in labels for r in trace_set.ranks)


def test_timeline_of_a_chosen_step_and_window(issues_set):
    m = issues_set.primary
    n = int(m.steps.number[-1])
    fig = timeline_data.build(issues_set, FigureSpec(step=n))
    assert f"step {n}" in fig.header.subtitle
    t0 = int(m.steps.ts_ns[-1])
    fig = timeline_data.build(issues_set, FigureSpec(t0_ns=t0, t1_ns=t0 + 1_000_000))
    assert abs(fig.t0_ms - t0 / 1e6) < 0.05 and abs(fig.t1_ms - (t0 / 1e6 + 1)) < 0.05


def test_memory_figure_marks_the_peak(trace_set):
    fig = plots_data.memory(trace_set)
    mem = [m.memory for m in trace_set.models if len(m.memory)]
    if not mem:
        assert fig is None
        return
    cuda = [x.total_allocated[x.device_type != 0] for x in mem]
    peak = max(int(a.max()) for a in cuda if len(a)) if any(len(a) for a in cuda) else \
        max(int(x.total_allocated.max()) for x in mem)
    (panel,) = fig.panels
    assert max(mk.y for mk in panel.markers) * 2**20 == peak
    labels = [s.label for s in panel.series]
    assert any("allocated" in lab for lab in labels)
    if any(x.device_type.any() for x in mem):  # CUDA memory events carry the reserved total
        assert any("reserved" in lab for lab in labels)
    assert all(len(s.x) == len(s.y) and len(s.x) > 0 for s in panel.series)


def test_gpu_figure_only_with_nvml(trace_set):
    fig = plots_data.gpu(trace_set)
    if trace_set.nvml is None:
        assert fig is None
        return
    util = fig.panels[0]
    assert util.y_max == 100.0 and any("util" in s.label for s in util.series)
    t0, t1 = trace_set.span_ns
    assert fig.shade == ((t0 / 1e9, t1 / 1e9, "profiled window"),)


def test_breakdown_adds_up_to_each_step(trace_set):
    for m in trace_set.models:
        bd = breakdown_data.step_breakdown(m)
        windows = steps.breakdown_windows(m) if m.devices else steps.step_windows(m)
        assert (bd.values_ns >= 0).all()
        # GPU traces split each step's GPU span (first GPU activity to the next step's), CPU traces the step
        assert np.array_equal(bd.values_ns.sum(axis=1), windows.dur_ns)
        if bd.gpu:  # busy parts = union of GPU work in the window; the idle parts are the rest
            assert (bd.gpu_busy_ns <= windows.dur_ns).all()
    fig = breakdown_data.build(trace_set)
    assert fig.values_ms.shape == (len(fig.bar_labels), len(fig.categories))


def test_decimate_keeps_extremes():
    x = np.arange(100_000, dtype=float)
    y = np.sin(x / 500.0)
    y[54_321] = 7.0
    dx, dy = figures.decimate(x, y, 500)
    assert len(dx) <= 4 * 500 + 2 and dy.max() == 7.0 and dy.min() == y.min()
