"""The cache never deletes what it did not make, never trusts an entry, never blocks (issue 14)."""
from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from core.trace import cache, cache_evict
from core.trace.loader import load

REPO = Path(__file__).resolve().parents[3]
SMALL = REPO / "tests" / "data" / "gpu_print.pt.trace.json.gz"


@pytest.fixture(autouse=True)
def _one_file_per_column(monkeypatch):
    """These tests poison single column files: entries written one .npy per column (as a big model's; a
    small model's packed columns.bin has its own poisons in tests/hostile/gen_store.py)."""
    monkeypatch.setenv("PTPROF_CACHE_PACK_MAX_BYTES", "0")


@pytest.fixture
def trace(tmp_path):
    path = tmp_path / SMALL.name
    shutil.copy(SMALL, path)
    return path


def _user_folder(root: Path) -> dict[str, Path]:
    """What a user keeps in the folder PTPROF_CACHE_DIR names (the tester's scenario)."""
    root.mkdir(parents=True, exist_ok=True)
    made = {}
    for name in ("vm_images", ".tmp-build", "0123456789abcdef01234567", ".tmp-ptprof-notours"):
        d = root / name
        d.mkdir()
        (d / "disk.img").write_bytes(b"\0" * 4096)
        os.utime(d, (0, 0))
        made[name] = d
    (root / "notes.txt").write_text("keep me")
    return made


def test_eviction_never_touches_folders_it_did_not_make(trace, tmp_path, monkeypatch):
    root = tmp_path / "user-folder"
    monkeypatch.setenv("PTPROF_CACHE_DIR", str(root))
    monkeypatch.setenv("PTPROF_CACHE_MAX_BYTES", "1000")  # smaller than anything: evict all we may
    theirs = _user_folder(root)
    load(trace)
    assert cache.evict(0) == 1  # only our own entry goes
    for d in theirs.values():
        assert (d / "disk.img").read_bytes() == b"\0" * 4096
    assert (root / "notes.txt").read_text() == "keep me"


def test_evict_zero_removes_only_entries_with_marker_and_name(trace, tmp_path, monkeypatch):
    root = tmp_path / "mixed"
    monkeypatch.setenv("PTPROF_CACHE_DIR", str(root))
    theirs = _user_folder(root)
    load(trace)
    ours = [d for d in root.iterdir() if cache_evict.is_entry(d)]
    assert len(ours) == 1
    # the same name pattern but no marker, or a marker under another name: not ours either
    fake = root / "abcdefabcdefabcdefabcdef"
    fake.mkdir()
    (fake / "x").write_bytes(b"1")
    marked = root / "named-otherwise"
    marked.mkdir()
    cache_evict.write_marker(marked)
    monkeypatch.setattr(cache_evict, "STALE_TMP_S", -1)
    cache.evict(0)
    assert not ours[0].exists()
    assert fake.exists() and marked.exists() and all(d.exists() for d in theirs.values())


def test_sizing_and_deleting_never_follow_symlinks(trace, tmp_path, monkeypatch):
    root = tmp_path / "c"
    monkeypatch.setenv("PTPROF_CACHE_DIR", str(root))
    load(trace)
    (entry,) = [d for d in root.iterdir() if cache_evict.is_entry(d)]
    before = cache_evict.folder_bytes(entry)
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "big.bin").write_bytes(b"\1" * 10000)
    (entry / "link-to-precious").symlink_to(precious)
    (entry / "link-to-file").symlink_to(precious / "big.bin")
    assert cache_evict.folder_bytes(entry) == before  # links are not counted as their targets
    link_entry = root / "fedcba9876543210fedcba98"
    link_entry.symlink_to(entry)  # a symlink named like an entry, pointing at one: not an entry
    assert not cache_evict.is_entry(link_entry)
    cache.evict(0)
    assert (precious / "big.bin").read_bytes() == b"\1" * 10000
    assert os.path.lexists(link_entry)


def test_stores_scan_the_cache_once_not_once_per_store(tmp_path, monkeypatch):
    """422 cycle files made each store rescan the whole cache (quadratic); now one scan per run."""
    scans = []
    real = cache_evict.evict
    monkeypatch.setattr(cache_evict, "evict", lambda *a, **k: scans.append(1) or real(*a, **k))
    monkeypatch.setattr(cache_evict, "_tally", None)
    bundle = tmp_path / "many"
    bundle.mkdir()
    for i in range(12):
        shutil.copy(SMALL, bundle / f"cycle{i:03d}.pt.trace.json.gz")
    load(bundle)
    assert len(scans) == 1
    assert len([d for d in cache.cache_dir().iterdir() if cache_evict.is_entry(d)]) == 12


def test_running_total_still_bounds_the_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_evict, "_tally", None)
    paths = []
    for i in range(6):
        p = tmp_path / f"t{i}.pt.trace.json.gz"
        shutil.copy(SMALL, p)
        paths.append(p)
    load(paths[0])
    one = cache_evict.folder_bytes(next(d for d in cache.cache_dir().iterdir() if cache_evict.is_entry(d)))
    monkeypatch.setenv("PTPROF_CACHE_MAX_BYTES", str(int(one * 3.5)))
    for p in paths[1:]:
        load(p)
    kept = [d for d in cache.cache_dir().iterdir() if cache_evict.is_entry(d)]
    assert 1 <= len(kept) <= 3
    assert load(paths[-1]).cache_hit


def _entry(root: Path) -> Path:
    (d,) = [d for d in root.iterdir() if cache_evict.is_entry(d)]
    return d


def _resave(d: Path, name: str, arr: np.ndarray, fix_shape: bool = True) -> None:
    np.save(d / name, arr, allow_pickle=False)
    if fix_shape:
        entry = json.loads((d / "entry.json").read_text())
        table, col = name.split(".")[:2]
        entry["shapes"][table][col] = list(arr.shape)
        (d / "entry.json").write_text(json.dumps(entry))


@pytest.mark.parametrize("poison", ["swap_columns", "swap_same_type", "swap_ids", "retype", "string_id", "track_id",
                                    "flow_id", "step_slice",
                                    "sparse_unsorted", "sparse_out_of_range", "sparse_string_id", "sparse_count",
                                    "sparse_not_sparse",
                                    "offsets", "kind", "object_dtype", "entry_not_dict", "strings_not_str",
                                    "short_file", "two_d"])
def test_poisoned_entry_is_a_miss_and_rebuilt(trace, poison):
    reference = load(trace).primary
    d = _entry(cache.cache_dir())
    n_strings = len(reference.strings)
    if poison == "swap_columns":  # two columns' files swapped: a dtype/length the checks catch
        a, b = d / "slices.name.npy", d / "slices.kind.npy"
        tmp = d / "swap"
        a.rename(tmp)
        b.rename(a)
        tmp.rename(b)
    elif poison in ("swap_same_type", "swap_ids"):  # same dtype, same length, values in range for both:
        # only the fingerprints in entry.json tell them apart (these loaded, showing categories as names)
        if poison == "swap_same_type":
            pairs = [("slices.name.npy", "slices.cat.npy")]
        else:  # correlation is sparse in this trace, external_id dense: make both sparse pairs alike
            sp = reference.slices.sparse("correlation")
            assert sp is not None and reference.slices.sparse("external_id") is None
            ext = reference.slices.external_id
            rows = sp.rows
            np.save(d / "slices.external_id.rows.npy", rows, allow_pickle=False)
            np.save(d / "slices.external_id.values.npy", np.ascontiguousarray(ext[rows]), allow_pickle=False)
            (d / "slices.external_id.npy").unlink()
            entry = json.loads((d / "entry.json").read_text())
            entry["sparse"]["slices"]["external_id"] = len(rows)
            (d / "entry.json").write_text(json.dumps(entry))
            pairs = [("slices.correlation.values.npy", "slices.external_id.values.npy")]
        for a, b in pairs:
            data_a, data_b = (d / a).read_bytes(), (d / b).read_bytes()
            (d / a).write_bytes(data_b)
            (d / b).write_bytes(data_a)
    elif poison == "sparse_unsorted":  # a sparse column's rows out of order
        rows = np.load(d / "slices.grid.rows.npy")
        _resave(d, "slices.grid.rows.npy", rows[::-1].copy(), fix_shape=False)
    elif poison == "sparse_out_of_range":
        rows = np.load(d / "slices.grid.rows.npy")
        rows[-1] = len(reference.slices) + 3
        _resave(d, "slices.grid.rows.npy", rows, fix_shape=False)
    elif poison == "sparse_string_id":
        vals = np.load(d / "slices.grid.values.npy")
        vals[0] = n_strings + 1
        _resave(d, "slices.grid.values.npy", vals, fix_shape=False)
    elif poison == "sparse_count":  # entry.json says more pairs than the files hold
        entry = json.loads((d / "entry.json").read_text())
        entry["sparse"]["slices"]["grid"] += 1
        (d / "entry.json").write_text(json.dumps(entry))
    elif poison == "sparse_not_sparse":  # a column that may not be sparse listed as sparse
        entry = json.loads((d / "entry.json").read_text())
        entry["sparse"]["slices"]["ts_ns"] = 3
        (d / "entry.json").write_text(json.dumps(entry))
    elif poison == "retype":
        _resave(d, "slices.ts_ns.npy", np.asarray(reference.slices.ts_ns, np.float64))
    elif poison == "string_id":
        _resave(d, "slices.name.npy", np.full(len(reference.slices), n_strings + 5, np.int32))
    elif poison == "track_id":
        _resave(d, "slices.track.npy", np.full(len(reference.slices), 10**6, np.int32))
    elif poison == "flow_id":
        _resave(d, "flows.dst.npy", np.full(len(reference.flows), 10**9, np.int64))
    elif poison == "step_slice":
        _resave(d, "steps.slice.npy", np.full(max(len(reference.steps), 1), 10**9, np.int64))
    elif poison == "offsets":
        arr = np.array(reference.slices.track_offsets)
        arr[-1] += 7
        _resave(d, "slices.track_offsets.npy", arr)
    elif poison == "kind":
        _resave(d, "slices.kind.npy", np.full(len(reference.slices), 99, np.int8))
    elif poison == "object_dtype":
        (d / "slices.ts_ns.npy").write_bytes(
            b"\x93NUMPY\x01\x00v\x00{'descr': '|O', 'fortran_order': False, 'shape': (3,), }" + b" " * 55 + b"\n")
    elif poison == "entry_not_dict":
        (d / "entry.json").write_text("[1, 2, 3]")
    elif poison == "strings_not_str":
        entry = json.loads((d / "entry.json").read_text())
        entry["strings"][1] = 5
        (d / "entry.json").write_text(json.dumps(entry))
    elif poison == "short_file":
        f = d / "slices.ts_ns.npy"
        f.write_bytes(f.read_bytes()[:-8])
    else:
        _resave(d, "slices.ts_ns.npy", np.zeros((len(reference.slices), 1), np.int64), fix_shape=False)
    again = load(trace)
    assert not again.cache_hit
    assert np.array_equal(again.primary.slices.name, reference.slices.name)
    assert load(trace).cache_hit


@pytest.mark.timeout(30)
@pytest.mark.parametrize("what", ["slices.ts_ns.npy", "entry.json"])
def test_fifo_in_an_entry_never_blocks(trace, what):
    load(trace)
    d = _entry(cache.cache_dir())
    (d / what).unlink()
    os.mkfifo(d / what)
    assert not load(trace).cache_hit  # would block forever in open() before
    assert load(trace).cache_hit


def test_symlinked_column_is_refused(trace, tmp_path):
    load(trace)
    d = _entry(cache.cache_dir())
    outside = tmp_path / "outside.npy"
    (d / "slices.ts_ns.npy").rename(outside)
    (d / "slices.ts_ns.npy").symlink_to(outside)
    assert not load(trace).cache_hit


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "garbage", "-5", "1e400"])
def test_bad_max_bytes_warns_and_uses_the_default(value, monkeypatch, caplog):
    monkeypatch.setenv("PTPROF_CACHE_MAX_BYTES", value)
    cache._warned.clear()
    with caplog.at_level(logging.WARNING):
        assert cache.max_bytes() == cache.DEFAULT_MAX_BYTES
    assert "PTPROF_CACHE_MAX_BYTES" in caplog.text


def test_good_max_bytes_values(monkeypatch):
    for raw, want in (("1000", 1000), ("1e10", 10**10), (" 0 ", 0)):
        monkeypatch.setenv("PTPROF_CACHE_MAX_BYTES", raw)
        assert cache.max_bytes() == want


def test_unknown_user_cache_dir_turns_the_cache_off(trace, monkeypatch, caplog, capsys):
    monkeypatch.setenv("PTPROF_CACHE_DIR", "~nosuchuser_ptprof/cache")
    cache._warned.clear()
    with caplog.at_level(logging.WARNING):
        assert cache.cache_dir() is None
        assert not load(trace).cache_hit
        assert not load(trace).cache_hit
    assert "trace cache off" in caplog.text


def test_cli_with_bad_cache_env_is_one_line_not_a_traceback(trace, monkeypatch, capsys):
    from core.cli import main
    monkeypatch.setenv("PTPROF_CACHE_DIR", "~nosuchuser_ptprof")
    monkeypatch.setenv("PTPROF_CACHE_MAX_BYTES", "inf")
    cache._warned.clear()
    assert main(["info", str(trace)]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err


def test_schema_matches_a_fresh_build(trace):
    from core.trace.cache_check import DTYPES
    model = load(trace, use_cache=False).primary
    for table, cols in DTYPES.items():
        got = {c: a.dtype for c, a in getattr(model, table).columns().items()}
        assert got == cols, table


@pytest.mark.parametrize("piece", [7, 1 << 18])
def test_value_checks_in_pieces_catch_a_bad_row_anywhere(monkeypatch, piece):
    """check_model reads columns in cache-sized pieces: a bad value in any piece (here the last row or
    a row in the middle of a track) is still a miss; a good model passes."""
    from dataclasses import replace

    from helpers import SAMPLE

    from core.trace import cache_check
    from core.trace.sparse import Sparse
    monkeypatch.setattr(cache_check, "_PIECE", piece)
    model = load(SAMPLE, use_cache=False).primary
    cache_check.check_model(model, len(model.strings))
    s = model.slices
    bad_name = s.name.copy()
    bad_name[-1] = len(model.strings)
    mid = int(s.track_offsets[0] + s.track_offsets[1]) // 2  # inside the first track
    bad_ts = s.ts_ns.copy()
    bad_ts[mid] = bad_ts[mid - 1] - 1
    bad_dur = s.dur_ns.copy()
    bad_dur[len(bad_dur) // 2] = -1
    rows = s.present_rows("input_dims")  # a sparse string column: its rows and values are checked in pieces too
    sp = Sparse(len(s), rows, np.ascontiguousarray(s.input_dims[rows]), 0)
    cache_check.check_model(replace(model, slices=s.with_columns(input_dims=sp)), len(model.strings))
    bad_rows = sp.rows.copy()
    bad_rows[-1] = bad_rows[-2]
    bad_vals = sp.values.copy()
    bad_vals[-1] = len(model.strings)
    for col, arr, why in (("name", bad_name, "string id"), ("ts_ns", bad_ts, "not sorted"),
                          ("dur_ns", bad_dur, "negative"),
                          ("input_dims", Sparse(sp.n, bad_rows, sp.values, sp.fill), "not increasing"),
                          ("input_dims", Sparse(sp.n, sp.rows, bad_vals, sp.fill), "string id")):
        with pytest.raises(cache_check.BadEntry, match=why):
            cache_check.check_model(replace(model, slices=s.with_columns(**{col: arr})), len(model.strings))
