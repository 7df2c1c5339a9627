"""Pixel helpers of the timeline item: clipping to the view, and highlighted slices ("highlight all
matches") mapped to rows once and culled / merged per paint in numpy.

Clipping matters: Qt's raster engine drops a whole drawRects / drawLine call whose coordinates pass
~2^31 px, which a 1 s slice reaches at a 100 ns zoom; every x drawn is clipped to the view first.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.trace.model import SliceTable, TraceModel
from gui.timeline.rows import Row

NARROW_PX = 3.0  # outlines narrower than this merge with a neighbour closer than a pixel (same row)
MIN_OUTLINE_PX = 2.0  # a highlighted slice is outlined at least this wide


@dataclass(frozen=True, slots=True)
class Highlight:
    """Highlighted slices of one model that sit on a shown row, grouped by row, by start within a row."""

    model: int
    start_ns: np.ndarray  # float64
    end_ns: np.ndarray  # float64
    row: np.ndarray  # int64 timeline row (non-decreasing)
    max_end_ns: np.ndarray  # running max of end_ns within each row: searchsorted finds the first reaching t
    row_ids: np.ndarray  # the distinct rows, ascending
    offsets: np.ndarray  # group g = [offsets[g], offsets[g + 1])


def row_luts(models: list[TraceModel], rows: list[Row]) -> dict[int, np.ndarray]:
    """Per model a (track, depth) -> timeline row table; depths of a folded track map to its last shown
    row (the first, or the deepest shown level of a stack folded to a few), tracks of hidden models /
    folded ranks / a folded group to -1."""
    out: dict[int, np.ndarray] = {}
    for mi, m in enumerate(models):
        n_depth = int(m.tracks.max_depth.max(initial=0)) + 1
        out[mi] = np.full((len(m.tracks), n_depth), -1, np.int64)
    for i, r in enumerate(rows):
        if r.track >= 0 and r.model in out and r.depth < out[r.model].shape[1]:
            out[r.model][r.track, r.depth] = i
    for mi, lut in out.items():
        out[mi] = np.maximum.accumulate(lut, axis=1)  # shown depths are 0..k-1 on increasing rows
    return out


def highlight_of(model: int, rows: np.ndarray, s: SliceTable, timeline_rows: np.ndarray) -> Highlight:
    """`rows` ordered by start; `timeline_rows` their row (-1 = not shown, dropped here). Sorting by
    row happens here once, so that a paint only searches each visible row's group."""
    keep = timeline_rows >= 0
    order = np.argsort(timeline_rows[keep], kind="stable")  # by row, then by start
    rows, R = rows[keep][order], timeline_rows[keep][order]
    start = s.ts_ns[rows].astype(np.float64)
    end = start + s.dur_ns[rows]
    bounds = np.flatnonzero(np.concatenate(([True], R[1:] != R[:-1]))) if len(R) else np.zeros(0, np.int64)
    offsets = np.concatenate((bounds, [len(R)])).astype(np.int64)
    max_end = end.copy()
    for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist()):  # one pass per row (hundreds at most)
        np.maximum.accumulate(end[a:b], out=max_end[a:b])
    return Highlight(model, start, end, R, max_end, R[bounds], offsets)


def visible_outlines(h: Highlight, x0: float, x1: float, sx: float, dx: float, r0: int, r1: int):
    """Device-pixel outlines (x0 px, x1 px, row) of the highlighted slices in [x0, x1] ns and rows
    [r0, r1), with runs of narrow outlines on one row closer than a pixel merged into one."""
    g0, g1 = int(h.row_ids.searchsorted(r0)), int(h.row_ids.searchsorted(r1))
    ranges = []
    for g in range(g0, g1):
        a, b = int(h.offsets[g]), int(h.offsets[g + 1])
        lo = a + int(h.max_end_ns[a:b].searchsorted(x0, side="left"))
        hi = a + int(h.start_ns[a:b].searchsorted(x1, side="right"))
        if hi > lo:
            ranges.append((lo, hi))
    if not ranges:
        return np.zeros(0), np.zeros(0), np.zeros(0, np.int64)
    lens = np.array([b - a for a, b in ranges], np.int64)
    starts = np.array([a for a, _ in ranges], np.int64)
    idx = np.arange(int(lens.sum()), dtype=np.int64) + np.repeat(starts - (np.cumsum(lens) - lens), lens)
    idx = idx[h.end_ns[idx] >= x0]
    R = h.row[idx]
    xa = h.start_ns[idx] * sx + dx
    xb = np.maximum(h.end_ns[idx] * sx + dx, xa + MIN_OUTLINE_PX)
    if len(xa) > 1:
        narrow = (xb - xa) < NARROW_PX
        join = narrow[1:] & narrow[:-1] & (R[1:] == R[:-1]) & (xa[1:] - xb[:-1] < 1.0)
        if join.any():
            keep = np.flatnonzero(np.concatenate(([True], ~join)))
            xa, xb, R = xa[keep], np.maximum.reduceat(xb, keep), R[keep]
    return xa, xb, R


def clip_px(x0: np.ndarray, x1: np.ndarray, lo: float, hi: float) -> None:
    """Clip pixel intervals to [lo, hi] in place (float64, before Qt sees them)."""
    np.clip(x0, lo, hi, out=x0)
    np.clip(x1, lo, hi, out=x1)


def clip_segment(xa: float, ya: float, xb: float, yb: float, lo: float, hi: float):
    """The part of a line segment with lo <= x <= hi, or None when it lies outside."""
    if (xa < lo and xb < lo) or (xa > hi and xb > hi):
        return None
    if xa != xb:
        k = (yb - ya) / (xb - xa)
        ca, cb = min(max(xa, lo), hi), min(max(xb, lo), hi)
        ya, yb = ya + (ca - xa) * k, ya + (cb - xa) * k
        xa, xb = ca, cb
    return xa, ya, xb, yb
