"""Counts and costs the review found inflated, checked against the raw events of the real traces:
one count per collective / compile, first compiles not billed as recompiles, launch-bound runs kept
inside their loop, and costs that do not add up to more than the step time."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import shared_trace

from core.rules import analyze
from core.trace.model import Kind


def _names(m, predicate) -> np.ndarray:
    ids = m.strings.ids_matching(predicate)
    return np.flatnonzero(np.isin(m.slices.name, ids))


def test_comm_bound_counts_each_collective_once(loaded):
    ts = loaded(shared_trace("gpu_ddp2"))
    result = analyze(ts)
    for i, m in enumerate(ts.models):
        # the CPU-side c10d ops are the calls; gloo:all_reduce (CPU + GPU annotation) are the same calls again
        calls = _names(m, lambda n: n == "c10d::allreduce_")
        assert len(calls) and len(_names(m, lambda n: n.startswith("gloo:"))) > len(calls)
        comm = next(f for f in result.findings if f.rule == "comm_bound" and f.model_index == i)
        assert comm.count == len(calls)
        assert len(comm.time_ranges) == len(calls)
