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
    """Highlighted slices of one model that sit on a shown row, ordered by start."""

    model: int
    start_ns: np.ndarray  # float64
    end_ns: np.ndarray  # float64
    row: np.ndarray  # int64 timeline row
    max_end_ns: np.ndarray  # running max of end_ns: searchsorted gives the first slice reaching t


def row_luts(models: list[TraceModel], rows: list[Row]) -> dict[int, np.ndarray]:
    """Per model a (track, depth) -> timeline row table; depths of a folded track map to its first row,
    tracks of hidden models / folded ranks to -1."""
    out: dict[int, np.ndarray] = {}
    for mi, m in enumerate(models):
        n_depth = int(m.tracks.max_depth.max(initial=0)) + 1
        out[mi] = np.full((len(m.tracks), n_depth), -1, np.int64)
    for i, r in enumerate(rows):
        if r.track >= 0 and r.model in out and r.depth < out[r.model].shape[1]:
            out[r.model][r.track, r.depth] = i
    for mi, lut in out.items():
        out[mi] = np.where(lut < 0, lut[:, :1], lut)
    return out


def highlight_of(model: int, rows: np.ndarray, s: SliceTable, timeline_rows: np.ndarray) -> Highlight:
    """`rows` ordered by start; `timeline_rows` their row (-1 = not shown, dropped here)."""
    keep = timeline_rows >= 0
    rows = rows[keep]
    start = s.ts_ns[rows].astype(np.float64)
    end = start + s.dur_ns[rows]
    return Highlight(model, start, end, timeline_rows[keep],
                     np.maximum.accumulate(end) if len(end) else end)


def visible_outlines(h: Highlight, x0: float, x1: float, sx: float, dx: float, r0: int, r1: int):
    """Device-pixel outlines (x0 px, x1 px, row) of the highlighted slices in [x0, x1] ns and rows
    [r0, r1), with runs of narrow outlines on one row closer than a pixel merged into one."""
    a = int(h.max_end_ns.searchsorted(x0, side="left"))
    b = int(h.start_ns.searchsorted(x1, side="right"))
    if b <= a:
        return np.zeros(0), np.zeros(0), np.zeros(0, np.int64)
    R = h.row[a:b]
    idx = np.flatnonzero((h.end_ns[a:b] >= x0) & (R >= r0) & (R < r1)) + a
    if not len(idx):
        return np.zeros(0), np.zeros(0), np.zeros(0, np.int64)
    R = h.row[idx]
    order = np.argsort(R, kind="stable")  # by row, then by start (idx is start ordered)
    idx, R = idx[order], R[order]
    xa = h.start_ns[idx] * sx + dx
    xb = np.maximum(h.end_ns[idx] * sx + dx, xa + MIN_OUTLINE_PX)
    if len(xa) > 1:
        narrow = (xb - xa) < NARROW_PX
        join = narrow[1:] & narrow[:-1] & (R[1:] == R[:-1]) & (xa[1:] - xb[:-1] < 1.0)
        if join.any():
            starts = np.flatnonzero(np.concatenate(([True], ~join)))
            xa, xb, R = xa[starts], np.maximum.reduceat(xb, starts), R[starts]
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
