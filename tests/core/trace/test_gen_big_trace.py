"""bench/gen_big_trace.py: the numpy copies (--fast, how the 10 GB trace is made) load into the same model
structure as the regex copies: every event, launch flow, python parent link and step, no overlaps."""
from __future__ import annotations

import gzip

import gen_big_trace  # tests/gen_big_trace.py (bench/gen_big_trace.py runs it)
import numpy as np
from helpers import shared_trace

from core.trace.loader import load
from core.trace.model import FlowKind


def test_fast_copies_equal_the_regex_copies(tmp_path):
    src = shared_trace("gpu_issues.pt.trace.json.gz")
    mb = len(gzip.decompress(src.read_bytes())) / 1e6 * 2.5  # two copies and a cut third
    models = []
    for fast in (False, True):
        out = tmp_path / f"{fast}.pt.trace.json"
        gen_big_trace.main(["--source", str(src), "--out", str(out), "--target-mb", str(mb)] + (["--fast"] if fast else []))
        models.append(load(out, use_cache=False).primary)
    slow, fast = models
    assert fast.counts == slow.counts and not fast.warnings
    for kind in (FlowKind.LAUNCH, FlowKind.FWD_BWD):
        assert (fast.flows.kind == kind).sum() == (slow.flows.kind == kind).sum() > 0
    assert len(fast.steps) == len(slow.steps) == 15
    assert (fast.slices.python_parent_id >= 0).sum() == (slow.slices.python_parent_id >= 0).sum()
    starts = np.sort(fast.steps.ts_ns)
    assert (np.diff(starts) > 0).all()  # the copies' steps do not overlap
