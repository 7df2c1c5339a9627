"""Steps on the GPU timeline: each step's own GPU work, its GPU span, the effective step and what bounds it.

A step's GPU work = the kernels / memcpy / memset launched (LAUNCH flows, i.e. correlation ids) from CPU
calls inside that `ProfilerStep#N`, wherever they run in time: a GPU that lags behind the CPU runs step
N's kernels during the CPU's step N+3, and they are still step N's. GPU rows without a launch flow take
the step of the previous launched row on their stream (else the CPU window they start in).
GPU span of step N = first GPU activity of step N -> first of step N+1 when that work was already
launched when step N's GPU work ended (the GPU went straight on: a GPU-bound pipeline), else -> step N's
last activity (the GPU then waited for the CPU, which the CPU span holds); the last step: its last activity.
Kineto's GPU-side `ProfilerStep#N` annotations are not used: on the H200 pairs (tests/data/device) the
only one, ProfilerStep#7 of gemm_bf16, spans 72.6 ms for a 17.4 ms step (it covers the backlog the
GPU ran first), and later steps have none. The effective step = max(CPU span, GPU span): in a pipelined loop the slower side
sets the throughput. `bound` names that side: gpu (the GPU span is longer, or the GPU is busy through
most of its span), else data (DataLoader `__next__` holds much of the CPU span), sync (the CPU is blocked
in host syncs much of its span), cpu. Thresholds: resources/rules.toml [steps].
Every per-step statistic (core.analysis.steps.step_stats, the breakdown's windows, the critical path)
reads this one `StepTimes`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core import resource_files
from core.analysis.derived import cached
from core.analysis.intervals import Intervals
from core.analysis.rows import kind_rows, launch_src_ts, named_rows_matching
from core.analysis.step_windows import StepWindows
from core.trace import event_names
from core.trace.model import GPU_KINDS, Kind, TraceModel

BOUNDS = ("gpu", "cpu", "sync", "data")


@dataclass(frozen=True, slots=True)
class StepTimes:
    """One row per step (ProfilerStep#N; step -1 = the whole trace when it has none)."""

    number: np.ndarray  # int64
    cpu_t0_ns: np.ndarray  # int64 ProfilerStep start
    cpu_ns: np.ndarray  # int64 ProfilerStep duration (CPU span)
    gpu_t0_ns: np.ndarray  # int64 first GPU activity of the step's own work (cpu_t0_ns when it has none)
    gpu_ns: np.ndarray  # int64 GPU span (0 without GPU work)
    effective_ns: np.ndarray  # int64 max(cpu_ns, gpu_ns)
    bound: np.ndarray  # <U4: gpu | cpu | sync | data
    gpu_busy_ns: np.ndarray  # int64 union of the step's own GPU work
    sync_ns: np.ndarray  # int64 CPU time blocked in host syncs / blocking copies inside the CPU span
    data_ns: np.ndarray  # int64 CPU time in DataLoader __next__ inside the CPU span
    work_rows: np.ndarray  # int64 GPU slice rows, grouped by step (CSR with work_offsets), by start time
    work_offsets: np.ndarray  # int64 len n+1
    synthetic: bool
    has_gpu: bool

    def __len__(self) -> int:
        return len(self.number)

    @property
    def cpu_t1_ns(self) -> np.ndarray:
        return self.cpu_t0_ns + self.cpu_ns

    @property
    def gpu_t1_ns(self) -> np.ndarray:
        return self.gpu_t0_ns + self.gpu_ns

    def cpu_windows(self) -> StepWindows:
        """The CPU step windows (ProfilerStep spans) the steps were measured in."""
        return StepWindows(self.number, self.cpu_t0_ns, self.cpu_t1_ns, self.synthetic)

    def work(self, step_index: int) -> np.ndarray:
        """GPU rows of one step."""
        return self.work_rows[self.work_offsets[step_index]:self.work_offsets[step_index + 1]]

    def work_step(self) -> np.ndarray:
        """Step index of each row of work_rows."""
        return np.repeat(np.arange(len(self.number)), np.diff(self.work_offsets))

    def windows(self) -> StepWindows:
        """Windows that tile the GPU timeline, what GPU-side per-step splits
        (core.analysis.breakdown) divide: a step with GPU work from its first GPU activity to the next step's
        (the last one: for its effective duration), including the idle while the GPU waited for the CPU;
        a step without GPU work keeps its CPU window."""
        has = self.gpu_ns > 0
        t0 = np.where(has, self.gpu_t0_ns, self.cpu_t0_ns)
        t1 = t0 + self.effective_ns
        if len(t0) > 1:
            nxt = t0[1:]
            tile = has[:-1] & has[1:] & (nxt > t0[:-1])
            t1[:-1] = np.where(tile, nxt, t1[:-1])
        return StepWindows(self.number, t0, t1, self.synthetic)


def cpu_windows(model: TraceModel) -> StepWindows:
    """The ProfilerStep windows, or the whole trace as step -1 (synthetic)."""
    st = model.steps
    if len(st):
        return StepWindows.of(st.number, st.ts_ns, st.ts_ns + st.dur_ns, False)
    span_t0, span_t1 = model.span_ns
    return StepWindows.of([-1], [span_t0], [span_t1], True)


_TOML_STEPS: dict | None = None


def _toml_steps() -> dict:
    """resources/rules.toml [steps]: the thresholds when no config is passed (and under a config's own)."""
    global _TOML_STEPS
    if _TOML_STEPS is None:
        _TOML_STEPS = dict(resource_files.load_toml("rules.toml")["steps"])
    return _TOML_STEPS


def step_times(model: TraceModel, config: dict | None = None) -> StepTimes:
    """StepTimes of a model (cached); thresholds from `config["steps"]`, else resources/rules.toml [steps]."""
    if config is None:
        cfg = _toml_steps()
    else:
        cfg = {**_toml_steps(), **config.get("steps", {})}
    key = f"step_times:{sorted(cfg.items())}"
    return cached(model, key, lambda: _step_times(model, cfg))


def gpu_step_of_rows(model: TraceModel, gpu_rows: np.ndarray, windows: StepWindows) -> np.ndarray:
    """Step index (-1: none) of each GPU row: the CPU step its launch call is in; rows without a launch flow
    take the previous launched row's step on their stream; before the first one they are backlog from before
    the window (-1); on a stream without launch flows, the step their own start falls in."""
    s = model.slices
    launch_ts = launch_src_ts(model, gpu_rows, -1)
    step = np.where(launch_ts >= 0, windows.index_of(np.maximum(launch_ts, 0)), -1)
    linked = launch_ts >= 0
    # forward fill along each stream (gpu_rows are in (track, ts) order): unlinked rows inherit
    order = np.lexsort((s.ts_ns[gpu_rows], s.track[gpu_rows]))
    track = s.track[gpu_rows][order]
    last_linked = np.where(linked[order], np.arange(len(order)), -1)
    last_linked = np.maximum.accumulate(last_linked) if len(last_linked) else last_linked
    same_track = (last_linked >= 0) & (track[np.maximum(last_linked, 0)] == track)
    # a stream with launch flows: its unlinked rows before the first linked one are backlog launched before
    # the window (warm-up steps the GPU was still running): no step's work. A stream without any: own start
    linked_tracks = np.unique(track[linked[order]])
    flows_on_track = np.isin(track, linked_tracks)
    fallback = np.where(flows_on_track, -1, windows.index_of(s.ts_ns[gpu_rows][order]))
    filled = np.where(same_track, step[order][np.maximum(last_linked, 0)], fallback)
    out = np.empty(len(gpu_rows), np.int64)
    out[order] = np.where(linked[order], step[order], filled)
    return out


def _grouped_union_total(group: np.ndarray, start: np.ndarray, end: np.ndarray, n: int) -> np.ndarray:
    """Per group: length of the union of its intervals (groups kept apart by an offset per group)."""
    if not len(group):
        return np.zeros(n, np.int64)
    lo = int(start.min())
    width = int(end.max()) - lo + 1
    offset = group.astype(np.int64) * width - lo
    merged = Intervals.union_of(start + offset, end + offset)
    return np.bincount(merged.start_ns // width, weights=(merged.end_ns - merged.start_ns), minlength=n).astype(np.int64)


def _cpu_named_time(model: TraceModel, predicate, kinds, windows: StepWindows) -> np.ndarray:
    s = model.slices
    rows = named_rows_matching(model, predicate, kinds)
    return Intervals.union_of(s.ts_ns[rows], s.ts_ns[rows] + s.dur_ns[rows]).covered(windows.t0_ns, windows.t1_ns)


def _step_times(model: TraceModel, cfg: dict) -> StepTimes:
    windows = cpu_windows(model)
    number, t0, t1 = windows.number, windows.t0_ns, windows.t1_ns
    n_steps = len(number)
    s = model.slices
    gpu = kind_rows(model, GPU_KINDS)
    step = gpu_step_of_rows(model, gpu, windows) if len(gpu) else np.zeros(0, np.int64)
    keep = step >= 0
    gpu, step = gpu[keep], step[keep]
    order = np.lexsort((s.ts_ns[gpu], step))
    gpu, step = gpu[order], step[order]
    offsets = np.concatenate([[0], np.cumsum(np.bincount(step, minlength=n_steps))]).astype(np.int64)
    counts = np.diff(offsets)
    has = counts > 0
    gpu_start, gpu_end = s.ts_ns[gpu], s.ts_ns[gpu] + s.dur_ns[gpu]  # per row, not a union
    first = np.where(has, gpu_start[np.minimum(offsets[:-1], max(len(gpu) - 1, 0))] if len(gpu) else 0, t0)
    last_end = np.zeros(n_steps, np.int64)
    if len(gpu):
        np.maximum.at(last_end, step, gpu_end)
    gpu_t0 = np.where(has, first, t0).astype(np.int64)
    # span: to the next step's first GPU activity when the GPU went on to it without waiting for the CPU (that
    # work was launched before this step's GPU work ended), else to this step's last activity: GPU idle that
    # waits for the CPU is the CPU span's, not the GPU's (a compile before the next step's first launch)
    first_launch = np.full(n_steps, np.iinfo(np.int64).max, np.int64)
    if len(gpu):
        np.minimum.at(first_launch, step, launch_src_ts(model, gpu, np.iinfo(np.int64).max))
    nxt = np.full(n_steps, -1, np.int64)
    if n_steps > 1:
        queued = has[1:] & (first_launch[1:] <= last_end[:-1])
        nxt[:-1] = np.where(queued, gpu_t0[1:], -1)
    gpu_t1 = np.where(nxt >= gpu_t0, np.maximum(nxt, last_end), last_end)
    gpu_ns = np.where(has, np.maximum(gpu_t1 - gpu_t0, 0), 0).astype(np.int64)
    cpu_ns = (t1 - t0).astype(np.int64)
    effective = np.maximum(cpu_ns, gpu_ns)
    busy = _grouped_union_total(step, gpu_start, gpu_end, n_steps)
    sync_ns = _cpu_named_time(model, event_names.is_blocking_call, [Kind.RUNTIME], windows)
    data_ns = _cpu_named_time(model, event_names.is_dataloader_next,
                              [Kind.CPU_OP, Kind.ANNOTATION, Kind.OTHER, Kind.PYTHON], windows)
    bound = _bound(cfg, cpu_ns, gpu_ns, busy, sync_ns, data_ns, has)
    return StepTimes(number=number, cpu_t0_ns=t0, cpu_ns=cpu_ns, gpu_t0_ns=gpu_t0, gpu_ns=gpu_ns,
                     effective_ns=effective.astype(np.int64), bound=bound, gpu_busy_ns=busy,
                     sync_ns=sync_ns.astype(np.int64), data_ns=data_ns.astype(np.int64), work_rows=gpu.astype(np.int64),
                     work_offsets=offsets, synthetic=windows.synthetic, has_gpu=bool(len(gpu)))


def _bound(cfg: dict, cpu_ns, gpu_ns, busy, sync_ns, data_ns, has) -> np.ndarray:
    busy_pct = float(cfg["gpu_busy_bound_pct"])
    share_pct = float(cfg["cpu_share_bound_pct"])
    longer_pct = float(cfg["gpu_longer_pct"])
    cpu = np.maximum(cpu_ns, 1)
    gpu_side = has & ((gpu_ns * 100 > cpu_ns * (100 + longer_pct)) |
                      (busy * 100 >= np.maximum(np.maximum(cpu_ns, gpu_ns), 1) * busy_pct))
    data = data_ns * 100 >= cpu * share_pct
    sync = sync_ns * 100 >= cpu * share_pct
    return np.where(gpu_side, "gpu", np.where(data & (data_ns >= sync_ns), "data", np.where(sync, "sync", "cpu")))
