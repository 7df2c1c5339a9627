"""Per-step statistics: duration, GPU busy %, kernel counts, memory peak."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.analysis.derived import cached
from core.analysis.intervals import Intervals
from core.analysis.step_times import cpu_windows, step_times
from core.analysis.step_windows import StepWindows
from core.trace.model import GPU_KINDS, Kind, TraceModel


@dataclass(frozen=True, slots=True)
class StepStats:
    """One row per step window (ProfilerStep#N; or the whole trace as step -1 when there are none).

    GPU columns count the step's own GPU work (core.analysis.step_times: what its CPU ops launched,
    wherever it ran); busy % is of the effective step."""

    number: np.ndarray  # int64
    ts_ns: np.ndarray  # int64 CPU start
    dur_ns: np.ndarray  # int64 CPU span (ProfilerStep duration)
    gpu_busy_ns: np.ndarray  # int64: union of the step's own kernels/memcpy/memset on all streams
    gpu_busy_pct: np.ndarray  # float64 gpu_busy_ns / effective_ns
    kernel_count: np.ndarray  # int64 kernels of the step's own GPU work
    kernel_ns: np.ndarray  # int64 sum of their durations
    memcpy_ns: np.ndarray  # int64
    memset_ns: np.ndarray  # int64
    mem_peak_bytes: np.ndarray  # int64 peak total allocated (any device) in the window; -1 without memory events
    synthetic: bool = False  # True when the trace has no ProfilerStep and the window is the whole trace
    gpu_ts_ns: np.ndarray | None = None  # int64 first GPU activity of the step's work
    gpu_span_ns: np.ndarray | None = None  # int64 GPU span (0 without GPU work)
    effective_ns: np.ndarray | None = None  # int64 max(CPU span, GPU span)
    bound: np.ndarray | None = None  # gpu | cpu | sync | data

    def __len__(self) -> int:
        return len(self.number)


def step_windows(model: TraceModel) -> StepWindows:
    """The CPU step windows (ProfilerStep spans; the whole trace as step -1 without them)."""
    return cpu_windows(model)


def breakdown_windows(model: TraceModel) -> StepWindows:
    """The windows a GPU-side per-step split divides: each step's GPU span where it has
    GPU work, else its CPU window (core.analysis.step_times.StepTimes.windows)."""
    return step_times(model).windows()


def gpu_busy_union(model: TraceModel, device: int | None = None) -> Intervals:
    """Where any GPU kernel/memcpy/memset runs (optionally one device)."""
    def compute():
        s = model.slices
        gpu = np.flatnonzero(np.isin(s.kind, np.asarray(GPU_KINDS, dtype=np.int8)))
        if device is not None:
            gpu = gpu[s.at("device", gpu) == device]
        return Intervals.union_of(s.ts_ns[gpu], s.ts_ns[gpu] + s.dur_ns[gpu])
    return cached(model, f"gpu_busy:{device}", compute)


def step_stats(model: TraceModel) -> StepStats:
    return cached(model, "step_stats", lambda: _step_stats(model))


def _step_stats(model: TraceModel) -> StepStats:
    times = step_times(model)
    number, cpu_steps = times.number, times.cpu_windows()
    s = model.slices
    n_steps = len(number)
    rows, step = times.work_rows, times.work_step()
    kind = s.kind[rows]
    dur = s.dur_ns[rows]

    def per_kind(wanted: Kind, weights) -> np.ndarray:
        sel = kind == wanted
        return np.bincount(step[sel], weights=weights[sel] if weights is not None else None,
                           minlength=n_steps).astype(np.int64)

    kcount = per_kind(Kind.KERNEL, None)
    kns, cpy, mset = per_kind(Kind.KERNEL, dur), per_kind(Kind.MEMCPY, dur), per_kind(Kind.MEMSET, dur)
    eff = times.effective_ns
    pct = np.where(eff > 0, 100.0 * times.gpu_busy_ns / np.maximum(eff, 1), 0.0)
    # allocator events are host-side (the caching allocator runs on the CPU), so the CPU window holds them
    peak = np.full(n_steps, -1, dtype=np.int64)
    mem = model.memory
    cuda = mem.device_type != 0 if len(mem) else np.zeros(0, bool)
    if cuda.any():
        mts = mem.ts_ns[cuda]
        alloc = mem.total_allocated[cuda]
        lo = np.searchsorted(mts, cpu_steps.t0_ns, side="left")
        hi = np.searchsorted(mts, cpu_steps.t1_ns, side="right")
        for step, (first, stop) in enumerate(zip(lo.tolist(), hi.tolist())):
            if stop > first:
                peak[step] = int(alloc[first:stop].max())
    return StepStats(number=np.asarray(number, np.int64), ts_ns=cpu_steps.t0_ns.astype(np.int64), dur_ns=times.cpu_ns,
                     gpu_busy_ns=times.gpu_busy_ns, gpu_busy_pct=pct, kernel_count=kcount, kernel_ns=kns,
                     memcpy_ns=cpy, memset_ns=mset, mem_peak_bytes=peak, synthetic=times.synthetic,
                     gpu_ts_ns=times.gpu_t0_ns, gpu_span_ns=times.gpu_ns, effective_ns=eff, bound=times.bound)
