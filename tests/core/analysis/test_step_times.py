"""Steps on the GPU timeline (core.analysis.step_times): own GPU work, GPU span, effective step, bound."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import shared_trace
from synth_loops import loop, write

from core.analysis.step_times import step_times
from core.analysis.steps import step_stats
from core.trace.loader import load


def test_gpu_bound_loop_steps_are_the_gpu_cadence(tmp_path):
    # the CPU launches 20 x 500 µs kernels in ~0.2 ms per step: the GPU lags, CPU steps are short
    ev, _ = loop(steps=6, kernels=20, kernel_us=500.0)
    m = load(write(tmp_path, ev), use_cache=False).primary
    t = step_times(m)
    assert (t.cpu_ns < 300_000).all()
    # every step owns its 20 kernels although most run during later CPU steps
    assert (np.diff(t.work_offsets) == 20).all()
    assert np.allclose(t.gpu_ns, 10_000_000, rtol=0.01)
    assert (t.effective_ns == t.gpu_ns).all() and set(t.bound.tolist()) == {"gpu"}
    st = step_stats(m)
    assert (st.kernel_count == 20).all() and (st.gpu_busy_pct > 99).all()


def test_cpu_bound_loop(tmp_path):
    ev, _ = loop(steps=6, kernels=20, kernel_us=2.0, launch_us=20.0)
    t = step_times(load(write(tmp_path, ev), use_cache=False).primary)
    assert (t.effective_ns == t.cpu_ns).all() and set(t.bound.tolist()) == {"cpu"}
    assert (t.gpu_ns <= t.cpu_ns).all()


def test_sync_and_data_bound(tmp_path):
    ev, _ = loop(steps=4, kernels=10, kernel_us=5.0, data_us=3000.0)
    assert set(step_times(load(write(tmp_path, ev), use_cache=False).primary).bound.tolist()) == {"data"}
    # a sync serialises both timelines; the GPU is busy most of the step: bound by the GPU, not the sync
    ev, _ = loop(steps=4, kernels=10, kernel_us=300.0, syncs=1)
    t = step_times(load(write(tmp_path, ev, "b.json"), use_cache=False).primary)
    assert set(t.bound.tolist()) == {"gpu"}
    # a sync after a short burst of GPU work while the CPU does long work after it
    ev, _ = loop(steps=4, kernels=10, kernel_us=300.0, syncs=1, launch_us=2.0, step_overhead_us=200)
    t = step_times(load(write(tmp_path, ev, "c.json"), use_cache=False).primary)
    assert (t.sync_ns > 0.5 * t.cpu_ns).all()


@pytest.mark.parametrize("name", ["gpu_issues.pt.trace.json.gz", "gpu_gpt_big.pt.trace.json.gz",
                                  "gpu_dataloader.pt.trace.json.gz", "gpu_compile_small.pt.trace.json.gz",
                                  "cpu_train.pt.trace.json.gz"])
def test_shared_traces(name):
    m = load(shared_trace(name)).primary
    t = step_times(m)
    assert (t.effective_ns >= t.cpu_ns).all() and (t.effective_ns >= t.gpu_ns).all()
    assert (t.gpu_busy_ns <= t.effective_ns).all()
    if name.startswith("gpu_"):
        assert (np.diff(t.work_offsets) > 0).all()  # every step launched GPU work
    if name == "gpu_dataloader.pt.trace.json.gz":
        assert set(t.bound.tolist()) == {"data"}
    # windows tile: each starts where the previous ended or later
    windows = t.windows()
    w0, w1 = windows.t0_ns, windows.t1_ns
    assert (w1 >= w0).all() and (w0[1:] >= w0[:-1]).all()
