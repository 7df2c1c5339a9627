"""Per-step statistics: duration, GPU busy %, kernel counts, memory peak."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.analysis import intervals
from core.analysis.derived import cached
from core.trace.model import GPU_KINDS, Kind, TraceModel


@dataclass(frozen=True, slots=True)
class StepStats:
    """One row per step window (ProfilerStep#N; or the whole trace as step -1 when there are none)."""

    number: np.ndarray  # int64
    ts_ns: np.ndarray  # int64
    dur_ns: np.ndarray  # int64
    gpu_busy_ns: np.ndarray  # int64: union of kernels/memcpy/memset on all streams inside the window
    gpu_busy_pct: np.ndarray  # float64
    kernel_count: np.ndarray  # int64 kernels starting in the window
    kernel_ns: np.ndarray  # int64 sum of kernel durations starting in the window
    memcpy_ns: np.ndarray  # int64
    memset_ns: np.ndarray  # int64
    mem_peak_bytes: np.ndarray  # int64 peak total allocated (any device) in the window; -1 without memory events
    synthetic: bool = False  # True when the trace has no ProfilerStep and the window is the whole trace

    def __len__(self) -> int:
        return len(self.number)


def step_windows(model: TraceModel) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """(number, t0_ns, t1_ns, synthetic)."""
    st = model.steps
    if len(st):
        return st.number, st.ts_ns, st.ts_ns + st.dur_ns, False
    t0, t1 = model.span_ns
    return np.array([-1]), np.array([t0], np.int64), np.array([t1], np.int64), True


def gpu_busy_union(model: TraceModel, device: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint sorted intervals where any GPU kernel/memcpy/memset runs (optionally one device)."""
    def compute():
        s = model.slices
        m = np.isin(s.kind, np.asarray(GPU_KINDS, dtype=np.int8))
        if device is not None:
            m &= s.device == device
        return intervals.union(s.ts_ns[m], s.ts_ns[m] + s.dur_ns[m])
    return cached(model, f"gpu_busy:{device}", compute)


def _sum_in_windows(ts: np.ndarray, values: np.ndarray, w0: np.ndarray, w1: np.ndarray) -> np.ndarray:
    order = np.argsort(ts, kind="stable")
    ts, values = ts[order], values[order]
    cum = np.concatenate([[0], np.cumsum(values)])
    return cum[np.searchsorted(ts, w1, side="left")] - cum[np.searchsorted(ts, w0, side="left")]


def step_stats(model: TraceModel) -> StepStats:
    return cached(model, "step_stats", lambda: _step_stats(model))


def _step_stats(model: TraceModel) -> StepStats:
    number, w0, w1, synthetic = step_windows(model)
    s = model.slices
    dur = w1 - w0
    us, ue = gpu_busy_union(model)
    busy = intervals.covered(us, ue, w0, w1)
    pct = np.where(dur > 0, 100.0 * busy / np.maximum(dur, 1), 0.0)

    def per_kind(kind: Kind) -> tuple[np.ndarray, np.ndarray]:
        m = s.kind == kind
        ts = s.ts_ns[m]
        return (_sum_in_windows(ts, np.ones(len(ts), np.int64), w0, w1),
                _sum_in_windows(ts, s.dur_ns[m], w0, w1))

    kcount, kns = per_kind(Kind.KERNEL)
    _, cpy = per_kind(Kind.MEMCPY)
    _, mset = per_kind(Kind.MEMSET)
    peak = np.full(len(number), -1, dtype=np.int64)
    mem = model.memory
    cuda = mem.device_type != 0 if len(mem) else np.zeros(0, bool)
    if cuda.any():
        mts = mem.ts_ns[cuda]
        alloc = mem.total_allocated[cuda]
        lo = np.searchsorted(mts, w0, side="left")
        hi = np.searchsorted(mts, w1, side="right")
        for i, (a, b) in enumerate(zip(lo.tolist(), hi.tolist())):
            if b > a:
                peak[i] = int(alloc[a:b].max())
    return StepStats(number=np.asarray(number, np.int64), ts_ns=w0.astype(np.int64), dur_ns=dur.astype(np.int64),
                     gpu_busy_ns=busy.astype(np.int64), gpu_busy_pct=pct, kernel_count=kcount.astype(np.int64),
                     kernel_ns=kns.astype(np.int64), memcpy_ns=cpy.astype(np.int64), memset_ns=mset.astype(np.int64),
                     mem_peak_bytes=peak, synthetic=synthetic)
