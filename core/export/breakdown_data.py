"""Where step time goes, per step: the data of breakdown.png and of the report's step table.

GPU traces: each step's wall time is split exactly (categories add up to the step duration). With the
rules' `core.analysis.breakdown` (HTA-style) it is compute, communication kernels, memcpy and GPU idle
split by cause (DataLoader, torch.compile, collective wait, after a host sync, CPU not queuing work,
between kernels, other);
without it, by what the GPUs were doing in priority order: compute kernels, communication kernels
(core.trace.event_names.is_comm_kernel), memcpy, memset, idle. CPU-only traces: the step thread's time in DataLoader
`__next__`, optimizer `step`, other top-level ops, and untracked (Python / nothing profiled).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.analysis import steps
from core.analysis.intervals import Intervals
from core.export import figures
from core.export.figures import BarFigure, FigureSpec
from core.trace import event_names
from core.trace.model import Kind, TraceModel, TraceSet, TrackKind

GPU_CATEGORIES = (("compute kernels", "compute"), ("communication", "communication"), ("memcpy", "memcpy"),
                  ("memset", "memset"), ("GPU idle", "idle"))
# core.analysis.breakdown.StepBreakdown field -> (label, colour key)
HTA_CATEGORIES = (("compute_ns", "compute kernels", "compute"), ("comm_ns", "communication kernels", "communication"),
                  ("memcpy_ns", "memcpy / memset only", "memcpy"),
                  ("dataloader_ns", "idle: DataLoader", "dataloader"), ("compile_ns", "idle: torch.compile", "compile"),
                  ("comm_wait_ns", "idle: collective wait", "comm_wait"),
                  ("sync_wait_ns", "idle: after host sync", "sync_wait"),
                  ("host_wait_ns", "idle: CPU not queuing work", "host_wait"),
                  ("kernel_wait_ns", "idle: between kernels", "kernel_wait"),
                  ("other_idle_ns", "idle: other (long gaps, work queued)", "other_idle"))
CPU_CATEGORIES = (("DataLoader", "dataloader"), ("optimizer", "optimizer"), ("other ops", "other_ops"),
                  ("untracked", "untracked"))


@dataclass(frozen=True, slots=True)
class BreakdownBars:
    """One rank's stacked bars of breakdown.png: a (steps x labelled categories) matrix, drawn as it is (the
    per-step numbers themselves are core.analysis.breakdown.StepBreakdown)."""

    rank: int
    steps: np.ndarray  # int64 step numbers
    categories: tuple[tuple[str, str], ...]  # (label, colour key)
    values_ns: np.ndarray  # int64 (steps, categories); rows sum to the step duration
    gpu: bool
    busy_parts: int = 0  # GPU traces: the first busy_parts categories are GPU busy time, the rest idle

    @property
    def gpu_busy_ns(self) -> np.ndarray:
        return self.values_ns[:, : self.busy_parts].sum(axis=1)


def _name_mask(model: TraceModel, rows: np.ndarray, predicate) -> np.ndarray:
    """Per row of `rows`: its name satisfies `predicate` (a core.trace.event_names test)."""
    ids = np.unique(model.slices.name[rows])
    hit = [i for i in ids.tolist() if predicate(model.strings[i])]
    return np.isin(model.slices.name[rows], np.asarray(hit, dtype=np.int32))


def _split(model: TraceModel, groups: list[np.ndarray], w0: np.ndarray, w1: np.ndarray) -> np.ndarray:
    """Covered time per window of each group, earlier groups taking priority; last column = uncovered."""
    s = model.slices
    out = np.zeros((len(w0), len(groups) + 1), np.int64)
    taken = Intervals.empty()  # the time of the groups so far
    prev = np.zeros(len(w0), np.int64)
    for j, rows in enumerate(groups):
        taken = taken.merge(Intervals.union_of(s.ts_ns[rows], s.ts_ns[rows] + s.dur_ns[rows]))
        cov = taken.covered(w0, w1)
        out[:, j] = cov - prev
        prev = cov
    out[:, -1] = (w1 - w0) - prev
    return out


def _hta_breakdown(model: TraceModel) -> BreakdownBars | None:
    """The rules' breakdown (core.analysis.breakdown) in HTA's categories; None for a trace without GPU work."""
    from core.analysis import breakdown
    b = breakdown.step_breakdown(model)
    if not b.has_gpu:
        return None
    values = np.stack([np.asarray(getattr(b, f), np.int64) for f, _, _ in HTA_CATEGORIES], axis=1)
    return BreakdownBars(model.rank, np.asarray(b.number, np.int64), tuple((lab, key) for _, lab, key in HTA_CATEGORIES),
                         values, True, busy_parts=3)


def step_breakdown(model: TraceModel) -> BreakdownBars:
    if len(model.devices):
        hta = _hta_breakdown(model)
        if hta is not None:
            return hta
    windows = steps.breakdown_windows(model) if len(model.devices) else steps.step_windows(model)
    number, w0, w1 = windows.number, windows.t0_ns, windows.t1_ns
    s = model.slices
    if len(model.devices):
        kern = np.flatnonzero(s.kind == Kind.KERNEL)
        comm = _name_mask(model, kern, event_names.is_comm_kernel)
        groups = [kern[~comm], kern[comm], np.flatnonzero(s.kind == Kind.MEMCPY), np.flatnonzero(s.kind == Kind.MEMSET)]
        return BreakdownBars(model.rank, np.asarray(number, np.int64), GPU_CATEGORIES, _split(model, groups, w0, w1), True,
                             busy_parts=4)
    cpu_tracks = np.flatnonzero(model.tracks.kind == TrackKind.CPU_THREAD)
    main = _main_thread(model, cpu_tracks)
    rows = np.arange(*model.track_rows(main).indices(len(s))) if main >= 0 else np.zeros(0, np.int64)
    rows = rows[s.depth[rows] == 0]
    loader = _name_mask(model, rows, event_names.is_dataloader_next)
    optim = _name_mask(model, rows, event_names.is_optimizer_annotation)
    groups = [rows[loader], rows[optim & ~loader], rows[~loader & ~optim]]
    return BreakdownBars(model.rank, np.asarray(number, np.int64), CPU_CATEGORIES, _split(model, groups, w0, w1), False)


def _main_thread(model: TraceModel, cpu_tracks: np.ndarray) -> int:
    """The CPU thread with the most top-level op time (the training loop's thread)."""
    best, best_ns = -1, -1
    for t in cpu_tracks.tolist():
        r = model.track_rows(t)
        ns = int(model.slices.dur_ns[r][model.slices.depth[r] == 0].sum())
        if ns > best_ns:
            best, best_ns = t, ns
    return best


def breakdowns(ts: TraceSet) -> list[BreakdownBars]:
    """step_breakdown of every model (a run view: its workers computed them, core/ranks/views.py)."""
    got = getattr(ts, "report_parts", None)
    return got("breakdown") if got is not None else [step_breakdown(m) for m in ts.models]


def build(ts: TraceSet, spec: FigureSpec | None = None) -> BarFigure | None:
    spec = spec or FigureSpec()
    parts = breakdowns(ts)
    parts = [p for p in parts if len(p.steps)]
    if not parts:
        return None
    cats = parts[0].categories
    parts = [p for p in parts if p.categories == cats]
    multi = len(parts) > 1
    labels = tuple(f"{'r%d ' % p.rank if multi else ''}step {n}" if n >= 0 else "whole trace"
                   for p in parts for n in p.steps.tolist())
    values = np.concatenate([p.values_ns for p in parts]) / 1e6
    total = values.sum()
    shares = ", ".join(f"{lab} {100 * v / total:.0f} %" for (lab, _), v in zip(cats, values.sum(axis=0)) if v > 0)
    what = "GPU time per step" if parts[0].gpu else "main-thread time per step"
    return BarFigure(figures.header(ts, "where step time goes", f"{what} · {shares}"), spec, cats, labels, values)
