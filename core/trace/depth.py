"""Nesting depth and GPU lanes of slice rows sorted by (track, ts, -dur), fully vectorised, plus the
row-piece helpers build.py shares (bounded temporaries, the GIL free between numpy calls).

Moved out of build.py (which assembles the model); the long per-row steps run in pieces of PIECE_ROWS.
"""
from __future__ import annotations

import heapq

import numpy as np

from core.trace.limits import limits

PIECE_ROWS = 1 << 22  # row pieces of the long per-row steps: bounded temporaries, the GIL free between them


def _is_identity(order: np.ndarray) -> bool:
    """order == arange(n), checked in pieces (no n-sized temporaries)."""
    for p0 in range(0, len(order), PIECE_ROWS):
        piece = order[p0:p0 + PIECE_ROWS]
        if piece[0] != p0 or not (np.diff(piece) == 1).all():
            return False
    return True


def repeat(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """np.repeat(values, counts) through a cumsum and a take: np.repeat holds the GIL for the whole
    call (68 ms per 30M rows here), these release it (a load in a GUI thread stays responsive)."""
    total = int(counts.sum())
    if total < PIECE_ROWS:
        return np.repeat(values, counts)
    nz = np.flatnonzero(counts)
    mark = np.zeros(total, dtype=np.int32 if len(nz) < 2**31 else np.int64)
    mark[np.cumsum(counts[nz][:-1])] = 1
    np.cumsum(mark, out=mark)
    return values[nz][mark]


def compute_depth(ts: np.ndarray, dur: np.ndarray, offsets: np.ndarray, track: np.ndarray | None = None) -> np.ndarray:
    """Nesting depth per row for rows sorted by (track, ts, -dur), fully vectorised.

    depth(i) = number of earlier rows on the same track still open at ts(i). Rows on one track are
    mapped to disjoint key ranges (key = ts + per-track shift), so one sort of the end keys and one
    searchsorted serve all tracks: depth(i) = i - #(end keys <= start key(i)). Zero-duration rows
    sort last among equal starts; the few groups holding them get a small correction.
    `track`: the row's track (sorted), when the caller has it (saves building it from offsets).
    The per-row steps run in pieces of PIECE_ROWS into an int32 depth: ~20 bytes per row of
    temporaries instead of ~40, and no single numpy call holds the GIL for long.
    """
    n = len(ts)
    if n == 0:
        return np.zeros(0, dtype=np.int16)
    counts = np.diff(offsets)
    nonempty = counts > 0
    first = offsets[:-1][nonempty]
    tmin = np.zeros(len(counts), dtype=np.int64)
    tmax = np.zeros(len(counts), dtype=np.int64)
    tmin[nonempty] = np.minimum.reduceat(ts, first)
    tmax[nonempty] = _max_end(ts, dur, first)  # in row pieces: no n-sized ts + dur
    width = np.where(nonempty, tmax - tmin + 1, 0)
    base = np.concatenate([[0], np.cumsum(width)[:-1]]) - tmin
    key = base[track] if track is not None else repeat(base, counts)  # per-row shift
    end = ts + dur
    end += key
    end.sort(kind="stable")  # timsort: end keys come in long sorted runs (7x faster here)
    key += ts  # start keys, non-decreasing
    dtype = np.int32 if n < 2**31 else np.int64
    depth = np.empty(n, dtype=dtype)
    if not _depth_merge(end, key, depth):
        for p0 in range(0, n, PIECE_ROWS):
            p1 = min(n, p0 + PIECE_ROWS)
            d = np.searchsorted(end, key[p0:p1], side="right")
            np.subtract(np.arange(p0, p1, dtype=np.int64), d, out=d)
            depth[p0:p1] = d
    del end
    zero = np.flatnonzero(dur == 0)
    if len(zero):
        # rows tied with a zero-duration row on (track, ts): zero rows are the tail of their group
        gstart = np.searchsorted(key, key[zero], side="left")
        gend = np.searchsorted(key, key[zero], side="right")
        depth[zero] += (gend - zero).astype(dtype)  # zero rows at or after it in the group were counted as ended
        first_z = np.flatnonzero(np.r_[True, gstart[1:] != gstart[:-1]])  # gstart is sorted: its uniques
        gs = gstart[first_z]
        ge = gend[first_z]
        fz = zero[first_z]
        lengths = fz - gs  # non-zero rows of the group: each counted the group's zeros as ended
        if lengths.any():
            rows = repeat(gs - np.cumsum(np.concatenate([[0], lengths[:-1]])), lengths) + np.arange(lengths.sum())
            depth[rows] += repeat(ge - fz, lengths).astype(dtype)
    del key
    out = np.empty(n, dtype=np.int16)
    for p0 in range(0, n, PIECE_ROWS):
        out[p0:p0 + PIECE_ROWS] = np.clip(depth[p0:p0 + PIECE_ROWS], 0, 32767)
    return out


def _depth_merge(end: np.ndarray, key: np.ndarray, depth: np.ndarray) -> bool:
    """depth = row - #(end <= key) by the scanner's linear merge (`_scan.depth_merge`, no GIL); False
    without the scanner (the caller's searchsorted pieces then do it: 10 GB trace 0.84 s vs ~0.15 s)."""
    from core.trace import columns
    fn = getattr(columns._scan, "depth_merge", None) if columns.scan_available() else None  # noqa: SLF001
    if fn is None or end.dtype != np.int64 or key.dtype != np.int64:
        return False
    return bool(fn(np.ascontiguousarray(end), np.ascontiguousarray(key), depth))


def _max_end(ts: np.ndarray, dur: np.ndarray, first: np.ndarray) -> np.ndarray:
    """max(ts + dur) per non-empty track (tracks start at `first`), in row pieces."""
    out = None
    n = len(ts)
    bounds = np.append(first, n)
    for p0 in range(0, n, PIECE_ROWS):
        p1 = min(n, p0 + PIECE_ROWS)
        # tracks overlapping [p0, p1): reduce each over its part of the piece
        t0 = int(np.searchsorted(bounds, p0, side="right")) - 1
        t1 = int(np.searchsorted(bounds, p1, side="left"))
        starts = np.maximum(bounds[t0:t1], p0) - p0
        part = np.maximum.reduceat(ts[p0:p1] + dur[p0:p1], starts)
        if out is None:
            out = np.full(len(first), np.iinfo(np.int64).min, dtype=np.int64)
        np.maximum(out[t0:t1], part, out=out[t0:t1])
    return out


def assign_lanes(ts, dur, offsets, gpu_track, depth) -> int:
    """GPU tracks: depth := sub-row so that overlapping events on one stream are all kept.

    Each event takes the lowest-numbered lane free at its start (rows are sorted by start). An event
    that starts after everything before it has ended opens a cluster with every lane free (lane 0);
    only clusters of overlapping events are walked, with a heap of busy lanes by end time and a heap
    of free lane numbers: O(n log lanes). Lanes stop at max_lanes (int16 depth); returns how many
    events had to share the last lane."""
    max_lane = int(limits()["lanes"]["max_lanes"])
    capped = 0
    for t in np.flatnonzero(gpu_track).tolist():
        a, b = int(offsets[t]), int(offsets[t + 1])
        if b - a == 0:
            continue
        s = ts[a:b]
        e = s + dur[a:b]
        prev_end = np.maximum.accumulate(e)
        opens = np.ones(b - a, dtype=bool)
        opens[1:] = s[1:] >= prev_end[:-1]
        depth[a:b] = 0
        if opens.all():
            continue
        starts = np.flatnonzero(opens)
        sizes = np.diff(np.append(starts, b - a))
        for c0, size in zip(starts[sizes > 1].tolist(), sizes[sizes > 1].tolist()):
            lanes, n_capped = _cluster_lanes(s[c0:c0 + size].tolist(), e[c0:c0 + size].tolist(), max_lane)
            depth[a + c0:a + c0 + size] = lanes
            capped += n_capped
    return capped


def _cluster_lanes(starts: list, ends: list, max_lane: int) -> tuple[list[int], int]:
    busy: list[tuple[int, int]] = []  # (end, lane)
    free: list[int] = []
    n_lanes = capped = 0
    out = [0] * len(starts)
    for i, (si, ei) in enumerate(zip(starts, ends)):
        while busy and busy[0][0] <= si:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            lane = heapq.heappop(free)
        elif n_lanes < max_lane:
            lane = n_lanes
            n_lanes += 1
        else:  # every lane busy: share the last one
            capped += 1
            out[i] = max_lane
            continue
        out[i] = lane
        heapq.heappush(busy, (ei, lane))
    return out, capped
