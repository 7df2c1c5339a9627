"""Critical path of each step: a replay of the step as a CPU timeline feeding GPU stream queues.

The dependency graph, on the columnar model (no per-event objects):
  - CPU: the measured CPU timeline in order, with the time host syncs spent *waiting* taken out
    (`compressed` clock); every CPU event keeps its place on it;
  - launch -> GPU op: a kernel / memcpy / memset becomes ready `latency_ns` after its launch call;
  - stream order: ops of one stream run one after the other in launch order (`gap_ns` apart at least);
  - host syncs (cudaDevice/Stream/EventSynchronize, blocking cudaMemcpy, pageable copies' calls) -> the
    GPU work launched before them: the CPU resumes when that work has ended;
  - DataLoader `__next__` and collectives are CPU time on that clock (a collective's wait is a sync
    when it synchronises the stream).
Replay (`simulate`): walk the syncs in order; between two syncs the CPU runs free, so each stream's
queue is one max-plus scan (start_k = max(ready_k, start_{k-1} + dur_{k-1} + gap)); at a sync the CPU
clock moves to the end of the GPU work it waits for. Per step the replay gives the CPU span, the GPU
span (same rule as core.analysis.step_times) and the effective step = max of both.
`validate` compares the unedited replay with the measured steps; a what-if (a rule's `WhatIf`, core/rules/whatif.py) is
an `Edit` of the replay's inputs, and its saving is baseline replay - edited replay, per step.
Cross-stream waits: a cudaStreamWaitEvent call makes the next op its thread launches on the waiting stream
(the stream of CUPTI's "Stream Wait Event" record with the call's correlation, when the runner recorded
sync events; else the stream of that next op) wait for the work the matching cudaEventRecord captured:
the last op the recording thread launched before the record call (the latest record on the waiting call's
thread before it; Kineto writes no event ids on the record calls). Kineto leaves the record's stream and
correlation unset (-1) in its sync records, hence the matching by thread and order.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from core.analysis.derived import cached
from core.analysis.intervals import Intervals
from core.analysis.step_times import StepTimes, step_times
from core.trace import event_names
from core.trace.model import FlowKind, Kind, TraceModel

DEFAULT_LATENCY_NS = 5_000  # launch -> start when the GPU is idle, when the trace shows no idle launch
DEFAULT_GAP_NS = 1_000  # kernel -> next queued kernel, when the trace shows none
EMPTY = np.zeros(0, np.int64)


@dataclass(frozen=True, slots=True)
class Edit:
    """What a fix changes in the replay. Arrays of slice rows; all optional."""

    label: str = ""
    scale_rows: np.ndarray = field(default_factory=lambda: EMPTY)  # GPU rows whose duration is scaled
    scale: np.ndarray = field(default_factory=lambda: np.zeros(0))  # factor per row (0 removes the op)
    cut_start_ns: np.ndarray = field(default_factory=lambda: EMPTY)  # CPU time removed from the timeline
    cut_end_ns: np.ndarray = field(default_factory=lambda: EMPTY)
    unblock_rows: np.ndarray = field(default_factory=lambda: EMPTY)  # sync calls that no longer wait
    chain_rows: np.ndarray = field(default_factory=lambda: EMPTY)  # GPU rows made ready with their group's first
    chain_group: np.ndarray = field(default_factory=lambda: EMPTY)

    def __add__(self, other: Edit) -> Edit:
        groups = other.chain_group + (int(self.chain_group.max()) + 1 if len(self.chain_group) else 0)
        return Edit(label=" + ".join(x for x in (self.label, other.label) if x),
                    scale_rows=np.concatenate([self.scale_rows, other.scale_rows]),
                    scale=np.concatenate([self.scale, other.scale]),
                    cut_start_ns=np.concatenate([self.cut_start_ns, other.cut_start_ns]),
                    cut_end_ns=np.concatenate([self.cut_end_ns, other.cut_end_ns]),
                    unblock_rows=np.concatenate([self.unblock_rows, other.unblock_rows]),
                    chain_rows=np.concatenate([self.chain_rows, other.chain_rows]),
                    chain_group=np.concatenate([self.chain_group, groups]))


@dataclass(frozen=True, slots=True)
class Replay:
    """Inputs of the replay of one model: GPU ops in launch order and host syncs in time order."""

    times: StepTimes
    op_rows: np.ndarray  # GPU slice rows (the steps' own work), in launch order
    op_track: np.ndarray
    op_launch_ns: np.ndarray  # measured launch call start (GPU start - latency when unlinked)
    op_dur_ns: np.ndarray
    op_step: np.ndarray
    sync_rows: np.ndarray  # blocking calls inside the steps, by start
    sync_ts_ns: np.ndarray
    sync_wait_ns: np.ndarray  # measured wait: until the awaited GPU work ended (<= the call's duration)
    latency_ns: int  # median launch latency (onto an idle stream)
    gap_ns: int  # median gap between queued ops
    op_latency_ns: np.ndarray  # per op: its measured latency when it was launched onto an idle stream, else the median
    op_gap_ns: np.ndarray  # per op: its measured gap after the previous op when it was queued, else the median
    dep_dst: np.ndarray = field(default_factory=lambda: EMPTY)  # cross-stream waits: op index that waits ...
    dep_src: np.ndarray = field(default_factory=lambda: EMPTY)  # ... for the end of this op index


@dataclass(frozen=True, slots=True)
class ReplayResult:
    cpu_ns: np.ndarray  # per step
    gpu_ns: np.ndarray
    effective_ns: np.ndarray
    op_start_ns: np.ndarray  # replayed start of each op (Replay.op_rows order)
    op_end_ns: np.ndarray


def replay_input(model: TraceModel) -> Replay:
    return cached(model, "critical_path:replay", lambda: _replay_input(model))


def _replay_input(model: TraceModel) -> Replay:
    times = step_times(model)
    s, flows = model.slices, model.flows
    rows = times.work_rows
    step = times.work_step()
    launch = flows.kind == FlowKind.LAUNCH
    call_of = np.full(len(s), -1, np.int64)
    call_of[flows.dst[launch]] = flows.src[launch]
    launch_call = call_of[rows]
    linked = launch_call >= 0
    track = s.track[rows]
    ts, dur = s.ts_ns[rows], s.dur_ns[rows]
    launch_ts = np.where(linked, s.ts_ns[np.maximum(launch_call, 0)], ts)
    latency, gap = _latency(track, launch_ts, ts, dur, linked)
    launch_ts = np.where(linked, launch_ts, ts - latency)
    order = np.lexsort((ts, launch_ts))
    rows, track, launch_ts, dur, step, ts = rows[order], track[order], launch_ts[order], dur[order], step[order], ts[order]
    op_lat, op_gap = _per_op_delays(track, launch_ts, ts, dur, latency, gap)
    # blocking calls inside the CPU steps: syncs, blocking cudaMemcpy, and the calls of pageable copies
    blocking = np.isin(s.name, model.strings.ids_matching(event_names.is_blocking_call)) & (s.kind == Kind.RUNTIME)
    pageable = model.strings.ids_matching(event_names.is_pageable_copy)
    pageable_launch = launch & np.isin(s.name[flows.dst], pageable) & (s.kind[flows.dst] == Kind.MEMCPY)
    blocking[flows.src[pageable_launch]] = True
    sync = np.flatnonzero(blocking)
    if not times.synthetic and len(sync):
        sync = sync[times.cpu_windows().index_of(s.ts_ns[sync]) >= 0]
    sync = sync[np.argsort(s.ts_ns[sync], kind="stable")]
    sync_ts = s.ts_ns[sync]
    # measured wait: until the GPU work launched up to the call had ended (a call's own copy included)
    latest_end = np.maximum.accumulate(ts + dur) if len(rows) else EMPTY  # of the ops launched so far
    launched = np.searchsorted(launch_ts, sync_ts, side="right")  # ops launched before each sync call
    awaited = np.where(launched > 0, latest_end[np.maximum(launched - 1, 0)] if len(rows) else 0, sync_ts)
    wait = np.clip(awaited - sync_ts, 0, s.dur_ns[sync])
    launch_thread = np.where(linked, s.track[np.maximum(launch_call, 0)], -1)[order]
    dep_dst, dep_src = _stream_waits(model, rows, track, launch_ts, launch_thread)
    return Replay(times, rows, track, launch_ts, dur, step, sync, sync_ts, wait.astype(np.int64), latency, gap,
                  op_lat, op_gap, dep_dst, dep_src)


WAIT_CALLS = frozenset({"cudaStreamWaitEvent", "cuStreamWaitEvent"})
RECORD_CALLS = frozenset({"cudaEventRecord", "cudaEventRecordWithFlags", "cuEventRecord", "cuEventRecordWithFlags"})


def _stream_waits(model: TraceModel, rows, track, launch_ts, launch_thread) -> tuple[np.ndarray, np.ndarray]:
    """Cross-stream dependencies (see the module doc): (waiting op, awaited op) index pairs into the replay's
    op arrays, or empty ones when the trace has no cudaStreamWaitEvent calls."""
    s = model.slices
    runtime = s.kind == Kind.RUNTIME
    waits = np.flatnonzero(runtime & np.isin(s.name, model.strings.ids_matching(lambda n: n in WAIT_CALLS)))
    if not len(waits) or not len(rows):
        return EMPTY, EMPTY
    records = np.flatnonzero(runtime & np.isin(s.name, model.strings.ids_matching(lambda n: n in RECORD_CALLS)))
    # the waiting stream, from CUPTI's sync record of the call (same correlation) when there is one
    sync_rec = np.flatnonzero(np.isin(s.name, model.strings.ids_matching(lambda n: n == "Stream Wait Event")))
    stream_of_corr = dict(zip(s.at("correlation", sync_rec).tolist(), s.at("stream", sync_rec).tolist())) \
        if len(sync_rec) else {}
    gpu_tracks = {int(t): int(model.tracks.tid[t]) for t in np.unique(track).tolist()}
    dst_l, src_l = [], []
    for thread in np.unique(s.track[waits]).tolist():
        thread_waits = waits[s.track[waits] == thread]
        thread_records = records[s.track[records] == thread] if len(records) else records
        if not len(thread_records):
            continue
        record_ts = np.sort(s.ts_ns[thread_records])
        mine = np.flatnonzero(launch_thread == thread)  # ops this thread launched, in launch order
        if not len(mine):
            continue
        mine_ts = launch_ts[mine]
        for row in thread_waits.tolist():
            wait_ts = int(s.ts_ns[row])
            record = np.searchsorted(record_ts, wait_ts, side="left") - 1  # the latest record before the wait
            if record < 0:
                continue
            # the last op launched before the record
            recorded = np.searchsorted(mine_ts, record_ts[record], side="left") - 1
            if recorded < 0:
                continue
            after = mine[np.searchsorted(mine_ts, wait_ts, side="right"):]  # ops launched after the wait
            want = stream_of_corr.get(int(s.at("correlation", row)), -1)
            if want is not None and want >= 0:
                after = after[np.array([gpu_tracks.get(int(x), -2) == want for x in track[after]], bool)] \
                    if len(after) else after
            if not len(after):
                continue
            src, dst = int(mine[recorded]), int(after[0])
            if track[src] != track[dst]:  # a wait on its own stream orders nothing new
                dst_l.append(dst)
                src_l.append(src)
    return np.asarray(dst_l, np.int64), np.asarray(src_l, np.int64)


def _latency(track, launch_ts, ts, dur, linked) -> tuple[int, int]:
    """Launch latency (launch -> start of an op launched onto an idle stream) and the gap between queued
    ops, as medians measured in the trace itself."""
    if len(ts) < 2:
        return DEFAULT_LATENCY_NS, DEFAULT_GAP_NS
    order = np.lexsort((ts, track))  # by stream, then start
    op_track, op_ts, op_dur = track[order], ts[order], dur[order]
    op_launch, op_linked = launch_ts[order], linked[order]
    prev_end = np.concatenate([[np.iinfo(np.int64).min], (op_ts + op_dur)[:-1]])
    same = np.concatenate([[False], op_track[1:] == op_track[:-1]])
    idle = op_linked & (~same | (prev_end < op_launch))
    lat = (op_ts - op_launch)[idle]
    lat = lat[(lat >= 0) & (lat < 100_000)]
    latency = int(np.median(lat)) if len(lat) >= 3 else DEFAULT_LATENCY_NS
    queued = op_linked & same & (op_launch + latency < prev_end)
    gaps = (op_ts - prev_end)[queued]
    gaps = gaps[(gaps >= 0) & (gaps < 20_000)]
    gap = int(np.median(gaps)) if len(gaps) >= 3 else DEFAULT_GAP_NS
    return latency, gap


def _per_op_delays(track, launch_ts, ts, dur, latency, gap):
    """Per op (launch order): the latency it showed when it started on an idle stream, and the gap it
    showed after the previous op when it was queued behind it; the medians where the trace cannot show it."""
    n_ops = len(ts)
    op_lat = np.full(n_ops, latency, np.int64)
    op_gap = np.full(n_ops, gap, np.int64)
    if not n_ops:
        return op_lat, op_gap
    order = np.lexsort((launch_ts, track))  # launch order per stream
    op_track, op_ts, op_launch = track[order], ts[order], launch_ts[order]
    op_end = ts[order] + dur[order]
    prev_end = np.concatenate([[np.iinfo(np.int64).min // 2], op_end[:-1]])
    same = np.concatenate([[False], op_track[1:] == op_track[:-1]])
    prev_end = np.where(same, prev_end, np.iinfo(np.int64).min // 2)
    waited_for_launch = op_ts - op_launch >= 0
    idle = waited_for_launch & (prev_end + gap <= op_launch + latency)
    lat = np.where(idle, np.clip(op_ts - op_launch, 0, 200_000), latency)
    queued = same & ~idle
    queued_gap = np.where(queued, np.clip(op_ts - prev_end, 0, 200_000), gap)
    op_lat[order], op_gap[order] = lat, queued_gap
    return op_lat, op_gap


def _compress(points: np.ndarray, cuts: Intervals, origin: int) -> np.ndarray:
    """Each time point on the CPU clock with the cut intervals taken out."""
    if not len(cuts):
        return points.astype(np.int64)
    return points - cuts.covered(np.full(len(points), origin, np.int64), points)


def simulate(rp: Replay, edit: Edit | None = None, cpu_scale: float = 1.0) -> ReplayResult:
    """Replay the steps (with an edit applied) and return per-step CPU / GPU / effective times.
    `cpu_scale` < 1 replays a faster CPU: the CPU timeline (without its sync waits) is scaled by it, the GPU
    work is not; 1 / recording inflation gives an unprofiled replay (the profiler slows the CPU side)."""
    edit = edit or Edit()
    times = rp.times
    n_steps = len(times)
    dur = rp.op_dur_ns.astype(np.float64)
    if len(edit.scale_rows) and len(rp.op_rows):
        sorter = np.argsort(rp.op_rows)
        by_row = rp.op_rows[sorter]
        scaled_at = np.minimum(np.searchsorted(by_row, edit.scale_rows), len(by_row) - 1)
        found = by_row[scaled_at] == edit.scale_rows
        factor = np.ones(len(dur))
        np.multiply.at(factor, sorter[scaled_at[found]], edit.scale[found])
        dur = dur * factor
    present = dur > 0
    blocking = (~np.isin(rp.sync_rows, edit.unblock_rows) if len(edit.unblock_rows)
                else np.ones(len(rp.sync_rows), bool))
    # the CPU clock without the sync waits and the CPU work the edit removes
    cuts = Intervals.union_of(np.concatenate([rp.sync_ts_ns, edit.cut_start_ns]),
                              np.concatenate([rp.sync_ts_ns + rp.sync_wait_ns, edit.cut_end_ns])).nonempty()
    origin = int(min(times.cpu_t0_ns.min() if n_steps else 0, rp.op_launch_ns.min() if len(rp.op_launch_ns) else 0))
    if len(edit.cut_start_ns):  # syncs inside removed CPU work go with it
        removed = Intervals.union_of(edit.cut_start_ns, edit.cut_end_ns)
        blocking &= ~removed.contains(rp.sync_ts_ns)

    def clock(points):
        compressed = _compress(np.asarray(points, np.int64), cuts, origin)
        return compressed if cpu_scale == 1.0 else origin + (compressed - origin) * cpu_scale

    op_clock = clock(rp.op_launch_ns)
    if len(edit.chain_rows):  # back to back: ready with the first op of its group
        member = np.isin(rp.op_rows, edit.chain_rows)
        group = np.full(len(rp.op_rows), -1, np.int64)
        group_of_row = dict(zip(edit.chain_rows.tolist(), edit.chain_group.tolist()))
        chained = np.flatnonzero(member)
        group[chained] = [group_of_row[int(row)] for row in rp.op_rows[chained]]
        for group_id in np.unique(group[chained]).tolist():
            in_group = np.flatnonzero(group == group_id)
            op_clock[in_group] = op_clock[in_group].min()
        order = np.argsort(op_clock, kind="stable")
    else:
        order = np.arange(len(op_clock))
    sync_clock = clock(rp.sync_ts_ns)
    sync_idx = np.flatnonzero(blocking)
    dep_dst = dep_src = EMPTY
    if len(rp.dep_dst):
        position = np.empty(len(order), np.int64)  # of each op in the replay order
        position[order] = np.arange(len(order))
        dep_dst, dep_src = position[rp.dep_dst], position[rp.dep_src]
        forward = dep_src < dep_dst  # an edit that moved the awaited op after the waiting one drops the edge
        dep_dst, dep_src = dep_dst[forward], dep_src[forward]
    start, end, delay_at = _run(op_clock[order], dur[order], present[order], rp.op_track[order],
                                sync_clock[sync_idx], rp.op_latency_ns[order].astype(np.float64),
                                rp.op_gap_ns[order].astype(np.float64), dep_dst, dep_src)
    op_start = np.empty(len(order))
    op_end = np.empty(len(order))
    op_start[order], op_end[order] = start, end
    sync_points = sync_clock[sync_idx]

    def cpu_time(points):
        compressed = clock(points)
        after_sync = np.searchsorted(sync_points, compressed, side="left")
        return compressed + np.where(after_sync > 0, delay_at[np.maximum(after_sync - 1, 0)] if len(delay_at) else 0,
                                     0)

    cpu0, cpu1 = cpu_time(times.cpu_t0_ns), cpu_time(times.cpu_t1_ns)
    cpu_ns = np.maximum(cpu1 - cpu0, 0)
    gpu_ns = _gpu_spans(n_steps, rp.op_step, op_start, op_end, present,
                        op_clock + _delay_of(op_clock, sync_points, delay_at))
    return ReplayResult(cpu_ns.astype(np.int64), gpu_ns.astype(np.int64), np.maximum(cpu_ns, gpu_ns).astype(np.int64),
                        op_start, op_end)


def _delay_of(points, sync_points, delay_at):
    after_sync = np.searchsorted(sync_points, points, side="left")
    return np.where(after_sync > 0, delay_at[np.maximum(after_sync - 1, 0)] if len(delay_at) else 0, 0)


def _run(op_clock, dur, present, track, sync_clock, latency, gap, dep_dst=EMPTY, dep_src=EMPTY):
    """The replay proper: segments between blocking syncs, one max-plus scan per stream and segment:
    start_k = max(ready_k, start_{k-1} + dur_{k-1} + gap_k), ready_k = launch_k + delay + latency_k.
    A cross-stream wait (dep_dst waits for the end of dep_src, launched before it) starts a segment at
    the waiting op, so the awaited op's end is known when its segment is scanned.
    Returns op start, op end, and the CPU delay after each sync (added to the compressed clock)."""
    n_ops = len(op_clock)
    start = np.zeros(n_ops)
    end = np.zeros(n_ops)
    op_dur = np.where(present, dur, 0.0)
    op_gap = np.where(present, gap, 0.0)
    free: dict[int, float] = {}
    state = {"delay": 0.0, "done_end": -np.inf}  # CPU delay so far, latest end of the work replayed so far
    delay_at = np.zeros(len(sync_clock))
    dep_ready = np.full(n_ops, -np.inf)

    def scan(first: int, stop: int) -> None:
        if stop <= first:
            return
        segment_track = track[first:stop]
        for stream in np.unique(segment_track).tolist():
            ops = np.flatnonzero(segment_track == stream) + first
            inc = np.concatenate([[0.0], op_dur[ops][:-1] + op_gap[ops][1:]])
            before = np.cumsum(inc)
            carry = free.get(stream, -np.inf) + op_gap[ops[0]]
            ready = np.maximum(op_clock[ops] + state["delay"] + latency[ops], dep_ready[ops])
            op_starts = before + np.maximum(carry, np.maximum.accumulate(ready - before))
            start[ops] = op_starts
            end[ops] = op_starts + op_dur[ops]
            free[stream] = float(end[ops[-1]])
        state["done_end"] = max(state["done_end"], float(end[first:stop].max()))

    bounds = np.searchsorted(op_clock, sync_clock, side="right")
    # (position, 0 = cross-stream wait / 1 = sync, index); a wait at position p cuts before op p
    cuts = sorted([(int(at), 0, dep) for dep, at in enumerate(dep_dst.tolist())] +
                  [(int(at), 1, sync) for sync, at in enumerate(bounds.tolist())])
    scanned = 0
    for at, kind, index in cuts:
        scan(scanned, at)
        scanned = max(scanned, at)
        if kind == 0:
            awaited = int(dep_src[index])
            dep_ready[at] = max(dep_ready[at], end[awaited] if present[awaited] else -np.inf)
        else:
            now = sync_clock[index] + state["delay"]
            if state["done_end"] > now:
                state["delay"] += state["done_end"] - now
            delay_at[index] = state["delay"]
    scan(scanned, n_ops)
    return start, end, delay_at


def _gpu_spans(n_steps, op_step, op_start, op_end, present, op_launch):
    """GPU span per step from replayed ops: first start to the next step's first start when that step's
    work was already launched when this step's ended, else to this step's last end."""
    big = np.inf
    first = np.full(n_steps, big)
    last = np.full(n_steps, -big)
    first_launch = np.full(n_steps, big)
    np.minimum.at(first, op_step[present], op_start[present])
    np.maximum.at(last, op_step[present], op_end[present])
    np.minimum.at(first_launch, op_step[present], op_launch[present])
    has = first < big
    span_end = np.where(has, last, 0)
    if n_steps > 1:
        queued = has[1:] & has[:-1] & (first_launch[1:] <= last[:-1])
        span_end[:-1] = np.where(queued, np.maximum(first[1:], last[:-1]), span_end[:-1])
    return np.where(has, np.maximum(span_end - np.where(has, first, 0), 0), 0)


@dataclass(frozen=True, slots=True)
class Validation:
    replay_effective_ns: np.ndarray
    measured_effective_ns: np.ndarray

    @property
    def error_pct(self) -> float:
        """Median |replay - measured| / measured over the steps."""
        measured = self.measured_effective_ns.astype(np.float64)
        ok = measured > 0
        if not ok.any():
            return 0.0
        return float(np.median(np.abs(self.replay_effective_ns[ok] - measured[ok]) / measured[ok]) * 100.0)


def validate(model: TraceModel) -> Validation:
    rp = replay_input(model)
    return Validation(simulate(rp).effective_ns, rp.times.effective_ns)


@dataclass(frozen=True, slots=True)
class PathComposition:
    """What the critical path of each step is made of (ns per step). The GPU path: kernels, copies
    (memcpy/memset) and the GPU's gaps; the CPU path: sync waits, DataLoader, launch calls, other CPU."""

    path: np.ndarray  # "gpu" | "cpu" per step
    kernel_ns: np.ndarray
    copy_ns: np.ndarray
    gpu_gap_ns: np.ndarray
    sync_wait_ns: np.ndarray
    data_ns: np.ndarray
    launch_ns: np.ndarray
    other_cpu_ns: np.ndarray

    def mean(self) -> dict:
        names = ("kernel_ns", "copy_ns", "gpu_gap_ns", "sync_wait_ns", "data_ns", "launch_ns", "other_cpu_ns")
        return {k: int(getattr(self, k).mean()) if len(self.path) else 0 for k in names}


def composition(model: TraceModel) -> PathComposition:
    return cached(model, "critical_path:composition", lambda: _composition(model))


def _composition(model: TraceModel) -> PathComposition:
    rp = replay_input(model)
    times = rp.times
    n_steps = len(times)
    s = model.slices
    kind = s.kind[rp.op_rows]
    kernel = np.bincount(rp.op_step, weights=np.where(kind == Kind.KERNEL, rp.op_dur_ns, 0), minlength=n_steps)
    copy = np.bincount(rp.op_step, weights=np.where(kind != Kind.KERNEL, rp.op_dur_ns, 0), minlength=n_steps)
    gpu_path = times.gpu_ns >= times.cpu_ns
    zero = np.zeros(n_steps)
    step_t0, step_t1 = times.cpu_t0_ns, times.cpu_t1_ns
    wait = Intervals.union_of(rp.sync_ts_ns, rp.sync_ts_ns + rp.sync_wait_ns).covered(step_t0, step_t1)
    launch_ids = model.strings.ids_matching(lambda x: x.startswith(("cudaLaunch", "cuLaunch", "cudaMemcpyAsync",
                                                                        "cudaMemsetAsync")))
    launch = np.isin(s.name, launch_ids) & (s.kind == Kind.RUNTIME)
    launch_ns = Intervals.union_of(s.ts_ns[launch], s.ts_ns[launch] + s.dur_ns[launch]).covered(step_t0, step_t1)
    data = np.minimum(times.data_ns, np.maximum(times.cpu_ns - wait, 0))
    other = np.maximum(times.cpu_ns - wait - data - launch_ns, 0)
    busy = np.minimum(kernel + copy, times.gpu_ns)

    def on_path(gpu_side, cpu_side) -> np.ndarray:
        return np.where(gpu_path, gpu_side, cpu_side).astype(np.int64)

    return PathComposition(
        path=np.where(gpu_path, "gpu", "cpu"),
        kernel_ns=on_path(kernel, zero), copy_ns=on_path(copy, zero),
        gpu_gap_ns=on_path(np.maximum(times.gpu_ns - busy, 0), zero),
        sync_wait_ns=on_path(zero, wait), data_ns=on_path(zero, data),
        launch_ns=on_path(zero, launch_ns), other_cpu_ns=on_path(zero, other))
