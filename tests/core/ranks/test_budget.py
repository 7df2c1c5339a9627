"""The pool admits ranks while their estimated peaks fit the memory budget (core/ranks/budget.py)."""
from __future__ import annotations

import time

from core.ranks import budget
from core.ranks.executor import LocalPool


def _span(task):
    t0 = time.monotonic()
    time.sleep(0.4)
    return task, t0, time.monotonic()


def _overlaps(spans) -> bool:
    spans = sorted(spans)
    return any(b0 < a1 for (a0, a1), (b0, _b1) in zip(spans, spans[1:]))


def test_big_ranks_one_at_a_time_small_ones_side_by_side(monkeypatch):
    monkeypatch.setenv("PTPROF_MAP_MEMORY_BYTES", "100")
    pool = LocalPool(2)
    try:
        # forkserver / spawn (pytest's threads) start workers on demand: the first batch brings both up
        list(pool.map_unordered(_span, range(4), weight=lambda t: 10))
        big = [r for _i, r in pool.map_unordered(_span, range(3), weight=lambda t: 80)]
        small = [r for _i, r in pool.map_unordered(_span, range(4), weight=lambda t: 10)]
    finally:
        pool.close()
    assert not _overlaps([(a, b) for _t, a, b in big])
    assert _overlaps([(a, b) for _t, a, b in small])


def test_a_rank_over_the_whole_budget_still_runs(monkeypatch):
    monkeypatch.setenv("PTPROF_MAP_MEMORY_BYTES", "1")
    pool = LocalPool(2)
    try:
        got = sorted(t for _i, (t, _a, _b) in pool.map_unordered(_span, range(2), weight=lambda t: 50))
    finally:
        pool.close()
    assert got == [0, 1]


def test_estimates(tmp_path, monkeypatch):
    from helpers import shared_trace
    gz = shared_trace("gpu_issues.pt.trace.json.gz")
    assert budget.estimate_peak(str(gz)) >= 2 * 8 * gz.stat().st_size
    monkeypatch.delenv("PTPROF_MAP_MEMORY_BYTES", raising=False)
    assert budget.budget_bytes() >= budget.FLOOR
