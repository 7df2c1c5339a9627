"""Kernel and op tables: pure functions returning column dataclasses (numpy arrays)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.analysis.derived import cached
from core.analysis.tree import parents
from core.trace.model import GPU_KINDS, FlowKind, Kind, TraceModel, TrackKind


@dataclass(frozen=True, slots=True)
class KernelTable:
    """One row per kernel name, sorted by total time (descending)."""

    name: np.ndarray  # int32 string id
    calls: np.ndarray  # int64
    total_ns: np.ndarray  # int64
    mean_ns: np.ndarray  # float64
    min_ns: np.ndarray  # int64
    max_ns: np.ndarray  # int64
    gpu_pct: np.ndarray  # float64 share of all kernel time
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
    uniq, inv = np.unique(keys, return_inverse=True, axis=0 if keys.ndim > 1 else None)
    return uniq, inv.reshape(-1)


def kernel_table(model: TraceModel, kinds: tuple[Kind, ...] = (Kind.KERNEL,)) -> KernelTable:
    s = model.slices
    rows = np.flatnonzero(np.isin(s.kind, np.asarray(kinds, dtype=np.int8)))
    if not len(rows):
        z = np.zeros(0, np.int64)
        return KernelTable(z.astype(np.int32), z, z, z.astype(float), z, z, z.astype(float), z.astype(np.int32),
                           z.astype(np.int32), z.astype(np.int32), z.astype(np.float32))
    names, inv = _group(s.name[rows])
    dur = s.dur_ns[rows]
    k = len(names)
    calls = np.bincount(inv, minlength=k).astype(np.int64)
    total = np.bincount(inv, weights=dur, minlength=k).astype(np.int64)
    mn = np.full(k, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(mn, inv, dur)
    mx = np.zeros(k, np.int64)
    np.maximum.at(mx, inv, dur)
    # representative launch config: the longest call's
    order = np.lexsort((dur, inv))
    last = np.append(np.flatnonzero(np.diff(inv[order])), len(order) - 1)
    rep = rows[order[last]]
    occ = s.occupancy[rows].astype(np.float64)
    valid = ~np.isnan(occ)
    occ_sum = np.bincount(inv[valid], weights=occ[valid], minlength=k)
    occ_n = np.bincount(inv[valid], minlength=k)
    occupancy = np.where(occ_n > 0, occ_sum / np.maximum(occ_n, 1), np.nan).astype(np.float32)
    all_total = max(int(total.sum()), 1)
    srt = np.argsort(-total, kind="stable")
    return KernelTable(name=names[srt].astype(np.int32), calls=calls[srt], total_ns=total[srt],
                       mean_ns=(total / np.maximum(calls, 1))[srt], min_ns=mn[srt], max_ns=mx[srt],
                       gpu_pct=(100.0 * total / all_total)[srt], grid=s.grid[rep][srt], block=s.block[rep][srt],
                       registers=s.registers[rep][srt], occupancy_pct=occupancy[srt])


def device_time_per_row(model: TraceModel) -> tuple[np.ndarray, np.ndarray]:
    """(self, inclusive) GPU ns launched under each CPU row, via launch flows and the call tree."""
    return cached(model, "device_time", lambda: _device_time(model))


def _device_time(model: TraceModel):
    s = model.slices
    n = len(s)
    par = parents(model)
    f = model.flows
    launch = f.kind == FlowKind.LAUNCH
    src, dst = f.src[launch], f.dst[launch]
    gdur = s.dur_ns[dst]
    op_kinds = np.asarray((Kind.CPU_OP, Kind.ANNOTATION, Kind.COLLECTIVE), dtype=np.int8)
    is_op = np.isin(s.kind, op_kinds)
    self_ns = np.zeros(n, np.int64)
    incl = np.zeros(n, np.int64)
    cur = par[src]
    found = np.zeros(len(src), bool)
    while True:
        live = cur >= 0
        if not live.any():
            break
        idx = np.flatnonzero(live)
        c = cur[idx]
        op = is_op[c]
        np.add.at(incl, c[op], gdur[idx[op]])
        first = op & ~found[idx]
        np.add.at(self_ns, c[first], gdur[idx[first]])
        found[idx[first]] = True
        cur[idx] = par[c]
    return self_ns, incl


def op_table(model: TraceModel, by_shapes: bool = False) -> OpTable:
    s = model.slices
    op_kinds = np.asarray((Kind.CPU_OP, Kind.ANNOTATION, Kind.COLLECTIVE), dtype=np.int8)
    cpu_tracks = model.tracks.kind == TrackKind.CPU_THREAD
    rows = np.flatnonzero(np.isin(s.kind, op_kinds) & cpu_tracks[s.track])
    if not len(rows):
        z = np.zeros(0, np.int64)
        return OpTable(z.astype(np.int32), z.astype(np.int32), z, z, z, z, z)
    par = parents(model)
    dur = s.dur_ns
    # self time: own duration minus direct children's (any kind on the same track)
    child_sum = np.zeros(len(s), np.int64)
    has_parent = par >= 0
    np.add.at(child_sum, par[has_parent], dur[has_parent])
    self_ns = np.maximum(dur - child_sum, 0)
    # inclusive time counted once for recursive calls of the same name (skip rows whose parent chain
    # holds the same name: approximate with the direct parent)
    p = par[rows]
    nested_same = (p >= 0) & (s.name[np.maximum(p, 0)] == s.name[rows])
    dev_self, dev_incl = device_time_per_row(model)
    keys = np.stack([s.name[rows], s.input_dims[rows] if by_shapes else np.zeros(len(rows), np.int32)], axis=1)
    uniq, inv = _group(keys)
    k = len(uniq)
    calls = np.bincount(inv, minlength=k).astype(np.int64)
    total = np.bincount(inv, weights=np.where(nested_same, 0, dur[rows]), minlength=k).astype(np.int64)
    selfs = np.bincount(inv, weights=self_ns[rows], minlength=k).astype(np.int64)
    dev = np.bincount(inv, weights=np.where(nested_same, 0, dev_incl[rows]), minlength=k).astype(np.int64)
    devs = np.bincount(inv, weights=dev_self[rows], minlength=k).astype(np.int64)
    srt = np.argsort(-total, kind="stable")
    return OpTable(name=uniq[srt, 0].astype(np.int32), input_dims=uniq[srt, 1].astype(np.int32), calls=calls[srt],
                   host_total_ns=total[srt], host_self_ns=selfs[srt], device_ns=dev[srt], device_self_ns=devs[srt])


def gpu_rows(model: TraceModel) -> np.ndarray:
    return np.flatnonzero(np.isin(model.slices.kind, np.asarray(GPU_KINDS, dtype=np.int8)))
