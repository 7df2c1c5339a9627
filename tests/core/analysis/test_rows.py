"""Row selections by kind / name (core.analysis.rows) give what np.isin over every slice gives."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import shared_trace

from core.analysis import rows
from core.trace.loader import load
from core.trace.model import GPU_KINDS, FlowKind, Kind

KIND_SETS = [GPU_KINDS, (Kind.RUNTIME,), (Kind.CPU_OP, Kind.RUNTIME, Kind.ANNOTATION), (Kind.TRACE,),
             (Kind.PYTHON,), (Kind.CPU_OP, Kind.ANNOTATION, Kind.OTHER, Kind.PYTHON), tuple(Kind), ()]


@pytest.fixture(scope="module", params=["gpu_compile_small.pt.trace.json.gz", "gpu_issues.pt.trace.json.gz",
                                        "cpu_train.pt.trace.json.gz"])
def model(request):
    return load(shared_trace(request.param), use_cache=False).primary


@pytest.mark.parametrize("kinds", KIND_SETS)
def test_kind_rows_and_mask_equal_isin(model, kinds):
    s = model.slices
    want = np.isin(s.kind, np.asarray(kinds, np.int8))
    assert np.array_equal(rows.kind_mask(model, kinds), want)
    got = rows.kind_rows(model, kinds)
    assert got.dtype == np.int64 and np.array_equal(got, np.flatnonzero(want))
    assert np.array_equal(rows.kind_rows(model, kinds), got)  # kept or not, the same answer twice


@pytest.mark.parametrize("kinds", [None, *KIND_SETS])
def test_named_rows_equal_isin(model, kinds):
    s = model.slices
    rng = np.random.default_rng(7)
    present = np.unique(s.name)
    for ids in (present[:3], rng.choice(present, size=min(40, len(present)), replace=False),
                np.array([-1, len(model.strings) + 5, int(present[-1])]), np.zeros(0, np.int64)):
        want = np.isin(s.name, ids[ids >= 0])
        if kinds is not None:
            want &= np.isin(s.kind, np.asarray(kinds, np.int8))
        assert np.array_equal(rows.named_rows(model, ids, kinds), np.flatnonzero(want))
    cats = np.unique(s.cat)[:2]
    assert np.array_equal(rows.named_rows(model, cats, column="cat"), np.flatnonzero(np.isin(s.cat, cats)))
    pred = lambda n: n.startswith("cuda")  # noqa: E731
    want = np.isin(s.name, model.strings.ids_matching(pred))
    if kinds is not None:
        want &= np.isin(s.kind, np.asarray(kinds, np.int8))
    assert np.array_equal(rows.named_rows_matching(model, pred, kinds), np.flatnonzero(want))


def test_launch_ends_and_times_equal_a_scatter_over_all_slices(model):
    s, f = model.slices, model.flows
    launch = f.kind == FlowKind.LAUNCH
    for missing in (-1, np.iinfo(np.int64).max):
        full = np.full(len(s), missing, np.int64)
        full[f.dst[launch]] = s.ts_ns[f.src[launch]]
        sel = np.arange(0, len(s), 3)
        assert np.array_equal(rows.launch_src_ts(model, sel, missing), full[sel])
    for side in ("src", "dst"):
        linked = np.zeros(len(s), bool)
        linked[getattr(f, side)[launch]] = True
        sel = np.arange(len(s))
        assert np.array_equal(rows.launch_ends(model, sel, side), linked)


def test_kind_counts_in_pieces_equal_one_bincount(monkeypatch):
    """Counted in pieces (the GIL is free between them); a piece cut at every 1,000 rows changes nothing."""
    m = load(shared_trace("gpu_issues.pt.trace.json.gz"), use_cache=False).primary
    monkeypatch.setattr(rows, "COUNT_PIECE_ROWS", 1000)
    assert len(m.slices) > 3000
    np.testing.assert_array_equal(rows.kind_counts(m), np.bincount(m.slices.kind.view(np.uint8), minlength=256))
