"""Fixtures for trace-engine tests: `models_equal` compares two TraceModels column by column."""
from __future__ import annotations

import numpy as np
import pytest

STRING_COLUMNS = {"name", "cat", "grid", "block", "input_dims", "input_strides", "input_types", "call_stack",
                  "label", "series"}
TABLES = ("slices", "tracks", "memory", "instants", "counters", "flows", "steps")


def assert_models_equal(a, b) -> None:
    assert a.counts == b.counts
    assert a.meta == b.meta
    assert a.rank == b.rank
    assert sorted(a.warnings) == sorted(b.warnings)
    for table in TABLES:
        ta, tb = getattr(a, table), getattr(b, table)
        for col, arr in ta.columns().items():
            other = getattr(tb, col)
            assert arr.dtype == other.dtype, (table, col, arr.dtype, other.dtype)
            if col == "src_offset" and ((arr < 0).all() or (np.asarray(other) < 0).all()):
                continue  # file offsets come with the C scanner only (the msgspec path has none)
            if col in STRING_COLUMNS:
                assert a.strings.lookup(arr) == b.strings.lookup(other), (table, col)
            else:
                np.testing.assert_array_equal(np.asarray(arr), np.asarray(other), err_msg=f"{table}.{col}")


@pytest.fixture
def models_equal():
    return assert_models_equal
