"""Per-step time breakdown on real traces: the parts add up, and each trace's known character shows."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import shared_trace

from core.analysis import intervals
from core.analysis.breakdown import PARTS, step_breakdown
from core.trace.loader import load

_CACHE: dict = {}


def _model(name):
    if name not in _CACHE:
        _CACHE[name] = load(shared_trace(name), use_cache=False).primary
    return _CACHE[name]


@pytest.mark.parametrize("name", ["gpu_issues.pt.trace.json.gz", "gpu_clean.pt.trace.json.gz",
                                  "gpu_dataloader.pt.trace.json.gz", "gpu_compile_small.pt.trace.json.gz",
                                  "gpu_minimal_opts.pt.trace.json.gz"])
def test_parts_sum_to_step_duration(name):
    b = step_breakdown(_model(name))
    assert b.has_gpu and len(b) >= 3
    total = sum(getattr(b, p) for p in PARTS)
    assert np.all(np.abs(total - b.dur_ns) <= 2)  # ns rounding at interval edges only
    assert all((getattr(b, p) >= 0).all() for p in PARTS)


def test_dataloader_trace_is_dominated_by_the_dataloader():
    b = step_breakdown(_model("gpu_dataloader.pt.trace.json.gz"))
    t = b.totals()
    assert t["dataloader_ns"] > 0.5 * t["dur_ns"]
    assert (b.dataloader_cpu_ns > 0.5 * b.dur_ns).all()


def test_compile_step_is_attributed_to_compile():
    b = step_breakdown(_model("gpu_compile_small.pt.trace.json.gz"))
    worst = int(np.argmax(b.dur_ns))  # the recompiling step (~3.9 s)
    assert b.compile_ns[worst] > 0.8 * b.dur_ns[worst]


def test_issues_trace_has_sync_wait_and_clean_has_none():
    assert step_breakdown(_model("gpu_issues.pt.trace.json.gz")).sync_wait_ns.sum() > 0
    assert step_breakdown(_model("gpu_clean.pt.trace.json.gz")).sync_wait_ns.sum() == 0


def test_cpu_only_trace_has_no_gpu_parts():
    b = step_breakdown(_model("cpu_train.pt.trace.json.gz"))
    assert not b.has_gpu
    assert all(getattr(b, p).sum() == 0 for p in PARTS)
    assert b.dataloader_cpu_ns.sum() > 0  # num_workers=0 DataLoader on the training thread


def test_intersect_and_subtract():
    a = (np.array([0, 10, 30]), np.array([5, 20, 40]))
    b = (np.array([3, 15]), np.array([12, 35]))
    s, e = intervals.intersect(*a, *b)
    assert list(zip(s.tolist(), e.tolist())) == [(3, 5), (10, 12), (15, 20), (30, 35)]
    s, e = intervals.subtract(*a, *b)
    assert list(zip(s.tolist(), e.tolist())) == [(0, 3), (12, 15), (35, 40)]
    z = np.zeros(0, np.int64)
    assert len(intervals.intersect(z, z, *b)[0]) == 0
    assert list(intervals.subtract(*b, z, z)[0]) == [3, 15]
