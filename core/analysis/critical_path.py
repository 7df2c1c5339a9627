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

from core.analysis import intervals
from core.analysis.derived import cached
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
        g = other.chain_group + (int(self.chain_group.max()) + 1 if len(self.chain_group) else 0)
        return Edit(label=" + ".join(x for x in (self.label, other.label) if x),
                    scale_rows=np.concatenate([self.scale_rows, other.scale_rows]),
                    scale=np.concatenate([self.scale, other.scale]),
                    cut_start_ns=np.concatenate([self.cut_start_ns, other.cut_start_ns]),
                    cut_end_ns=np.concatenate([self.cut_end_ns, other.cut_end_ns]),
                    unblock_rows=np.concatenate([self.unblock_rows, other.unblock_rows]),
                    chain_rows=np.concatenate([self.chain_rows, other.chain_rows]),
                    chain_group=np.concatenate([self.chain_group, g]))


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
    s, f = model.slices, model.flows
    rows = times.work_rows
    step = times.work_step()
    launch = f.kind == FlowKind.LAUNCH
    src = np.full(len(s), -1, np.int64)
    src[f.dst[launch]] = f.src[launch]
    lsrc = src[rows]
    linked = lsrc >= 0
    track = s.track[rows]
    ts, dur = s.ts_ns[rows], s.dur_ns[rows]
    launch_ts = np.where(linked, s.ts_ns[np.maximum(lsrc, 0)], ts)
    latency, gap = _latency(track, launch_ts, ts, dur, linked)
    launch_ts = np.where(linked, launch_ts, ts - latency)
    order = np.lexsort((ts, launch_ts))
    rows, track, launch_ts, dur, step, ts = rows[order], track[order], launch_ts[order], dur[order], step[order], ts[order]
    op_lat, op_gap = _per_op_delays(track, launch_ts, ts, dur, latency, gap)
    # blocking calls inside the CPU steps: syncs, blocking cudaMemcpy, and the calls of pageable copies
    blocking = np.isin(s.name, model.strings.ids_matching(event_names.is_blocking_call)) & (s.kind == Kind.RUNTIME)
    pageable = model.strings.ids_matching(event_names.is_pageable_copy)
    pg = launch & np.isin(s.name[f.dst], pageable) & (s.kind[f.dst] == Kind.MEMCPY)
    blocking[f.src[pg]] = True
    sync = np.flatnonzero(blocking)
    t0, t1 = times.cpu_t0_ns, times.cpu_t1_ns
    if not times.synthetic and len(sync):
        i = np.searchsorted(t0, s.ts_ns[sync], side="right") - 1
        sync = sync[(i >= 0) & (s.ts_ns[sync] < t1[np.maximum(i, 0)])]
    sync = sync[np.argsort(s.ts_ns[sync], kind="stable")]
    sync_ts = s.ts_ns[sync]
    # measured wait: until the GPU work launched up to the call had ended (a call's own copy included)
    end_sorted = np.maximum.accumulate(ts + dur) if len(rows) else EMPTY
    k = np.searchsorted(launch_ts, sync_ts, side="right")
    awaited = np.where(k > 0, end_sorted[np.maximum(k - 1, 0)] if len(rows) else 0, sync_ts)
    wait = np.clip(awaited - sync_ts, 0, s.dur_ns[sync])
    lthread = np.where(linked, s.track[np.maximum(lsrc, 0)], -1)[order]
    dep_dst, dep_src = _stream_waits(model, rows, track, launch_ts, lthread)
    return Replay(times, rows, track, launch_ts, dur, step, sync, sync_ts, wait.astype(np.int64), latency, gap,
                  op_lat, op_gap, dep_dst, dep_src)


WAIT_CALLS = frozenset({"cudaStreamWaitEvent", "cuStreamWaitEvent"})
RECORD_CALLS = frozenset({"cudaEventRecord", "cudaEventRecordWithFlags", "cuEventRecord", "cuEventRecordWithFlags"})


def _stream_waits(model: TraceModel, rows, track, launch_ts, lthread) -> tuple[np.ndarray, np.ndarray]:
    """Cross-stream dependencies (see the module doc): (waiting op, awaited op) index pairs into the replay's
    op arrays, or empty ones when the trace has no cudaStreamWaitEvent calls."""
    s = model.slices
    rt = s.kind == Kind.RUNTIME
    waits = np.flatnonzero(rt & np.isin(s.name, model.strings.ids_matching(lambda n: n in WAIT_CALLS)))
    if not len(waits) or not len(rows):
        return EMPTY, EMPTY
    recs = np.flatnonzero(rt & np.isin(s.name, model.strings.ids_matching(lambda n: n in RECORD_CALLS)))
    # the waiting stream, from CUPTI's sync record of the call (same correlation) when there is one
    sync_rec = np.flatnonzero(np.isin(s.name, model.strings.ids_matching(lambda n: n == "Stream Wait Event")))
    stream_of_corr = dict(zip(s.at("correlation", sync_rec).tolist(), s.at("stream", sync_rec).tolist())) \
        if len(sync_rec) else {}
    gpu_tracks = {int(t): int(model.tracks.tid[t]) for t in np.unique(track).tolist()}
    dst_l, src_l = [], []
    for thread in np.unique(s.track[waits]).tolist():
        w = waits[s.track[waits] == thread]
        r = recs[s.track[recs] == thread] if len(recs) else recs
        if not len(r):
            continue
        r_ts = np.sort(s.ts_ns[r])
        mine = np.flatnonzero(lthread == thread)  # ops this thread launched, in launch order
        if not len(mine):
            continue
        mine_ts = launch_ts[mine]
        for row in w.tolist():
            t = int(s.ts_ns[row])
            k = np.searchsorted(r_ts, t, side="left") - 1  # the latest record before the wait
            if k < 0:
                continue
            a = np.searchsorted(mine_ts, r_ts[k], side="left") - 1  # the last op launched before the record
            if a < 0:
                continue
            after = mine[np.searchsorted(mine_ts, t, side="right"):]  # ops launched after the wait
            want = stream_of_corr.get(int(s.at("correlation", row)), -1)
            if want is not None and want >= 0:
                after = after[np.array([gpu_tracks.get(int(x), -2) == want for x in track[after]], bool)] \
                    if len(after) else after
            if not len(after):
                continue
            src, dst = int(mine[a]), int(after[0])
            if track[src] != track[dst]:  # a wait on its own stream orders nothing new
                dst_l.append(dst)
                src_l.append(src)
    return np.asarray(dst_l, np.int64), np.asarray(src_l, np.int64)


def _latency(track, launch_ts, ts, dur, linked) -> tuple[int, int]:
    """Launch latency (launch -> start of an op launched onto an idle stream) and the gap between queued
    ops, as medians measured in the trace itself."""
    if len(ts) < 2:
        return DEFAULT_LATENCY_NS, DEFAULT_GAP_NS
    order = np.lexsort((ts, track))
    tr, t, d, lt, ok = track[order], ts[order], dur[order], launch_ts[order], linked[order]
    prev_end = np.concatenate([[np.iinfo(np.int64).min], (t + d)[:-1]])
    same = np.concatenate([[False], tr[1:] == tr[:-1]])
    idle = ok & (~same | (prev_end < lt))
    lat = (t - lt)[idle]
    lat = lat[(lat >= 0) & (lat < 100_000)]
    latency = int(np.median(lat)) if len(lat) >= 3 else DEFAULT_LATENCY_NS
    queued = ok & same & (lt + latency < prev_end)
    gaps = (t - prev_end)[queued]
    gaps = gaps[(gaps >= 0) & (gaps < 20_000)]
    gap = int(np.median(gaps)) if len(gaps) >= 3 else DEFAULT_GAP_NS
    return latency, gap


def _per_op_delays(track, launch_ts, ts, dur, latency, gap):
    """Per op (launch order): the latency it showed when it started on an idle stream, and the gap it
    showed after the previous op when it was queued behind it; the medians where the trace cannot show it."""
    n = len(ts)
    op_lat = np.full(n, latency, np.int64)
    op_gap = np.full(n, gap, np.int64)
    if not n:
        return op_lat, op_gap
    order = np.lexsort((launch_ts, track))  # launch order per stream
    tr, t, lt, end = track[order], ts[order], launch_ts[order], ts[order] + dur[order]
    prev_end = np.concatenate([[np.iinfo(np.int64).min // 2], end[:-1]])
    same = np.concatenate([[False], tr[1:] == tr[:-1]])
    prev_end = np.where(same, prev_end, np.iinfo(np.int64).min // 2)
    waited_for_launch = t - lt >= 0
    idle = waited_for_launch & (prev_end + gap <= lt + latency)
    lat = np.where(idle, np.clip(t - lt, 0, 200_000), latency)
    queued = same & ~idle
    gp = np.where(queued, np.clip(t - prev_end, 0, 200_000), gap)
    op_lat[order], op_gap[order] = lat, gp
    return op_lat, op_gap


def _compress(points: np.ndarray, cut_s: np.ndarray, cut_e: np.ndarray, origin: int) -> np.ndarray:
    """Each time point on the CPU clock with the cut intervals taken out."""
    if not len(cut_s):
        return points.astype(np.int64)
    return points - intervals.covered(cut_s, cut_e, np.full(len(points), origin, np.int64), points)


def simulate(rp: Replay, edit: Edit | None = None, cpu_scale: float = 1.0) -> ReplayResult:
    """Replay the steps (with an edit applied) and return per-step CPU / GPU / effective times.
    `cpu_scale` < 1 replays a faster CPU: the CPU timeline (without its sync waits) is scaled by it, the GPU
    work is not; 1 / recording inflation gives an unprofiled replay (the profiler slows the CPU side)."""
    e = edit or Edit()
    times = rp.times
    n = len(times)
    dur = rp.op_dur_ns.astype(np.float64)
    if len(e.scale_rows) and len(rp.op_rows):
        sorter = np.argsort(rp.op_rows)
        by_row = rp.op_rows[sorter]
        pos = np.minimum(np.searchsorted(by_row, e.scale_rows), len(by_row) - 1)
        ok = by_row[pos] == e.scale_rows
        factor = np.ones(len(dur))
        np.multiply.at(factor, sorter[pos[ok]], e.scale[ok])
        dur = dur * factor
    present = dur > 0
    blocking = ~np.isin(rp.sync_rows, e.unblock_rows) if len(e.unblock_rows) else np.ones(len(rp.sync_rows), bool)
    cut_s, cut_e = intervals.union(np.concatenate([rp.sync_ts_ns, e.cut_start_ns]),
                                   np.concatenate([rp.sync_ts_ns + rp.sync_wait_ns, e.cut_end_ns]))
    keep = cut_e > cut_s
    cut_s, cut_e = cut_s[keep], cut_e[keep]
    origin = int(min(times.cpu_t0_ns.min() if n else 0, rp.op_launch_ns.min() if len(rp.op_launch_ns) else 0))
    if len(e.cut_start_ns):  # syncs inside removed CPU work go with it
        us, ue = intervals.union(e.cut_start_ns, e.cut_end_ns)
        j = np.searchsorted(us, rp.sync_ts_ns, side="right") - 1
        inside = (j >= 0) & (rp.sync_ts_ns < ue[np.maximum(j, 0)])
        blocking &= ~inside
    def clock(points):
        c = _compress(np.asarray(points, np.int64), cut_s, cut_e, origin)
        return c if cpu_scale == 1.0 else origin + (c - origin) * cpu_scale

    op_c = clock(rp.op_launch_ns)
    if len(e.chain_rows):  # back to back: ready with the first op of its group
        member = np.isin(rp.op_rows, e.chain_rows)
        grp = np.full(len(rp.op_rows), -1, np.int64)
        lookup = dict(zip(e.chain_rows.tolist(), e.chain_group.tolist()))
        idx = np.flatnonzero(member)
        grp[idx] = [lookup[int(r)] for r in rp.op_rows[idx]]
        for gid in np.unique(grp[idx]).tolist():
            sel = np.flatnonzero(grp == gid)
            op_c[sel] = op_c[sel].min()
        order = np.argsort(op_c, kind="stable")
    else:
        order = np.arange(len(op_c))
    sync_c = clock(rp.sync_ts_ns)
    sync_idx = np.flatnonzero(blocking)
    dep_dst = dep_src = EMPTY
    if len(rp.dep_dst):
        pos = np.empty(len(order), np.int64)
        pos[order] = np.arange(len(order))
        dep_dst, dep_src = pos[rp.dep_dst], pos[rp.dep_src]
        ok = dep_src < dep_dst  # an edit that moved the awaited op after the waiting one drops the edge
        dep_dst, dep_src = dep_dst[ok], dep_src[ok]
    start, end, delay_at = _run(op_c[order], dur[order], present[order], rp.op_track[order], sync_c[sync_idx],
                                rp.op_latency_ns[order].astype(np.float64), rp.op_gap_ns[order].astype(np.float64),
                                dep_dst, dep_src)
    op_start = np.empty(len(order))
    op_end = np.empty(len(order))
    op_start[order], op_end[order] = start, end
    sync_points = sync_c[sync_idx]

    def cpu_time(t):
        c = clock(t)
        j = np.searchsorted(sync_points, c, side="left")
        return c + np.where(j > 0, delay_at[np.maximum(j - 1, 0)] if len(delay_at) else 0, 0)

    cpu0, cpu1 = cpu_time(times.cpu_t0_ns), cpu_time(times.cpu_t1_ns)
    cpu_ns = np.maximum(cpu1 - cpu0, 0)
    gpu_ns = _gpu_spans(n, rp.op_step, op_start, op_end, present, op_c + _delay_of(op_c, sync_points, delay_at))
    return ReplayResult(cpu_ns.astype(np.int64), gpu_ns.astype(np.int64), np.maximum(cpu_ns, gpu_ns).astype(np.int64),
                        op_start, op_end)


def _delay_of(points, sync_points, delay_at):
    j = np.searchsorted(sync_points, points, side="left")
    return np.where(j > 0, delay_at[np.maximum(j - 1, 0)] if len(delay_at) else 0, 0)


def _run(op_c, dur, present, track, sync_c, latency, gap, dep_dst=EMPTY, dep_src=EMPTY):
    """The replay proper: segments between blocking syncs, one max-plus scan per stream and segment:
    start_k = max(ready_k, start_{k-1} + dur_{k-1} + gap_k), ready_k = launch_k + delay + latency_k.
    A cross-stream wait (dep_dst waits for the end of dep_src, launched before it) starts a segment at
    the waiting op, so the awaited op's end is known when its segment is scanned.
    Returns op start, op end, and the CPU delay after each sync (added to the compressed clock)."""
    n_ops = len(op_c)
    start = np.zeros(n_ops)
    end = np.zeros(n_ops)
    d = np.where(present, dur, 0.0)
    g = np.where(present, gap, 0.0)
    free: dict[int, float] = {}
    state = {"delay": 0.0, "done_end": -np.inf}  # CPU delay so far, latest end of the work replayed so far
    delay_at = np.zeros(len(sync_c))
    dep_ready = np.full(n_ops, -np.inf)

    def scan(pos: int, stop: int) -> None:
        if stop <= pos:
            return
        tr = track[pos:stop]
        for t in np.unique(tr).tolist():
            sel = np.flatnonzero(tr == t) + pos
            inc = np.concatenate([[0.0], d[sel][:-1] + g[sel][1:]])
            before = np.cumsum(inc)
            carry = free.get(t, -np.inf) + g[sel[0]]
            ready = np.maximum(op_c[sel] + state["delay"] + latency[sel], dep_ready[sel])
            st = before + np.maximum(carry, np.maximum.accumulate(ready - before))
            start[sel] = st
            end[sel] = st + d[sel]
            free[t] = float(end[sel[-1]])
        state["done_end"] = max(state["done_end"], float(end[pos:stop].max()))

    bounds = np.searchsorted(op_c, sync_c, side="right")
    # (position, 0 = cross-stream wait / 1 = sync, index); a wait at position p cuts before op p
    points = sorted([(int(p), 0, k) for k, p in enumerate(dep_dst.tolist())] +
                    [(int(p), 1, j) for j, p in enumerate(bounds.tolist())])
    pos = 0
    for p, kind, k in points:
        scan(pos, p)
        pos = max(pos, p)
        if kind == 0:
            src = int(dep_src[k])
            dep_ready[p] = max(dep_ready[p], end[src] if present[src] else -np.inf)
        else:
            now = sync_c[k] + state["delay"]
            if state["done_end"] > now:
                state["delay"] += state["done_end"] - now
            delay_at[k] = state["delay"]
    scan(pos, n_ops)
    return start, end, delay_at


def _gpu_spans(n, op_step, op_start, op_end, present, op_launch):
    """GPU span per step from replayed ops: first start to the next step's first start when that step's
    work was already launched when this step's ended, else to this step's last end."""
    big = np.inf
    first = np.full(n, big)
    last = np.full(n, -big)
    first_launch = np.full(n, big)
    sel = present
    np.minimum.at(first, op_step[sel], op_start[sel])
    np.maximum.at(last, op_step[sel], op_end[sel])
    np.minimum.at(first_launch, op_step[sel], op_launch[sel])
    has = first < big
    t1 = np.where(has, last, 0)
    if n > 1:
        queued = has[1:] & has[:-1] & (first_launch[1:] <= last[:-1])
        t1[:-1] = np.where(queued, np.maximum(first[1:], last[:-1]), t1[:-1])
    return np.where(has, np.maximum(t1 - np.where(has, first, 0), 0), 0)


@dataclass(frozen=True, slots=True)
class Validation:
    replay_effective_ns: np.ndarray
    measured_effective_ns: np.ndarray

    @property
    def error_pct(self) -> float:
        """Median |replay - measured| / measured over the steps."""
        m = self.measured_effective_ns.astype(np.float64)
        ok = m > 0
        if not ok.any():
            return 0.0
        return float(np.median(np.abs(self.replay_effective_ns[ok] - m[ok]) / m[ok]) * 100.0)


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
    t = rp.times
    n = len(t)
    s = model.slices
    kind = s.kind[rp.op_rows]
    kernel = np.bincount(rp.op_step, weights=np.where(kind == Kind.KERNEL, rp.op_dur_ns, 0), minlength=n)
    copy = np.bincount(rp.op_step, weights=np.where(kind != Kind.KERNEL, rp.op_dur_ns, 0), minlength=n)
    gpu_path = t.gpu_ns >= t.cpu_ns
    z = np.zeros(n)
    wait = intervals.covered(*intervals.union(rp.sync_ts_ns, rp.sync_ts_ns + rp.sync_wait_ns), t.cpu_t0_ns, t.cpu_t1_ns)
    launch_ids = model.strings.ids_matching(lambda x: x.startswith(("cudaLaunch", "cuLaunch", "cudaMemcpyAsync",
                                                                        "cudaMemsetAsync")))
    lm = np.isin(s.name, launch_ids) & (s.kind == Kind.RUNTIME)
    launch_ns = intervals.covered(*intervals.union(s.ts_ns[lm], s.ts_ns[lm] + s.dur_ns[lm]), t.cpu_t0_ns, t.cpu_t1_ns)
    data = np.minimum(t.data_ns, np.maximum(t.cpu_ns - wait, 0))
    other = np.maximum(t.cpu_ns - wait - data - launch_ns, 0)
    busy = np.minimum(kernel + copy, t.gpu_ns)
    return PathComposition(
        path=np.where(gpu_path, "gpu", "cpu"),
        kernel_ns=np.where(gpu_path, kernel, z).astype(np.int64), copy_ns=np.where(gpu_path, copy, z).astype(np.int64),
        gpu_gap_ns=np.where(gpu_path, np.maximum(t.gpu_ns - busy, 0), z).astype(np.int64),
        sync_wait_ns=np.where(gpu_path, z, wait).astype(np.int64), data_ns=np.where(gpu_path, z, data).astype(np.int64),
        launch_ns=np.where(gpu_path, z, launch_ns).astype(np.int64), other_cpu_ns=np.where(gpu_path, z, other).astype(np.int64))
