"""core.analysis.intervals.Intervals: disjoint sorted [start, end) ns intervals and the operations the analyses
repeat (union, covered length per window, gaps, membership, subtract / intersect / overlap)."""
from __future__ import annotations

import numpy as np
import pytest

from core.analysis import intervals
from core.analysis.intervals import Intervals


def _pairs(iv: Intervals) -> list[tuple[int, int]]:
    return list(zip(iv.start_ns.tolist(), iv.end_ns.tolist()))


def test_empty():
    iv = Intervals.union_of([], [])
    assert len(iv) == 0 and iv.total_ns() == 0
    assert iv.start_ns.dtype == np.int64 and iv.end_ns.dtype == np.int64
    assert _pairs(Intervals.empty()) == []
    assert iv.covered(np.array([0, 10]), np.array([5, 20])).tolist() == [0, 0]
    assert _pairs(iv.gaps(0, 10)) == [(0, 10)]
    assert iv.contains(np.array([0, 5])).tolist() == [False, False]
    other = Intervals.union_of([0], [10])
    assert iv.overlap_ns(other) == 0 and other.overlap_ns(iv) == 0
    assert _pairs(other.subtract(iv)) == [(0, 10)]
    assert _pairs(other.intersect(iv)) == []
    assert _pairs(iv.merge(other)) == [(0, 10)]


def test_unsorted_overlapping_nested_and_touching_inputs_merge():
    # unsorted: (20, 30) first; nested: (22, 25) inside it; overlapping: (0, 10) and (5, 12); touching: (12, 15)
    iv = Intervals.union_of(np.array([20, 0, 22, 5, 12]), np.array([30, 10, 25, 12, 15]))
    assert _pairs(iv) == [(0, 15), (20, 30)]
    assert iv.total_ns() == 25
    start, end = iv  # unpacks as the two arrays
    assert start.tolist() == [0, 20] and end.tolist() == [15, 30]


def test_zero_length_intervals_are_kept_until_nonempty():
    iv = Intervals.union_of([5, 10], [5, 20])
    assert _pairs(iv) == [(5, 5), (10, 20)]
    assert _pairs(iv.nonempty()) == [(10, 20)]
    assert iv.total_ns() == iv.nonempty().total_ns() == 10


def test_covered_per_window_clips_to_each_window():
    iv = Intervals.union_of([0, 20], [10, 30])
    w0 = np.array([0, 5, 10, 25, 40])
    w1 = np.array([30, 25, 20, 100, 50])
    assert iv.covered(w0, w1).tolist() == [20, 10, 0, 5, 0]
    assert int(iv.covered(5, 25)) == 10  # scalars too


def test_gaps_and_contains():
    iv = Intervals.union_of([10, 30], [20, 40])
    assert _pairs(iv.gaps(0, 50)) == [(0, 10), (20, 30), (40, 50)]
    assert _pairs(iv.gaps(15, 35)) == [(20, 30)]
    assert _pairs(iv.gaps(10, 20)) == []  # fully covered
    # [start, end): the start is inside, the end is not
    assert iv.contains(np.array([9, 10, 19, 20, 35, 40])).tolist() == [False, True, True, False, True, False]


def test_subtract_intersect_overlap():
    a = Intervals.union_of([0, 20], [10, 30])
    b = Intervals.union_of([5, 25], [22, 40])
    assert _pairs(a.intersect(b)) == [(5, 10), (20, 22), (25, 30)]
    assert _pairs(a.subtract(b)) == [(0, 5), (22, 25)]
    assert a.overlap_ns(b) == b.overlap_ns(a) == 5 + 2 + 5
    assert a.subtract(b).total_ns() + a.overlap_ns(b) == a.total_ns()
    # nested: b inside a splits it; touching: nothing in common
    outer = Intervals.union_of([0], [100])
    assert _pairs(outer.subtract(Intervals.union_of([40], [60]))) == [(0, 40), (60, 100)]
    assert outer.overlap_ns(Intervals.union_of([100], [200])) == 0
    assert _pairs(outer.merge(Intervals.union_of([100], [200]))) == [(0, 200)]


@pytest.mark.parametrize("seed", range(20))
def test_same_numbers_as_the_array_functions(seed):
    """The type is a thin layer: every method gives the array functions' numbers on random intervals."""
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, 1000, 30)
    ends = starts + rng.integers(0, 80, 30)
    other_starts = rng.integers(0, 1000, 20)
    other_ends = other_starts + rng.integers(0, 80, 20)
    a = Intervals.union_of(starts, ends)
    b = Intervals.union_of(other_starts, other_ends)
    us, ue = intervals.union(starts, ends)
    vs, ve = intervals.union(other_starts, other_ends)
    assert np.array_equal(a.start_ns, us) and np.array_equal(a.end_ns, ue)
    assert _pairs(a.subtract(b)) == list(zip(*(x.tolist() for x in intervals.subtract(us, ue, vs, ve))))
    assert _pairs(a.intersect(b)) == list(zip(*(x.tolist() for x in intervals.intersect(us, ue, vs, ve))))
    assert a.overlap_ns(b) == intervals.intersect_total(us, ue, vs, ve)
    w0 = rng.integers(0, 1000, 10)
    w1 = w0 + rng.integers(0, 200, 10)
    assert np.array_equal(a.covered(w0, w1), intervals.covered(us, ue, w0, w1))
    # brute force on a grid of ns: membership and total length
    grid = np.arange(0, 1100)
    inside = np.zeros(len(grid), bool)
    for s, e in zip(starts, ends):
        inside |= (grid >= s) & (grid < e)
    assert np.array_equal(a.contains(grid), inside)
    assert a.total_ns() == int(inside.sum())
