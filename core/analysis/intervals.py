"""Interval arithmetic on int64 ns arrays: union, coverage inside windows, gaps. All vectorised.

`Intervals` is the value the analyses pass around (disjoint sorted [start, end) ns intervals); the functions
below it are the same operations on bare (starts, ends) array pairs, which `Intervals` calls.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

EMPTY_NS = np.zeros(0, np.int64)
EMPTY_NS.flags.writeable = False


@dataclass(frozen=True, slots=True)
class Intervals:
    """Disjoint [start, end) intervals sorted by start, as int64 ns arrays (what `union_of` returns; the plain
    constructor trusts its arrays to be so). Unpacks as `(start_ns, end_ns)` for code that takes the arrays."""

    start_ns: np.ndarray
    end_ns: np.ndarray

    @classmethod
    def union_of(cls, starts, ends) -> Intervals:
        """The union of any intervals (unsorted, overlapping, nested, touching: merged)."""
        return cls(*union(starts, ends))

    @classmethod
    def empty(cls) -> Intervals:
        return cls(EMPTY_NS, EMPTY_NS)

    def __len__(self) -> int:
        return len(self.start_ns)

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter((self.start_ns, self.end_ns))

    def total_ns(self) -> int:
        """Summed length."""
        return int((self.end_ns - self.start_ns).sum())

    def nonempty(self) -> Intervals:
        """Without the zero-length intervals (a union keeps an instant as [t, t))."""
        keep = self.end_ns > self.start_ns
        return Intervals(self.start_ns[keep], self.end_ns[keep])

    def covered(self, w0, w1) -> np.ndarray:
        """Covered length inside each window [w0, w1) (arrays or scalars)."""
        return covered(self.start_ns, self.end_ns, w0, w1)

    def gaps(self, t0: int, t1: int) -> Intervals:
        """The parts of [t0, t1) not covered."""
        return Intervals(*gaps(self.start_ns, self.end_ns, t0, t1))

    def contains(self, ts_ns: np.ndarray) -> np.ndarray:
        """Per time: inside some interval."""
        return _member(self.start_ns, self.end_ns, ts_ns)

    def merge(self, other: Intervals) -> Intervals:
        """Union with another."""
        return Intervals.union_of(np.concatenate([self.start_ns, other.start_ns]),
                                  np.concatenate([self.end_ns, other.end_ns]))

    def intersect(self, other: Intervals) -> Intervals:
        return Intervals(*intersect(self.start_ns, self.end_ns, other.start_ns, other.end_ns))

    def subtract(self, other: Intervals) -> Intervals:
        return Intervals(*subtract(self.start_ns, self.end_ns, other.start_ns, other.end_ns))

    def overlap_ns(self, other: Intervals) -> int:
        """Total length of the intersection with another."""
        return intersect_total(self.start_ns, self.end_ns, other.start_ns, other.end_ns)


def union(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge possibly overlapping intervals into sorted disjoint ones."""
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    if len(starts) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    run_max = np.maximum.accumulate(e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > run_max[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(s) - 1)
    return s[first], run_max[last]


def covered(us: np.ndarray, ue: np.ndarray, w0, w1) -> np.ndarray:
    """Length of the disjoint sorted union (us, ue) inside each window [w0, w1) (arrays or scalars)."""
    w0 = np.asarray(w0, dtype=np.int64)
    w1 = np.asarray(w1, dtype=np.int64)
    if len(us) == 0:
        return np.zeros(np.broadcast(w0, w1).shape, dtype=np.int64)
    cum = np.concatenate([[0], np.cumsum(ue - us)])

    def upto(t):
        i = np.searchsorted(us, t, side="right")
        over = np.where(i > 0, np.clip(ue[np.maximum(i - 1, 0)] - t, 0, None), 0)
        return cum[i] - over

    return np.maximum(upto(w1) - upto(w0), 0)


def gaps(us: np.ndarray, ue: np.ndarray, t0: int, t1: int) -> tuple[np.ndarray, np.ndarray]:
    """The parts of [t0, t1) not covered by the disjoint sorted union (us, ue)."""
    keep = (ue > t0) & (us < t1)
    s = np.clip(us[keep], t0, t1)
    e = np.clip(ue[keep], t0, t1)
    gs = np.concatenate([[t0], e])
    ge = np.concatenate([s, [t1]])
    ok = ge > gs
    return gs[ok].astype(np.int64), ge[ok].astype(np.int64)


def intersect_total(a_s, a_e, b_s, b_e) -> int:
    """Total overlap of two disjoint sorted unions."""
    return int(covered(b_s, b_e, a_s, a_e).sum()) if len(a_s) else 0


def _member(us: np.ndarray, ue: np.ndarray, t: np.ndarray) -> np.ndarray:
    if not len(us):
        return np.zeros(len(t), bool)
    i = np.searchsorted(us, t, side="right") - 1
    return (i >= 0) & (t < ue[np.maximum(i, 0)])


def _combine(a_s, a_e, b_s, b_e, op) -> tuple[np.ndarray, np.ndarray]:
    pts = np.unique(np.concatenate([a_s, a_e, b_s, b_e]).astype(np.int64))
    if len(pts) < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    left, right = pts[:-1], pts[1:]
    keep = op(_member(a_s, a_e, left), _member(b_s, b_e, left))
    return union(left[keep], right[keep])


def intersect(a_s, a_e, b_s, b_e) -> tuple[np.ndarray, np.ndarray]:
    """Intersection of two disjoint sorted unions, as a disjoint sorted union."""
    return _combine(a_s, a_e, b_s, b_e, np.logical_and)


def subtract(a_s, a_e, b_s, b_e) -> tuple[np.ndarray, np.ndarray]:
    """a minus b for disjoint sorted unions."""
    return _combine(a_s, a_e, b_s, b_e, lambda x, y: x & ~y)
