"""A timeline index kept in its model's cache entry (core/trace/index_store.py): written with the entry or
added to it, opened memory-mapped and equal to a fresh build, and never trusted (tests/hostile/gen_store.py)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers import shared_trace
from hostile import gen_index as gi, gen_store as g

from core.trace import cache, cache_evict, index_cache, index_store, query
from core.trace.loader import load

SMALL = g.SMALL_TRACE


@pytest.fixture
def cdir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("PTPROF_CACHE_DIR", str(d))
    return d


@pytest.fixture
def keep_all(monkeypatch):
    monkeypatch.setenv("PTPROF_INDEX_MIN_SLICES", "0")


def _copy(tmp_path, src: Path = SMALL) -> Path:
    path = tmp_path / src.name
    shutil.copy(src, path)
    return path


def _entry(cdir: Path) -> Path:
    (entry,) = [d for d in cdir.iterdir() if cache_evict.is_entry(d)]
    return entry


def assert_same_index(got: query.SliceIndex, model) -> None:
    """Every array, every group and every query answer equal to an index built fresh from `model`."""
    want = query.SliceIndex(model)
    for name, arr in want.arrays().items():
        assert got.arrays()[name].dtype == arr.dtype and np.array_equal(got.arrays()[name], arr), name
    assert got._groups == want._groups and got.n_depth == want.n_depth  # noqa: SLF001
    s0, s1 = model.span_ns
    rng = np.random.default_rng(1)
    for (track, depth) in list(want._groups)[:200]:  # noqa: SLF001
        for a, b in [(s0, s1)] + [tuple(sorted(rng.uniform(s0, s1, 2))) for _ in range(3)]:
            for px in (1.0, (s1 - s0) / 300):
                x, y = got.spans(track, depth, a, b, px), want.spans(track, depth, a, b, px)
                for f in ("start_ns", "end_ns", "first", "count"):
                    assert np.array_equal(getattr(x, f), getattr(y, f)), (track, depth, f)
            assert np.array_equal(got.rows(track, depth, a, b), want.rows(track, depth, a, b))
            t = (a + b) / 2
            assert got.at(track, depth, t, (b - a) / 10) == want.at(track, depth, t, (b - a) / 10)


@pytest.mark.parametrize("name", ["gpu_print.pt.trace.json.gz", "gpu_compile_small.pt.trace.json.gz"])
def test_an_index_stored_with_the_entry_opens_mapped_and_equal(name, tmp_path, cdir, keep_all):
    path = _copy(tmp_path, SMALL if name == SMALL.name else shared_trace(name))
    model = load(path, use_cache=False).primary
    assert cache.store(path, model, query.SliceIndex(model))
    entry = _entry(cdir)
    assert all(f.is_file() for f in index_store.files(entry))
    ts = load(path)
    assert ts.cache_hit
    (index,) = index_cache.view_indexes(ts)
    assert index.stored and not index.ts_ns.flags.writeable  # read-only views of the entry
    assert_same_index(index, ts.primary)


def test_small_models_keep_no_index(tmp_path, cdir, monkeypatch):
    monkeypatch.delenv("PTPROF_INDEX_MIN_SLICES", raising=False)
    path = _copy(tmp_path)
    model = load(path, use_cache=False).primary
    assert len(model.slices) < index_store.STORE_MIN_SLICES
    assert cache.store(path, model, query.SliceIndex(model))
    assert not any(f.exists() for f in index_store.files(_entry(cdir)))
    (index,) = index_cache.view_indexes(load(path))
    assert not index.stored


@pytest.mark.parametrize("raw,want", [("0", 0), ("12", 12), ("-3", index_store.STORE_MIN_SLICES),
                                      ("lots", index_store.STORE_MIN_SLICES),
                                      ("", index_store.STORE_MIN_SLICES)])
def test_the_threshold_setting(raw, want, monkeypatch):
    monkeypatch.setenv("PTPROF_INDEX_MIN_SLICES", raw)
    assert index_store.min_slices() == want


def test_an_index_is_added_to_an_entry_that_has_none_and_counted(tmp_path, cdir, keep_all, monkeypatch):
    path = _copy(tmp_path)
    load(path)  # writes the entry (no index: the loader has none to give)
    entry = _entry(cdir)
    assert not index_store.has_index(entry)
    ts = load(path)
    (index,) = index_cache.view_indexes(ts)
    assert not index.stored and cache.entry_of(ts.primary) == entry
    added = []
    monkeypatch.setattr(cache_evict, "note_added", lambda root, n, limit, keep=None: added.append((root, n, keep)))
    assert cache.add_index(ts.primary, index)
    assert added == [(cdir, index.nbytes, entry)]
    assert not cache.add_index(ts.primary, index)  # kept already: nothing to do
    ts2 = load(path)
    (again,) = index_cache.view_indexes(ts2)
    assert again.stored
    assert_same_index(again, ts2.primary)


def _load_deferred(path):
    parsed: list = []
    from core.trace.loader import iter_load
    gen = iter_load(path, deferred=parsed)
    try:
        while True:
            next(gen)
    except StopIteration as stop:
        return stop.value, parsed


def test_keep_writes_parsed_entries_with_their_index_and_queues_the_rest(tmp_path, cdir, keep_all, monkeypatch):
    path = _copy(tmp_path)
    ts, parsed = _load_deferred(path)
    index_cache.keep(parsed, ts.models, index_cache.view_indexes(ts))  # a small model: written now, with its index
    assert index_store.has_index(_entry(cdir))
    (index,) = index_cache.view_indexes(load(path))
    assert index.stored
    # a big model's entry waits for the window's after-open work; so does an index added to an entry
    monkeypatch.setattr(cache, "ASYNC_MIN_BYTES", 0)
    monkeypatch.setenv("PTPROF_CACHE_SYNC", "1")  # released writes in line: nothing to wait for
    (tmp_path / "other").mkdir()
    other = _copy(tmp_path / "other")
    ts, parsed = _load_deferred(other)
    index_cache.keep(parsed, ts.models, index_cache.view_indexes(ts))
    assert not cache.has_entry(other)
    assert cache.release_behind() == 1
    assert cache.has_entry(other) and index_store.has_index(cache.entry_dir(cache.source_key(other)))
    index_store.remove(cache.entry_dir(cache.source_key(other)))
    ts = load(other)
    (index,) = index_cache.view_indexes(ts)
    assert not index.stored
    index_cache.keep([], ts.models, [index])
    assert cache.release_behind() == 1
    (again,) = index_cache.view_indexes(load(other))
    assert again.stored


def test_an_entry_evicted_while_its_index_is_added_leaves_nothing(tmp_path, cdir, keep_all, monkeypatch):
    path = _copy(tmp_path)
    load(path)
    ts = load(path)
    entry = cache.entry_of(ts.primary)
    (index,) = index_cache.view_indexes(ts)
    real_write = index_store.write

    def write_then_evicted(folder, ix, model):
        n = real_write(folder, ix, model)
        for f in folder.iterdir():  # another process evicts the entry meanwhile (its files listed before ours)
            if not f.name.startswith("index."):
                f.unlink()
        return n

    monkeypatch.setattr(index_store, "write", write_then_evicted)
    assert not cache.add_index(ts.primary, index)
    assert not entry.exists()


@pytest.mark.parametrize("how", gi.INDEX_POISONS)
def test_a_poisoned_index_is_a_miss_removed_and_rebuilt(how, tmp_path, monkeypatch, keep_all):
    trace, cdir, entry = gi.poisoned_index(tmp_path, how)
    monkeypatch.setenv("PTPROF_CACHE_DIR", str(cdir))
    ts = load(trace)
    assert ts.cache_hit  # the entry's own columns are fine: only the index is not
    assert cache.entry_of(ts.primary) == entry
    assert index_store.open_index(entry, ts.primary) is None
    assert not any(os.path.lexists(f) for f in index_store.files(entry)), "the bad index stays"
    (index,) = index_cache.view_indexes(ts)
    assert not index.stored
    assert_same_index(index, ts.primary)
    assert cache.add_index(ts.primary, index)  # and a good one takes its place
    (again,) = index_cache.view_indexes(load(trace))
    assert again.stored
    if how == "index_array_symlinked":
        assert (entry.parent.parent / "elsewhere-index.npy").is_file()  # what the link pointed to is untouched


def test_the_index_is_pickled_whole_for_the_pipe():
    """The loader child sends indexes over a pipe when the cache is off."""
    import pickle
    model = load(SMALL, use_cache=False).primary
    index = query.SliceIndex(model)
    back = pickle.loads(pickle.dumps(index))
    assert_same_index(back, model)
