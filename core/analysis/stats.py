"""Kernel and op tables: pure functions returning column dataclasses (numpy arrays)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.analysis.derived import cached
from core.analysis.tree import parents
from core.trace.model import GPU_KINDS, FlowKind, Kind, TraceModel, TrackKind

GPU_WORK_KINDS = (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET)


@dataclass(frozen=True, slots=True)
class KernelTable:
    """One row per (kind, name) of GPU work: kernels first, then memcpy, then memset rows, each block sorted by
    total time (descending). The Kernels tab and kernels.csv are both this table."""

    name: np.ndarray  # int32 string id
    kind: np.ndarray  # int8 Kind (KERNEL, MEMCPY, MEMSET)
    calls: np.ndarray  # int64
    total_ns: np.ndarray  # int64
    mean_ns: np.ndarray  # float64
    min_ns: np.ndarray  # int64
    max_ns: np.ndarray  # int64
    p50_ns: np.ndarray  # float64 median duration (linear interpolation, numpy's default)
    p95_ns: np.ndarray  # float64
    stddev_ns: np.ndarray  # float64 sample standard deviation (ddof=1, 0 for one call: pandas / HTA)
    gpu_pct: np.ndarray  # float64 kernel rows: share of all kernel time; memcpy / memset rows: share of their
    #                      kind's time (a copy is not kernel time)
    grid: np.ndarray  # int32 string id (of the longest call)
    block: np.ndarray  # int32 string id
    registers: np.ndarray  # int32 (-1 unknown)
    occupancy_pct: np.ndarray  # float32 mean est. achieved occupancy (NaN unknown)

    def __len__(self) -> int:
        return len(self.name)


@dataclass(frozen=True, slots=True)
class OpTable:
    """One row per op name (or name + input shapes), sorted by host total time (descending)."""

    name: np.ndarray  # int32 string id
    input_dims: np.ndarray  # int32 string id (0 when grouped by name only)
    calls: np.ndarray  # int64
    host_total_ns: np.ndarray  # int64 inclusive CPU time (nested calls of the same op counted once)
    host_self_ns: np.ndarray  # int64 exclusive CPU time
    device_ns: np.ndarray  # int64 GPU time of kernels/memcpy/memset launched inside the op (inclusive)
    device_self_ns: np.ndarray  # int64 GPU time launched by the op itself (innermost op)

    def __len__(self) -> int:
        return len(self.name)


def _group(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(unique keys, inverse). Pairs of non-negative 32-bit ids are packed into one int64 first: the same
    lexicographic order as np.unique(axis=0), without its structured-row sort (~5x slower on gpt_big)."""
    if keys.ndim == 2 and keys.shape[1] == 2 and len(keys) and int(keys.min()) >= 0 and int(keys.max()) < 2**31:
        packed = (keys[:, 0].astype(np.int64) << 32) | keys[:, 1].astype(np.int64)
        uniq, inv = np.unique(packed, return_inverse=True)
        return np.stack([uniq >> 32, uniq & 0xFFFFFFFF], axis=1).astype(keys.dtype), inv.reshape(-1)
    uniq, inv = np.unique(keys, return_inverse=True, axis=0 if keys.ndim > 1 else None)
    return uniq, inv.reshape(-1)


def kernel_table(model: TraceModel, kinds: tuple[Kind, ...] = GPU_WORK_KINDS) -> KernelTable:
    """The kernels table (cached per model and kinds)."""
    return cached(model, f"kernel_table:{tuple(int(k) for k in kinds)}", lambda: _kernel_table(model, kinds))


def _group_percentile(sorted_dur: np.ndarray, starts: np.ndarray, counts: np.ndarray, q: float) -> np.ndarray:
    """Per group (rows [start, start + count) of durations sorted within groups): numpy's linear percentile."""
    pos = q * (counts - 1)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, counts - 1)
    lo_v = sorted_dur[starts + lo].astype(np.float64)
    hi_v = sorted_dur[starts + hi].astype(np.float64)
    return lo_v + (hi_v - lo_v) * (pos - lo)


def _kernel_table(model: TraceModel, kinds: tuple[Kind, ...]) -> KernelTable:
    s = model.slices
    rows = np.flatnonzero(np.isin(s.kind, np.asarray(kinds, dtype=np.int8)))
    if not len(rows):
        empty = np.zeros(0, np.int64)
        no_float = empty.astype(float)
        return KernelTable(empty.astype(np.int32), empty.astype(np.int8), empty, empty, no_float, empty, empty,
                           no_float, no_float, no_float, no_float, empty.astype(np.int32), empty.astype(np.int32),
                           empty.astype(np.int32), empty.astype(np.float32))
    keys, inv = _group(np.stack([s.kind[rows].astype(np.int64), s.name[rows].astype(np.int64)], axis=1))
    kind, names = keys[:, 0].astype(np.int8), keys[:, 1].astype(np.int32)
    dur = s.dur_ns[rows]
    n_groups = len(names)
    calls = np.bincount(inv, minlength=n_groups).astype(np.int64)
    total = np.bincount(inv, weights=dur, minlength=n_groups).astype(np.int64)
    # durations sorted within groups: min, max, percentiles, the longest call
    order = np.lexsort((dur, inv))
    sorted_dur = dur[order]
    starts = np.concatenate([[0], np.cumsum(calls)[:-1]])
    mn = sorted_dur[starts]
    mx = sorted_dur[starts + calls - 1]
    p50 = _group_percentile(sorted_dur, starts, calls, 0.50)
    p95 = _group_percentile(sorted_dur, starts, calls, 0.95)
    mean = total / np.maximum(calls, 1)
    sq = np.bincount(inv, weights=(dur - mean[inv]) ** 2, minlength=n_groups)
    stddev = np.where(calls > 1, np.sqrt(sq / np.maximum(calls - 1, 1)), 0.0)
    rep = rows[order[starts + calls - 1]]  # representative launch config: the longest call's
    occ = s.at("occupancy", rows).astype(np.float64)
    valid = ~np.isnan(occ)
    occ_sum = np.bincount(inv[valid], weights=occ[valid], minlength=n_groups)
    occ_n = np.bincount(inv[valid], minlength=n_groups)
    occupancy = np.where(occ_n > 0, occ_sum / np.maximum(occ_n, 1), np.nan).astype(np.float32)
    kind_total = np.bincount(kind.astype(np.int64), weights=total, minlength=256)
    share = 100.0 * total / np.maximum(kind_total[kind.astype(np.int64)], 1)
    srt = np.lexsort((-total, kind))
    return KernelTable(name=names[srt], kind=kind[srt], calls=calls[srt], total_ns=total[srt], mean_ns=mean[srt],
                       min_ns=mn[srt], max_ns=mx[srt], p50_ns=p50[srt], p95_ns=p95[srt], stddev_ns=stddev[srt],
                       gpu_pct=share[srt], grid=s.at("grid", rep)[srt], block=s.at("block", rep)[srt],
                       registers=s.at("registers", rep)[srt], occupancy_pct=occupancy[srt])


def device_time_per_row(model: TraceModel) -> tuple[np.ndarray, np.ndarray]:
    """(self, inclusive) GPU ns launched under each CPU row, via launch flows and the call tree."""
    return cached(model, "device_time", lambda: _device_time(model))


def _device_time(model: TraceModel):
    s = model.slices
    n_rows = len(s)
    par = parents(model)
    flows = model.flows
    launch = flows.kind == FlowKind.LAUNCH
    src, dst = flows.src[launch], flows.dst[launch]
    gdur = s.dur_ns[dst]
    op_kinds = np.asarray((Kind.CPU_OP, Kind.ANNOTATION, Kind.COLLECTIVE), dtype=np.int8)
    is_op = np.isin(s.kind, op_kinds)
    self_ns = np.zeros(n_rows, np.int64)
    incl = np.zeros(n_rows, np.int64)
    cur = par[src]
    found = np.zeros(len(src), bool)
    while True:
        live = cur >= 0
        if not live.any():
            break
        idx = np.flatnonzero(live)
        ancestor = cur[idx]
        op = is_op[ancestor]
        np.add.at(incl, ancestor[op], gdur[idx[op]])
        first = op & ~found[idx]
        np.add.at(self_ns, ancestor[first], gdur[idx[first]])
        found[idx[first]] = True
        cur[idx] = par[ancestor]
    return self_ns, incl


_PIECE = 1 << 22


def op_table(model: TraceModel, by_shapes: bool = False) -> OpTable:
    s = model.slices
    op_kinds = np.asarray((Kind.CPU_OP, Kind.ANNOTATION, Kind.COLLECTIVE), dtype=np.int8)
    cpu_tracks = model.tracks.kind == TrackKind.CPU_THREAD
    rows = np.flatnonzero(np.isin(s.kind, op_kinds) & cpu_tracks[s.track])
    if not len(rows):
        empty = np.zeros(0, np.int64)
        return OpTable(empty.astype(np.int32), empty.astype(np.int32), empty, empty, empty, empty, empty)
    par = parents(model)
    dur = s.dur_ns
    # self time: own duration minus direct children's (any kind on the same track)
    child_sum = np.zeros(len(s), np.int64)
    for first in range(0, len(s), _PIECE):  # in row pieces: bounded temporaries on multi-million-row traces
        piece_parent = par[first:first + _PIECE]
        has_parent = piece_parent >= 0
        np.add.at(child_sum, piece_parent[has_parent], dur[first:first + _PIECE][has_parent])
    self_ns = np.subtract(dur, child_sum, out=child_sum)
    np.maximum(self_ns, 0, out=self_ns)
    # inclusive time counted once for recursive calls of the same name (skip rows whose parent chain
    # holds the same name: approximate with the direct parent)
    parent = par[rows]
    nested_same = (parent >= 0) & (s.name[np.maximum(parent, 0)] == s.name[rows])
    dev_self, dev_incl = device_time_per_row(model)
    keys = np.stack([s.name[rows], s.at("input_dims", rows) if by_shapes else np.zeros(len(rows), np.int32)], axis=1)
    uniq, inv = _group(keys)
    n_groups = len(uniq)
    calls = np.bincount(inv, minlength=n_groups).astype(np.int64)
    total = np.bincount(inv, weights=np.where(nested_same, 0, dur[rows]), minlength=n_groups).astype(np.int64)
    selfs = np.bincount(inv, weights=self_ns[rows], minlength=n_groups).astype(np.int64)
    dev = np.bincount(inv, weights=np.where(nested_same, 0, dev_incl[rows]), minlength=n_groups).astype(np.int64)
    devs = np.bincount(inv, weights=dev_self[rows], minlength=n_groups).astype(np.int64)
    srt = np.argsort(-total, kind="stable")
    return OpTable(name=uniq[srt, 0].astype(np.int32), input_dims=uniq[srt, 1].astype(np.int32), calls=calls[srt],
                   host_total_ns=total[srt], host_self_ns=selfs[srt], device_ns=dev[srt], device_self_ns=devs[srt])


def gpu_rows(model: TraceModel) -> np.ndarray:
    return np.flatnonzero(np.isin(model.slices.kind, np.asarray(GPU_KINDS, dtype=np.int8)))
