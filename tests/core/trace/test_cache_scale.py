"""The cache at hundreds of ranks (issue 33): one mapping per entry, the bound scales with the run, and a
warm open that must parse says why."""
from __future__ import annotations

import errno
import os
import shutil

import numpy as np
import pytest
from helpers import shared_trace

from core.trace import cache
from core.trace.loader import load

SOURCE = "gpu_issues.pt.trace.json.gz"


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors through /proc")
def test_a_big_entry_is_one_mapping_and_one_descriptor(tmp_path, monkeypatch, models_equal):
    monkeypatch.setattr(cache, "MAP_PACKED_FROM", 1024)  # gpu_issues' columns count as big here
    path = tmp_path / SOURCE
    shutil.copy(shared_trace(SOURCE), path)
    cold = load(path)
    before = _fds()
    warm = [load(path) for _ in range(5)]  # five models alive at once
    assert all(w.cache_hit for w in warm)
    assert _fds() - before <= 5  # one per entry opened (the per-column layout kept ~10 each)
    models_equal(warm[0].primary, cold.primary)
    assert not warm[0].primary.slices.ts_ns.flags.writeable


def test_the_run_being_opened_never_evicts_its_own_entries(tmp_path, monkeypatch):
    run = tmp_path / "run"
    run.mkdir()
    for r in range(4):
        shutil.copy(shared_trace(SOURCE), run / f"rank{r}.pt.trace.json.gz")
    monkeypatch.setenv("PTPROF_CACHE_MAX_BYTES", "1000")  # far below one entry
    load(run)
    assert all(cache.has_entry(p) for p in run.iterdir())  # every rank reopens warm
    assert load(run).cache_hit
    other = tmp_path / SOURCE
    shutil.copy(shared_trace(SOURCE), other)
    load(other)  # another run's store still evicts the old run, least recently used first
    assert cache.has_entry(other) and not any(cache.has_entry(p) for p in run.iterdir())


def test_a_warm_open_that_parses_says_why(tmp_path, monkeypatch):
    path = tmp_path / SOURCE
    shutil.copy(shared_trace(SOURCE), path)
    load(path)

    def emfile(*_a, **_k):
        raise OSError(errno.EMFILE, "Too many open files")
    with monkeypatch.context() as mp:
        mp.setattr(cache, "_read", emfile)
        mp.setattr(cache, "raise_nofile_limit", lambda: False)
        ts = load(path)
    assert not ts.cache_hit
    assert any("cache entry could not be opened now (Too many open files" in w for w in ts.primary.warnings)
    again = load(path)  # the entry was kept (a transient miss), and the warning not stored in it
    assert again.cache_hit and not any("could not be opened" in w for w in again.primary.warnings)


def test_emfile_raises_the_soft_limit_and_retries(tmp_path, monkeypatch):
    path = tmp_path / SOURCE
    shutil.copy(shared_trace(SOURCE), path)
    load(path)
    real = cache._read
    calls = []

    def once(*a, **k):
        calls.append(1)
        if len(calls) == 1:
            raise OSError(errno.EMFILE, "Too many open files")
        return real(*a, **k)
    monkeypatch.setattr(cache, "_read", once)
    monkeypatch.setattr(cache, "raise_nofile_limit", lambda: True)
    assert load(path).cache_hit and len(calls) == 2
    assert np.all(np.diff(load(path).primary.slices.track_offsets) >= 0)
