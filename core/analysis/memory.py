"""Memory over time per device from `[memory]` events (profile_memory=True), with peaks.

`Total Allocated` / `Total Reserved` in a `[memory]` event are the caching allocator's totals for the
event's device after that allocation or free, so a device's series is its events in time order.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.analysis.derived import cached
from core.trace.model import TraceModel

CPU_DEVICE_TYPE = 0


@dataclass(frozen=True, slots=True)
class DeviceMemory:
    device: int  # CUDA device id, -1 for host memory
    label: str  # "GPU 0", "CPU"
    ts_ns: np.ndarray  # int64, time ordered
    allocated_bytes: np.ndarray  # int64
    reserved_bytes: np.ndarray  # int64
    peak_allocated_bytes: int
    peak_ts_ns: int
    peak_reserved_bytes: int
    total_bytes: int | None  # device memory from deviceProperties (None for CPU / unknown)

    @property
    def peak_pct_of_total(self) -> float | None:
        if not self.total_bytes:
            return None
        return 100.0 * self.peak_reserved_bytes / self.total_bytes


def memory_series(model: TraceModel, include_cpu: bool = False) -> list[DeviceMemory]:
    """One series per device with [memory] events; GPUs first (CPU only when asked). Memoised per model
    (the window asks three times while a trace opens; the load worker fills it: gui/load_process.py)."""
    return list(cached(model, f"memory_series:{bool(include_cpu)}", lambda: _memory_series(model, include_cpu)))


def _memory_series(model: TraceModel, include_cpu: bool) -> list[DeviceMemory]:
    mem = model.memory
    if len(mem) == 0:
        return []
    is_cpu = mem.device_type == CPU_DEVICE_TYPE
    dev = np.where(is_cpu, -1, mem.device.astype(np.int64))
    out = []
    for d in sorted(set(dev.tolist()), key=lambda x: (x < 0, x)):
        if d < 0 and not include_cpu:
            continue
        sel = np.flatnonzero(dev == d)
        sel = sel[np.argsort(mem.ts_ns[sel], kind="stable")]
        alloc, res = mem.total_allocated[sel], mem.total_reserved[sel]
        k = int(np.argmax(alloc))
        out.append(DeviceMemory(
            device=int(d), label="CPU" if d < 0 else f"GPU {d}", ts_ns=mem.ts_ns[sel],
            allocated_bytes=alloc, reserved_bytes=res, peak_allocated_bytes=int(alloc[k]),
            peak_ts_ns=int(mem.ts_ns[sel][k]), peak_reserved_bytes=int(res.max()),
            total_bytes=None if d < 0 else model.meta.device_total_memory(int(d))))
    return out


def peak_in_range(series: DeviceMemory, t0_ns: int, t1_ns: int) -> int:
    """Highest allocated bytes during [t0, t1] (the level carried into t0 counts)."""
    ts = series.ts_ns
    a = max(0, int(np.searchsorted(ts, t0_ns, side="right")) - 1)
    b = int(np.searchsorted(ts, t1_ns, side="right"))
    if b <= a:
        return 0
    return int(series.allocated_bytes[a:b].max())


def step_peaks(series: DeviceMemory, step_ts_ns: np.ndarray, step_dur_ns: np.ndarray) -> np.ndarray:
    """Peak allocated bytes per step window (vectorised with reduceat over the series)."""
    if len(step_ts_ns) == 0 or len(series.ts_ns) == 0:
        return np.zeros(len(step_ts_ns), np.int64)
    ts = series.ts_ns
    a = np.maximum(0, np.searchsorted(ts, step_ts_ns, side="right") - 1)
    b = np.searchsorted(ts, step_ts_ns + step_dur_ns, side="right")
    b = np.maximum(b, a + 1)
    out = np.array([series.allocated_bytes[x:y].max() for x, y in zip(a.tolist(), b.tolist())], np.int64)
    return out


@dataclass(frozen=True, slots=True)
class CounterSeries:
    name: str  # "gpu0/gpu_util"
    ts_ns: np.ndarray
    value: np.ndarray


def counter_series(table, strings) -> list[CounterSeries]:
    """Split a CounterTable (e.g. TraceSet.nvml) into one time-ordered series per name."""
    if table is None or len(table) == 0:
        return []
    out = []
    for sid in np.unique(table.series).tolist():
        sel = np.flatnonzero(table.series == sid)
        sel = sel[np.argsort(table.ts_ns[sel], kind="stable")]
        out.append(CounterSeries(strings[sid], table.ts_ns[sel], table.value[sel]))
    return out
