"""The columnar cache: exact round trip, memory-mapped reopen, keyed by size/mtime, atomic,
corrupt entries ignored and rebuilt, bounded size, bypassed by use_cache=False / --no-cache."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers import REPO, shared_trace

from core.cli import main
from core.trace import cache, cache_check, cache_evict
from core.trace.loader import load

SOURCE = "gpu_issues.pt.trace.json.gz"


@pytest.fixture
def trace(tmp_path):
    path = tmp_path / SOURCE
    shutil.copy(shared_trace(SOURCE), path)
    return path


def entries():
    root = cache.cache_dir()
    return sorted(d for d in root.iterdir() if d.is_dir() and not d.name.startswith(".")) if root.is_dir() else []


def test_round_trip_is_exact_and_memory_mapped(trace, models_equal):
    cold = load(trace)
    assert not cold.cache_hit and len(entries()) == 1
    warm = load(trace)
    assert warm.cache_hit
    models_equal(warm.primary, cold.primary)
    s = warm.primary.slices
    for col in (s.ts_ns, s.name, s.kind):  # every column read-only; mapped from MAP_FROM_BYTES on, else read
        big = col.nbytes >= cache_check.MAP_FROM_BYTES
        assert (isinstance(col, np.memmap) or isinstance(col.base, np.memmap)) == big, (col.nbytes, type(col))
        assert not col.flags.writeable
    assert warm.primary.strings.find("aten::conv2d") > 0


def test_a_small_model_is_one_packed_file_a_big_one_a_file_per_column(trace, models_equal, monkeypatch):
    """Up to PACK_MAX_BYTES of columns an entry is entry.json + columns.bin + the marker (one .npy per column
    cost ~66 file creates per entry: a 422-cycle bundle's first open took 9-21 s against 1.4 s without the
    cache); bigger models keep one memory-mappable .npy per column. Both read back exactly."""
    cold = load(trace)
    (entry,) = entries()
    assert sorted(p.name for p in entry.iterdir()) == [".ptprof-cache-entry", "columns.bin", "entry.json"]
    layout = json.loads((entry / "entry.json").read_text())["packed"]
    assert all(off % 8 == 0 for off, _n in layout.values())
    warm = load(trace)
    assert warm.cache_hit
    models_equal(warm.primary, cold.primary)
    assert not warm.primary.slices.ts_ns.flags.writeable
    model_bytes = cache.model_bytes(cold.primary)
    monkeypatch.setenv("PTPROF_CACHE_PACK_MAX_BYTES", str(model_bytes - 1))  # one byte short: a file per column
    assert cache.store(trace, cold.primary)
    (entry,) = entries()
    names = {p.name for p in entry.iterdir()}
    assert "columns.bin" not in names and "slices.ts_ns.npy" in names
    assert json.loads((entry / "entry.json").read_text())["packed"] is None
    models_equal(load(trace).primary, cold.primary)


def test_a_bundle_of_many_small_files_is_quick_to_cache(tmp_path, monkeypatch):
    """The first open of 60 cycle files writes 60 packed entries: 3 files each, not ~66."""
    folder = tmp_path / "bundle"
    folder.mkdir()
    for i in range(60):
        shutil.copy(REPO / "tests" / "data" / "gpu_print.pt.trace.json.gz", folder / f"cycle{i}.pt.trace.json.gz")
    cold = load(folder)
    assert len(entries()) == 60 and all(len(list(e.iterdir())) == 3 for e in entries())
    warm = load(folder)
    assert warm.cache_hit and len(warm.models) == 60
    assert all(np.array_equal(a.slices.ts_ns, b.slices.ts_ns) for a, b in zip(cold.models, warm.models))


def test_big_columns_are_memory_mapped(trace, models_equal, monkeypatch):
    monkeypatch.setenv("PTPROF_CACHE_PACK_MAX_BYTES", "0")  # one .npy per column, as a big model's entry
    cold = load(trace)
    monkeypatch.setattr(cache_check, "MAP_FROM_BYTES", 1)
    warm = load(trace)
    assert warm.cache_hit
    models_equal(warm.primary, cold.primary)
    ts = warm.primary.slices.ts_ns
    assert (isinstance(ts, np.memmap) or isinstance(ts.base, np.memmap)) and not ts.flags.writeable


def test_a_bundle_of_many_cycle_files_hits_under_a_low_descriptor_limit(tmp_path):
    """Each memory map holds a descriptor: 526 cycle files x 41 columns ran out of them (EMFILE), and each
    entry it could not map was removed and rewritten on every open - never a cache hit. Small columns are
    read now, and an entry that cannot be opened for want of descriptors is a miss that stays."""
    import subprocess
    import sys
    traces = tmp_path / "run" / "traces"
    traces.mkdir(parents=True)
    src = shared_trace("cpu_train.pt.trace.json.gz").read_bytes()
    for k in range(60):
        (traces / f"rank0.cycle{k}.pt.trace.json.gz").write_bytes(src)
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit("
            "resource.RLIMIT_NOFILE)[1])); from core.trace.loader import load; from core.trace import cache; "
            "ts = load(sys.argv[1]); cache.flush(); print(ts.cache_hit, len(ts.models))")
    env = {**os.environ, "PTPROF_CACHE_DIR": str(tmp_path / "cache")}
    repo = Path(__file__).resolve().parents[3]
    runs = [subprocess.run([sys.executable, "-c", code, str(tmp_path / "run")], cwd=repo, env=env,
                           capture_output=True, text=True, timeout=300) for _ in range(2)]
    assert [r.stdout.split() for r in runs] == [["False", "60"], ["True", "60"]], [r.stderr[-500:] for r in runs]


def test_no_cache_neither_reads_nor_writes(trace):
    load(trace, use_cache=False)
    assert entries() == []
    load(trace)
    assert load(trace, use_cache=False).cache_hit is False


def test_changed_file_misses(trace):
    load(trace)
    st = trace.stat()
    os.utime(trace, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert not load(trace).cache_hit
    assert load(trace).cache_hit
    assert len(entries()) == 2  # the stale entry ages out by the size bound


@pytest.mark.parametrize("damage", ["truncate_column", "delete_column", "garbage_entry", "wrong_shape", "empty_entry"])
def test_corrupt_entry_is_ignored_and_rebuilt(trace, damage, models_equal):
    reference = load(trace).primary
    (d,) = entries()
    packed = d / "columns.bin"  # a small model's columns, in one file
    if damage == "truncate_column":
        f = packed if packed.exists() else d / "slices.ts_ns.npy"
        f.write_bytes(f.read_bytes()[:200])
    elif damage == "delete_column":
        (packed if packed.exists() else d / "slices.name.npy").unlink()
    elif damage == "garbage_entry":
        (d / "entry.json").write_bytes(b"\x00garbage{")
    elif damage == "wrong_shape":
        entry = json.loads((d / "entry.json").read_text())
        entry["shapes"]["slices"]["ts_ns"] = [1]
        (d / "entry.json").write_text(json.dumps(entry))
    else:
        (d / "entry.json").write_bytes(b"")
    again = load(trace)
    assert not again.cache_hit
    models_equal(again.primary, reference)
    assert load(trace).cache_hit  # rebuilt


def test_writes_are_atomic_and_stale_temporaries_go(trace, monkeypatch):
    root = cache.cache_dir()
    root.mkdir(parents=True)
    stale = root / (cache_evict.TMP_PREFIX + "dead-writer")
    stale.mkdir()
    cache_evict.write_marker(stale)
    (stale / "slices.ts_ns.npy").write_bytes(b"x")
    os.utime(stale, (0, 0))
    theirs = root / ".tmp-build"  # a temporary of some other tool: not ours, never removed
    theirs.mkdir()
    os.utime(theirs, (0, 0))
    load(trace)
    assert not stale.exists()
    assert [d.name for d in root.iterdir() if d.name.startswith(".tmp-")] == [".tmp-build"]


def test_size_bound_evicts_least_recently_used(tmp_path, monkeypatch):
    paths = []
    for i in range(3):
        p = tmp_path / f"t{i}.pt.trace.json.gz"
        shutil.copy(shared_trace("gpu_minimal_opts.pt.trace.json.gz"), p)
        paths.append(p)
    load(paths[0])
    one = sum(f.stat().st_size for f in entries()[0].iterdir())
    monkeypatch.setenv("PTPROF_CACHE_MAX_BYTES", str(int(one * 2.5)))
    load(paths[1])
    os.utime(entries()[0] / "entry.json")  # touch nothing in particular; then use t0 again (LRU)
    assert load(paths[0]).cache_hit
    load(paths[2])
    assert len(entries()) == 2
    assert load(paths[0]).cache_hit and load(paths[2]).cache_hit
    assert not load(paths[1], use_cache=True).cache_hit  # t1 was the least recently used


def test_unwritable_cache_dir_is_not_an_error(trace, monkeypatch, tmp_path):
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("x")
    monkeypatch.setenv("PTPROF_CACHE_DIR", str(blocker / "sub"))
    assert not load(trace).cache_hit
    assert not load(trace).cache_hit


def test_info_json_reports_cache_hit(trace, capsys):
    assert main(["info", str(trace), "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert main(["info", str(trace), "--json"]) == 0
    second = json.loads(capsys.readouterr().out)
    assert (first["cache_hit"], second["cache_hit"]) == (False, True)
    for key in ("path", "events", "kernels", "memcpy", "memset", "cpu_ops", "steps", "ranks", "devices",
                "span_ns", "load_s", "cache_hit", "warnings"):
        assert key in second
    assert {k: v for k, v in first.items() if k not in ("load_s", "cache_hit")} == \
        {k: v for k, v in second.items() if k not in ("load_s", "cache_hit")}
    assert main(["info", str(trace), "--json", "--no-cache"]) == 0
    assert json.loads(capsys.readouterr().out)["cache_hit"] is False


def test_default_dir_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("PTPROF_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if os.name == "posix" and os.uname().sysname == "Linux":
        assert cache.cache_dir() == tmp_path / "xdg" / "ptprof"


def test_a_big_model_is_cached_by_a_background_write(tmp_path, monkeypatch):
    """Past cache.ASYNC_MIN_BYTES the load returns while the columns are written; flush() waits for them,
    and the entry then reopens equal to the parsed model."""
    from core.trace import cache
    from core.trace.loader import load
    monkeypatch.delenv("PTPROF_CACHE_SYNC", raising=False)
    monkeypatch.setattr(cache, "ASYNC_MIN_BYTES", 0)
    src = tmp_path / "t.pt.trace.json.gz"
    src.write_bytes(shared_trace("gpu_issues.pt.trace.json.gz").read_bytes())
    first = load(src)
    assert not first.cache_hit
    assert cache.flush(timeout=120)
    again = load(src)
    assert again.cache_hit
    assert again.primary.counts == first.primary.counts
    assert (again.primary.slices.ts_ns == first.primary.slices.ts_ns).all()


def test_write_behind_waits_for_release_then_writes_in_the_background(trace, monkeypatch):
    monkeypatch.setattr(cache, "ASYNC_MIN_BYTES", 0)  # every model goes through the writer thread
    model = load(trace, use_cache=False).primary
    cache.write_behind(trace, model)
    assert entries() == []  # queued, not written
    assert cache.release_behind() == 1
    assert cache.flush(60)
    assert len(entries()) == 1 and load(trace).cache_hit
    assert cache.release_behind() == 0  # nothing left queued


def test_write_behind_never_released_is_written_at_exit(trace):
    model = load(trace, use_cache=False).primary
    cache.write_behind(trace, model)
    cache._write_behind_now()  # what atexit runs  # noqa: SLF001
    assert len(entries()) == 1 and load(trace).cache_hit


def test_the_background_writer_lowers_only_its_own_priority(trace, monkeypatch):
    if not hasattr(os, "setpriority") or not hasattr(os, "getpriority"):
        pytest.skip("no per-thread priority here")
    monkeypatch.setattr(cache, "ASYNC_MIN_BYTES", 0)
    seen: list = []
    real_store = cache.store

    def store(path, model, index=None):
        tid = __import__("threading").get_native_id()
        seen.append(os.getpriority(os.PRIO_PROCESS, tid))
        return real_store(path, model, index)

    monkeypatch.setattr(cache, "store", store)
    before = os.getpriority(os.PRIO_PROCESS, 0)
    t = cache.store_soon(trace, load(trace, use_cache=False).primary)
    assert t is not None and cache.flush(60)
    assert seen == [min(19, before + cache.WRITER_NICE)]
    assert os.getpriority(os.PRIO_PROCESS, 0) == before  # the caller's own priority is untouched
    assert len(entries()) == 1


def test_a_column_of_another_dtype_is_never_packed(trace):
    """The packed reader takes each array's dtype from the schema: a model whose column has another dtype
    (a builder bug) is not written, rather than read back as reinterpreted bytes."""
    from dataclasses import replace
    m = load(trace, use_cache=False).primary
    bad = replace(m, tracks=replace(m.tracks, kind=m.tracks.kind.astype(np.int64)))
    assert not cache.store(trace, bad)
    assert entries() == []
    assert cache.store(trace, m) and load(trace).cache_hit
