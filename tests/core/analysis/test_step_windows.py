"""core.analysis.step_windows.StepWindows: the per-step windows every per-step analysis and rule divides by."""
from __future__ import annotations

import numpy as np
from kineto_events import step, write, x

from core.analysis.step_times import cpu_windows, step_times
from core.analysis.step_windows import StepWindows


def test_of_makes_int64_arrays():
    w = StepWindows.of([3, 4], [0.0, 10.0], [10, 25], 0)
    assert w.number.dtype == w.t0_ns.dtype == w.t1_ns.dtype == np.int64
    assert w.synthetic is False and len(w) == 2
    assert w.dur_ns.tolist() == [10, 15] and w.total_ns == 25


def test_empty():
    w = StepWindows.of([], [], [])
    assert len(w) == 0 and w.total_ns == 0
    assert w.index_of(np.array([0, 5])).tolist() == [-1, -1]


def test_index_of_touching_windows_and_gaps():
    # [0, 10) and [10, 20) touch, [30, 40) after a gap; a window's end belongs to the next one (or none)
    w = StepWindows.of([1, 2, 3], [0, 10, 30], [10, 20, 40])
    ts = np.array([-1, 0, 9, 10, 19, 20, 25, 30, 39, 40])
    assert w.index_of(ts).tolist() == [-1, 0, 0, 1, 1, -1, -1, 2, 2, -1]
    assert w.index_of([5]).tolist() == [0]  # any sequence


def test_cpu_windows_of_a_trace_with_and_without_steps(tmp_path):
    path = tmp_path / "steps.json"
    write(path, [step(5, 0, 100), step(6, 100, 50), x("aten::mm", "cpu_op", 10, 20)])
    from core.trace.loader import load
    m = load(path, use_cache=False).primary
    w = cpu_windows(m)
    assert w.number.tolist() == [5, 6] and not w.synthetic
    assert (w.dur_ns == np.array([100_000, 50_000])).all()
    assert step_times(m).windows().number.tolist() == [5, 6]
    bare = tmp_path / "bare.json"
    write(bare, [x("aten::mm", "cpu_op", 10, 20)])
    w = cpu_windows(load(bare, use_cache=False).primary)
    assert w.synthetic and w.number.tolist() == [-1] and w.total_ns == 20_000
