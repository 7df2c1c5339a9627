"""StringTable.ids_matching: one evaluation per distinct string across tables (ranks), same ids as before."""
from __future__ import annotations

import pickle

import numpy as np

from core.trace import shared_match
from core.trace.strings import StringTable


def _plain_ids(t, pred):
    return np.asarray([i for i, s in enumerate(t.to_list()) if pred(s)], np.int32)


CALLS: list[str] = []


def _pred(s, needle="nccl-test"):
    CALLS.append(s)
    return needle[:4] in s.lower()


def test_same_ids_and_each_string_asked_once():
    calls, pred = CALLS, _pred
    a = StringTable(["", "ncclKernel_x", "aten::mm", "NCCL:all_reduce"])
    b = StringTable(["", "aten::mm", "ncclKernel_x", "other"])
    got_a, got_b = a.ids_matching(pred), b.ids_matching(pred)
    assert got_a.tolist() == [1, 3]
    assert got_b.tolist() == [2]
    asked = [s for s in calls[:]]
    calls.clear()
    a.ids_matching(pred)
    b.intern("nccl_new")
    assert b.ids_matching(pred).tolist() == [2, 4]
    assert calls == ["nccl_new"]  # only the string no table had before
    assert len(set(asked)) == len(asked)  # each distinct string of both tables once


def test_closures_with_mutable_state_are_not_memoised():
    seen = []
    t = StringTable(["", "a", "b"])
    assert shared_match.key_of(lambda s: s in seen) is None
    seen.append("a")
    assert t.ids_matching(lambda s: s in seen).tolist() == [1]
    seen.append("b")
    assert t.ids_matching(lambda s: s in seen).tolist() == [1, 2]


def test_different_defaults_are_different_predicates():
    t = StringTable(["", "x", "y"])
    assert [t.ids_matching(lambda s, w=w: s == w).tolist() for w in ("x", "y")] == [[1], [2]]


def test_pickle_drops_the_process_ids():
    t = StringTable(["", "a"])
    t.ids_matching(lambda s: s == "a")
    u = pickle.loads(pickle.dumps(t))
    assert u._gids is None and u.to_list() == ["", "a"] and u.find("a") == 1
