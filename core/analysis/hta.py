"""Adapter to Holistic Trace Analysis (traceinsight, `import hta`), imported lazily inside functions.

`run_hta(trace_set)` returns an `HtaReport` of named tables (pandas DataFrames): temporal breakdown,
idle-time breakdown, kernel breakdown (by type and top kernels), CUDA kernel launch stats and, for
multi-rank sets, communication/computation overlap. Nothing here raises: a missing package, a CPU-only
trace, a trace without ProfilerStep ranges, a trace too large, or any HTA exception (HTA 0.5/0.6 with
pandas 3 raised TypeError on some traces) becomes an `HtaResult` with `unavailable` set to the reason.
"""
from __future__ import annotations

import contextlib
import io
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.trace.model import GPU_KINDS, TraceSet

log = logging.getLogger(__name__)

ANALYSES = ("temporal_breakdown", "idle_time_breakdown", "kernel_breakdown", "top_kernels", "kernel_launch_stats",
            "comm_comp_overlap")
TITLES = {
    "temporal_breakdown": "Temporal breakdown (idle / compute / non-compute per rank)",
    "idle_time_breakdown": "Idle time breakdown (host wait / kernel wait / other per stream)",
    "kernel_breakdown": "Kernel breakdown by type (computation / communication / memory)",
    "top_kernels": "Top kernels",
    "kernel_launch_stats": "CUDA kernel launch stats (CPU launch vs GPU duration, launch delay)",
    "comm_comp_overlap": "Communication / computation overlap per rank",
}
# HTA's own loader needed 16 s / 1 GB RAM for 136 MB and 148 s / 7.6 GB for 1.15 GB (notes/perf.md);
# above this size the tab says so instead of freezing the machine. Override with max_bytes.
DEFAULT_MAX_BYTES = 400 * 2**20


@dataclass(frozen=True, slots=True)
class HtaResult:
    name: str
    title: str
    table: Any = None  # pandas.DataFrame
    unavailable: str | None = None  # why there is no table

    @property
    def ok(self) -> bool:
        return self.unavailable is None and self.table is not None


@dataclass(frozen=True, slots=True)
class HtaReport:
    results: dict[str, HtaResult] = field(default_factory=dict)
    unavailable: str | None = None  # set when HTA could not run at all
    load_s: float = 0.0

    def __getitem__(self, name: str) -> HtaResult:
        return self.results[name]


def _unavailable(reason: str) -> HtaReport:
    return HtaReport({n: HtaResult(n, TITLES[n], None, reason) for n in ANALYSES}, reason)


# HTA is the optional extra `.[hta]` (pyproject): traceinsight pulls in ~85 packages (jupyterlab, pandas, ...).
HTA_REQUIREMENTS = ("traceinsight>=0.5", "psutil>=5.9")
NOT_INSTALLED = ('HTA is not installed: it is the optional extra pip install "ptprof-gui[hta]" '
                 "(traceinsight, ~85 packages, ~320 MiB)")


def hta_installed() -> bool:
    """`import hta` would find the package (cheap: no import). Caches are invalidated, so a package
    installed while the app runs is seen."""
    import importlib
    import importlib.util
    importlib.invalidate_caches()
    try:
        return importlib.util.find_spec("hta") is not None
    except (ImportError, ValueError):
        return False


def install_command(python: str | None = None) -> list[str]:
    """The command that installs HTA into `python` (default: this interpreter, the app's)."""
    import sys
    return [python or sys.executable, "-m", "pip", "install", "--progress-bar", "off", *HTA_REQUIREMENTS]


def check_available(trace_set: TraceSet, max_bytes: int = DEFAULT_MAX_BYTES) -> str | None:
    """Why HTA cannot run on this trace set (None when it can). Cheap: no HTA import."""
    if not hta_installed():
        return NOT_INSTALLED
    models = trace_set.models
    if not models:
        return "no trace loaded"
    if not any(np.isin(m.slices.kind, np.asarray(GPU_KINDS, np.int8)).any() for m in models):
        return "CPU-only trace: HTA analyses GPU kernels and there are none"
    if not any(len(m.steps) for m in models):
        return "no ProfilerStep#N ranges: HTA needs profiler steps (call prof.step() every iteration)"
    files = _trace_files(trace_set)
    missing = [p for p in files.values() if not os.path.isfile(p)]
    if missing:
        return f"trace file not on disk: {missing[0]}"
    size = sum(decompressed_size(p) for p in files.values())
    if size > max_bytes:
        return (f"trace files are {size / 2**20:.0f} MiB, above the {max_bytes / 2**20:.0f} MiB limit for HTA "
                "(its pandas loader needs ~7 GB for 1 GB of trace); the built-in breakdown covers this trace")
    return None


def decompressed_size(path: str) -> int:
    """Bytes HTA's loader will parse: the gzip ISIZE trailer for .gz files (a 1 GB trace gzips to
    ~60 MB, so the file size would pass the guard), else the file size."""
    from pathlib import Path

    from core.trace.io import isize
    size = os.path.getsize(path)
    return max(isize(Path(path)) or 0, size)


def _trace_files(trace_set: TraceSet) -> dict[int, str]:
    files: dict[int, str] = {}
    for m in trace_set.models:
        files.setdefault(int(m.rank), str(m.path))
    return files


def run_hta(trace_set: TraceSet, analyses: tuple[str, ...] = ANALYSES, max_bytes: int = DEFAULT_MAX_BYTES,
            progress: Callable[[float, str], None] | None = None) -> HtaReport:
    """Run HTA's analyses. Never raises; see the module docstring."""
    reason = check_available(trace_set, max_bytes)
    if reason:
        return _unavailable(reason)
    files = _trace_files(trace_set)
    t0 = time.perf_counter()
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            from hta.trace_analysis import TraceAnalysis
            if progress:
                progress(0.05, "HTA: parsing trace")
            ta = TraceAnalysis(trace_files=files, trace_dir="/")
    except Exception as exc:  # noqa: BLE001 - HTA's failures are data, not crashes
        log.info("HTA load failed: %r", exc)
        return _unavailable(f"HTA failed to load the trace: {type(exc).__name__}: {exc}"[:300])
    load_s = time.perf_counter() - t0
    ranks = sorted(files)
    results: dict[str, HtaResult] = {}
    steps = [n for n in ANALYSES if n in analyses]
    for k, name in enumerate(steps):
        if progress:
            progress(0.3 + 0.7 * k / max(len(steps), 1), f"HTA: {TITLES[name]}")
        if name == "comm_comp_overlap" and len(ranks) < 2:
            results[name] = HtaResult(name, TITLES[name], None, "single rank: no communication to overlap")
            continue
        try:
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                table = _RUNNERS[name](ta, ranks)
            results[name] = HtaResult(name, TITLES[name], table, None if table is not None else "HTA returned nothing")
        except Exception as exc:  # noqa: BLE001
            log.info("HTA %s failed: %r", name, exc)
            results[name] = HtaResult(name, TITLES[name], None, f"HTA failed: {type(exc).__name__}: {exc}"[:300])
    for name in ANALYSES:
        results.setdefault(name, HtaResult(name, TITLES[name], None, "not requested"))
    return HtaReport(results, None, load_s)


def _temporal(ta, ranks):
    return ta.get_temporal_breakdown(visualize=False)


def _idle(ta, ranks):
    df, _ = ta.get_idle_time_breakdown(ranks=ranks, visualize=False)
    return df


def _kernels(ta, ranks):
    by_type, _ = ta.get_gpu_kernel_breakdown(visualize=False)
    return by_type


def _top_kernels(ta, ranks):
    _, top = ta.get_gpu_kernel_breakdown(visualize=False)
    return top


def _launch(ta, ranks):
    import pandas as pd
    per_rank = ta.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False)
    frames = [df.assign(rank=r) for r, df in per_rank.items() if df is not None]
    return pd.concat(frames, ignore_index=True) if frames else None


def _overlap(ta, ranks):
    return ta.get_comm_comp_overlap(visualize=False)


_RUNNERS = {"temporal_breakdown": _temporal, "idle_time_breakdown": _idle, "kernel_breakdown": _kernels,
            "top_kernels": _top_kernels, "kernel_launch_stats": _launch, "comm_comp_overlap": _overlap}


def launch_summary(table) -> dict[str, float]:
    """A few numbers from the launch-stats table: kernels, share shorter than their launch, median delay (µs)."""
    if table is None or not len(table):
        return {}
    cpu = table["cpu_duration"].to_numpy(dtype=float)
    gpu = table["gpu_duration"].to_numpy(dtype=float)
    delay = table["launch_delay"].to_numpy(dtype=float)
    return {"launches": float(len(table)), "gpu_shorter_than_launch_pct": float(100.0 * np.mean(gpu < cpu)),
            "median_launch_delay_us": float(np.median(delay)), "median_cpu_launch_us": float(np.median(cpu))}
