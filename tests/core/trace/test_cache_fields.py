"""A cache entry is checked field by field like its columns (issue 37): a model stored through the project's
own `cache.store` with values the parser never keeps (a dur_ns of 2^62, a wall clock of 2^100) is a miss on
the next open - deleted and rebuilt from the trace - never a hit that overflows later."""
from __future__ import annotations

import shutil
from dataclasses import replace

import numpy as np
import pytest
from helpers import SAMPLE

from core.trace import cache
from core.trace.loader import load


@pytest.fixture
def trace(tmp_path, monkeypatch):
    monkeypatch.setenv("PTPROF_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PTPROF_CACHE_PACK_MAX_BYTES", "0")
    p = tmp_path / SAMPLE.name
    shutil.copy(SAMPLE, p)
    return p


def _forged(model, how):
    s = model.slices
    if how == "dur_2_62":
        dur = np.array(s.dur_ns)
        dur[0] = 2**62
        return replace(model, slices=s.with_columns(dur_ns=dur))
    if how == "ts_2_62":
        ts = np.array(s.ts_ns)
        ts[-1] = 2**62
        return replace(model, slices=s.with_columns(ts_ns=ts))
    if how == "base_2_100":
        return replace(model, meta=replace(model.meta, base_unix_ns=2**100))
    if how == "counts_string":
        return replace(model, counts=replace(model.counts, kernels="many"))
    raise ValueError(how)


@pytest.mark.parametrize("how", ["dur_2_62", "ts_2_62", "base_2_100", "counts_string"])
def test_a_stored_model_of_impossible_values_is_a_miss_and_rebuilt(trace, how):
    model = load(trace, use_cache=False).primary
    assert cache.store(trace, _forged(model, how))
    assert cache.has_entry(trace)
    assert cache.load(trace) is None  # checked on open: a miss, and the entry is removed
    assert not cache.has_entry(trace)
    ts = load(trace)  # parsed again and stored again: the next open is a hit of the true model
    assert cache.load(trace) is not None
    assert int(ts.primary.slices.dur_ns.max()) == int(model.slices.dur_ns.max())


def test_a_true_entry_still_hits(trace):
    load(trace)
    hit = cache.load(trace)
    assert hit is not None and hit.counts == load(trace, use_cache=False).primary.counts
