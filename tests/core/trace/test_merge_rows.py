"""Merger writes row columns straight into the merged arrays: a short size estimate (grown on the way)
or chunks from both decode paths give the same merged columns as exact sizing."""
from __future__ import annotations

import json

import numpy as np
import pytest

from core.trace import parallel
from core.trace.columns import events_to_columns, scan_available, scan_columns
from core.trace.kineto import decode_events
from core.trace.merge import Merger, merge_chunks


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
