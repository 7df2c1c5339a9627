"""Sparse slice arg columns (core/trace/sparse.py): same values as the dense columns, kept sparse through
the cache, pickling and every rule and table (none of them builds a dense column)."""
from __future__ import annotations

import json
import pickle
import threading

import numpy as np
import pytest
from helpers import LOCAL_TRACES, REPO, SAMPLE

from core.trace import sparse
from core.trace.loader import load
from core.trace.model import NONE, SliceTable
from core.trace.sparse import Sparse, from_pairs, sparsify

TRACES = [SAMPLE, REPO / "tests" / "data" / "gpu_print.pt.trace.json.gz",
          REPO / "tests" / "data" / "cpu_flops.pt.trace.json.gz",
          *sorted(LOCAL_TRACES.glob("*.pt.trace.json.gz")), *sorted((LOCAL_TRACES / "gpu_ddp2").glob("*.json.gz"))]


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PTPROF_CACHE_DIR", str(tmp_path / "cache"))


def test_take_matches_the_dense_column():
    rng = np.random.default_rng(3)
    n = 1000
    dense = np.full(n, NONE, np.int64)
    rows = np.sort(rng.choice(n, 40, replace=False))
    dense[rows] = rng.integers(0, 10**12, 40)
    sp = sparsify(dense, NONE)
    assert isinstance(sp, Sparse) and np.array_equal(sp.rows, rows)
    assert np.array_equal(sp.dense(), dense)
    picks = rng.integers(-n, n, 500)
    assert np.array_equal(sp.take(picks), dense[picks])
    mask = rng.random(n) < 0.3
    assert np.array_equal(sp.take(mask), dense[mask])
    for r in (0, int(rows[0]), int(rows[-1]), n - 1, -1, -n):
        got = sp.take(r)
        assert got == dense[r] and type(got) is type(dense[r])
    assert sp.take(np.zeros(0, np.int64)).shape == (0,)
    for bad in (n, -n - 1):
        with pytest.raises(IndexError):
            sp.take(bad)
    with pytest.raises(IndexError):
        sp.take(np.array([0, n]))
    with pytest.raises(IndexError):
        sp.take(np.ones(n + 1, bool))


def test_nan_fill_and_string_fill():
    occ = np.full(50, np.nan, np.float32)
    occ[[3, 7]] = [12.5, 0.0]
    sp = sparsify(occ, np.nan)
    assert isinstance(sp, Sparse) and sp.rows.tolist() == [3, 7]
    assert np.array_equal(sp.dense(), occ, equal_nan=True)
    assert np.isnan(sp.take(4)) and sp.take(7) == 0.0
    ids = np.zeros(50, np.int32)
    ids[10] = 5
    sp = sparsify(ids, 0)
    assert sp.rows.tolist() == [10] and sp.take(np.arange(50)).tolist() == ids.tolist()


def test_from_pairs_sorts_and_the_last_pair_wins_like_a_scatter():
    rows = np.array([9, 2, 9, 5, 2], np.int64)
    vals = np.array([1, 2, 3, NONE, 4], np.int64)
    want = np.full(20, NONE, np.int64)
    want[rows] = vals
    got = from_pairs(20, rows, vals, NONE, np.int64)
    assert isinstance(got, Sparse)
    assert got.rows.tolist() == [2, 9] and got.values.tolist() == [4, 3]  # row 5 held the fill: not kept
    assert np.array_equal(got.dense(), want)


def test_dense_when_pairs_would_not_save_memory():
    n = 100
    col = np.arange(n, dtype=np.int32)  # every row holds a value
    assert sparsify(col, 0) is col
    got = from_pairs(n, np.arange(n), np.arange(n), NONE, np.int64)
    assert isinstance(got, np.ndarray) and np.array_equal(got, np.arange(n))
    assert sparse.worth_it(1000, 10, np.int64) and not sparse.worth_it(1000, 400, np.int64)


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_model_columns_equal_the_dense_build(path, monkeypatch):
    """The same trace built with no sparse column: every column reads the same, and the sparse ones stay
    sparse while they are read through at() / present_rows()."""
    model = load(path, use_cache=False).primary
    s = model.slices
    monkeypatch.setattr(sparse, "MAX_SPARSE_SHARE", -1.0)
    dense = load(path, use_cache=False).primary.slices
    assert dense.sparse_names() == []
    rows = np.arange(len(s))[::7]
    for col in SliceTable.COLUMNS:
        want = getattr(dense, col)
        picks = rows if len(want) == len(s) else np.arange(len(want))  # track_offsets, max_dur_ns: per track
        assert np.array_equal(s.at(col, picks), want[picks], equal_nan=want.dtype.kind == "f"), col
        if col in SliceTable.FILL:
            assert np.array_equal(s.present_rows(col), dense.present_rows(col)), col
    assert s.materialized() == []
    for col in SliceTable.COLUMNS:  # the attribute builds the dense array once, read-only
        want = getattr(dense, col)
        got = getattr(s, col)
        assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=want.dtype.kind == "f"), col
        assert getattr(s, col) is got
    assert sorted(s.materialized()) == sorted(s.sparse_names())


@pytest.mark.parametrize("name, share", [("gpu_print.pt.trace.json.gz", 0.75), ("gpu_big_stack.pt.trace.json.xz", 0.5)])
def test_with_stack_trace_holds_most_arg_columns_sparse(name, share):
    """with_stack GPU traces, where many rows (gpu_big_stack: 98 %) are Python frames."""
    from helpers import shared_trace
    path = REPO / "tests" / "data" / name
    s = load(path if path.exists() else shared_trace(name), use_cache=False).primary.slices
    assert {"correlation", "bytes", "grid", "block", "registers", "occupancy", "seq"} <= set(s.sparse_names())
    dense_bytes = sum(getattr(s, c).nbytes for c in SliceTable.COLUMNS)
    assert s.nbytes < share * dense_bytes


@pytest.mark.parametrize("packed", [True, False])
def test_cache_keeps_the_pairs(tmp_path, monkeypatch, packed):
    monkeypatch.setenv("PTPROF_CACHE_PACK_MAX_BYTES", str(1 << 30 if packed else 0))
    path = REPO / "tests" / "data" / "gpu_print.pt.trace.json.gz"
    first = load(path).primary.slices
    again = load(path)
    assert again.cache_hit
    s = again.primary.slices
    assert s.sparse_names() == first.sparse_names()
    for col in s.sparse_names():
        a, b = s.sparse(col), first.sparse(col)
        assert np.array_equal(a.rows, b.rows) and np.array_equal(a.values, b.values, equal_nan=True)
    assert s.materialized() == []  # the checks on open read the pairs, not a dense column
    entry = next(p for p in (tmp_path / "cache").iterdir() if (p / "entry.json").exists())
    if packed:
        layout = json.loads((entry / "entry.json").read_text())["packed"]
        assert "slices.grid.rows" in layout and "slices.grid" not in layout
    else:
        assert (entry / "slices.grid.rows.npy").exists() and not (entry / "slices.grid.npy").exists()


def test_pickle_round_trip_keeps_the_pairs():
    s = load(REPO / "tests" / "data" / "gpu_print.pt.trace.json.gz", use_cache=False).primary.slices
    back = pickle.loads(pickle.dumps(s))
    assert back.sparse_names() == s.sparse_names()
    for col in SliceTable.COLUMNS:
        assert np.array_equal(getattr(back, col), getattr(s, col), equal_nan=True), col


def test_one_dense_build_under_concurrent_reads():
    n = 200_000
    rows = np.arange(0, n, 97, dtype=np.int64)
    base = load(SAMPLE, use_cache=False).primary.slices
    sp = Sparse(n, rows, rows.copy(), NONE)
    got = []
    start = threading.Barrier(4)

    class T(threading.Thread):
        def run(self):
            start.wait()
            got.append(table._column("seq"))

    cols = {c: np.zeros(n, dtype=getattr(base, c).dtype) for c in SliceTable.COLUMNS
            if c not in ("track_offsets", "max_dur_ns")}
    cols.update(seq=sp, track_offsets=np.array([0, n], np.int64), max_dur_ns=np.zeros(1, np.int64))
    table = SliceTable(**cols)
    threads = [T() for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(got) == 4 and all(g is got[0] for g in got)
    assert not got[0].flags.writeable and np.array_equal(got[0][rows], rows)


def test_slice_table_refuses_bad_columns():
    base = load(SAMPLE, use_cache=False).primary.slices
    with pytest.raises(TypeError):
        base.with_columns(ts_ns=Sparse(len(base), np.zeros(0, np.int64), np.zeros(0, np.int64), 0))
    with pytest.raises(TypeError):
        SliceTable(**{c: getattr(base, c) for c in SliceTable.COLUMNS[1:]})
    with pytest.raises(AttributeError):
        base.name = base.cat


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", ["gpu_print.pt.trace.json.gz", "gpu_issues.pt.trace.json.gz",
                                  "gpu_compile_small.pt.trace.json.gz", "cpu_flops.pt.trace.json.gz"])
def test_rules_tables_and_reports_never_build_a_dense_sparse_column(name, tmp_path, monkeypatch, capsys):
    """The tripwire: every rule (`analyze`), the report (tables, CSVs, HTML) and the slice details read
    sparse columns through at() / present_rows(); a dense build would cost a with_stack trace its memory."""
    from core.cli import main
    built = []
    real = Sparse.dense
    monkeypatch.setattr(Sparse, "dense", lambda self: built.append(len(self)) or real(self))
    path = next(p for p in (REPO / "tests" / "data" / name, LOCAL_TRACES / name) if p.exists())
    assert main(["analyze", str(path), "--json"]) in (0, 1)
    assert main(["report", str(path), "--out", str(tmp_path / "rep"), "--no-png"]) == 0
    model = load(path).primary
    assert model.slices.sparse_names()
    from gui.timeline.details import slice_details_html
    from gui.timeline.view import slice_tooltip
    for row in range(0, len(model.slices), max(1, len(model.slices) // 200)):
        slice_details_html(model, 0, row)
        slice_tooltip(model, row)
    capsys.readouterr()
    assert built == []
