"""Merger writes row columns straight into the merged arrays: a short size estimate (grown on the way)
or chunks from both decode paths give the same merged columns as exact sizing."""
from __future__ import annotations

import json

import numpy as np
import pytest

from core.trace import parallel
from core.trace.columns import events_to_columns, scan_available, scan_columns
from core.trace.merge import Merger, merge_chunks
from core.trace.tolerant import decode_events


def _chunk(i: int, n: int, fast: bool):
    evs = [{"ph": "X", "cat": "cpu_op" if k % 3 else "python_function", "name": f"op{i}_{k % 7}", "pid": 1,
            "tid": "Spans" if k == 5 else 2 + k % 2, "ts": i * 1000 + k * 1.5, "dur": 1.25,
            "args": {"External id": k, "Python id": k}} for k in range(n)]
    evs.append({"ph": "i", "name": "mark", "pid": 1, "tid": 2, "ts": i * 1000.0})
    text = b"[" + b",\n  ".join(json.dumps(e).encode() for e in evs) + b"]"
    if fast:
        return scan_columns(text, 0, len(text), file_offsets=False)
    events, cargs, warnings = decode_events(text, last=True)
    return events_to_columns(events, cargs, warnings, text)


def _merged(chunks, expect):
    m = Merger(expect)
    for ch in chunks:
        m.add(ch)
    return m.finish()


@pytest.mark.parametrize("fast", [False, True])
def test_short_estimate_grows_to_the_same_columns(fast):
    if fast and not scan_available():
        pytest.skip("the C scanner is not built")
    sizes = [5, 40, 0, 300, 17]
    exact = merge_chunks([_chunk(i, n, fast) for i, n in enumerate(sizes)])
    for expect in (0, 1, 50, 10_000):
        got = _merged([_chunk(i, n, fast) for i, n in enumerate(sizes)], expect)
        assert got.rows.keys() == exact.rows.keys()
        for k in exact.rows:
            assert got.rows[k].dtype == exact.rows[k].dtype and np.array_equal(got.rows[k], exact.rows[k]), k
        assert got.strings.to_list() == exact.strings.to_list()
        assert len(got.rows["ts"]) == sum(sizes)


def test_chunks_of_both_paths_merge_alike():
    if not scan_available():
        pytest.skip("the C scanner is not built")
    mixed = _merged([_chunk(0, 30, True), _chunk(1, 30, False), _chunk(2, 30, True)], 1)
    slow = _merged([_chunk(0, 30, False), _chunk(1, 30, False), _chunk(2, 30, False)], 1)
    for k in slow.rows:  # string ids depend on the order strings were met: compare the strings
        if k in ("name", "cat"):
            assert mixed.strings.lookup(mixed.rows[k]) == slow.strings.lookup(slow.rows[k]), k
        elif k in ("pid", "tid"):  # string codes too ("Spans")
            assert np.array_equal(mixed.rows[k] < 0, slow.rows[k] < 0)
        else:
            assert np.array_equal(mixed.rows[k], slow.rows[k]), k


def test_expected_rows_overestimates_a_uniform_file():
    assert parallel.expected_rows(1000, 1 << 20, 100 << 20) >= 100_000
    assert parallel.expected_rows(0, 0, 0) > 0


@pytest.mark.parametrize("name,dtype,fill", [("python_id", np.int64, -1), ("occupancy", np.float32, np.nan)])
@pytest.mark.parametrize("layout", ["all dense", "mostly dense", "mostly sparse", "gaps", "one part"])
def test_arg_parts_give_the_same_column_in_any_form(name, dtype, fill, layout):
    """An arg column from chunk parts (dense values or (index, value) pairs, chunks without the arg in
    between) reads the same through `dense`, in file order and scattered to sorted positions, whether
    it is kept in dense pieces or turned into pairs."""
    from core.trace.columns import ARG_FILL
    from core.trace.merge import DenseParts, _arg_concat, dense
    rng = np.random.default_rng(len(layout))
    sizes = {"all dense": [50, 30, 20], "mostly dense": [50, 30, 20, 40], "mostly sparse": [10, 60, 60],
             "gaps": [40, 25, 35, 30], "one part": [70]}[layout]
    kinds = {"all dense": "ddd", "mostly dense": "ddsd", "mostly sparse": "dss", "gaps": "d-ds",
             "one part": "d"}[layout]
    n = sum(sizes)
    want = np.full(n, fill, dtype=dtype)
    parts, first = [], 0
    for size, kind in zip(sizes, kinds):
        vals = rng.integers(0, 1000, size).astype(dtype)
        if kind == "d":  # dense: a missing value is the fill
            vals[rng.random(size) < 0.2] = ARG_FILL[name]
            parts.append((first, None, vals))
            want[first:first + size] = vals
        elif kind == "s":
            idx = np.flatnonzero(rng.random(size) < 0.3).astype(np.int32)
            parts.append((first, idx, vals[idx]))
            want[first + idx] = vals[idx]
        first += size  # "-": a chunk without the arg
    arg = _arg_concat(name, list(parts), dtype, n)
    if layout in ("all dense", "mostly dense", "gaps"):
        assert arg[0] is None and isinstance(arg[1], DenseParts)
    elif layout == "mostly sparse":
        assert arg[0] is not None
    order = rng.permutation(n)
    position = np.empty(n, dtype=np.int32)
    position[order] = np.arange(n, dtype=np.int32)
    got_sorted = dense(arg, n, fill, position)
    np.testing.assert_array_equal(got_sorted, want[order])
    assert got_sorted.dtype == dtype
    got = dense(_arg_concat(name, list(parts), dtype, n), n, fill)  # file order (an identity sort)
    np.testing.assert_array_equal(got, want)
