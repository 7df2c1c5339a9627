"""core/snapshot/bounds.py: the opcode scan and the expanded-size measure (issue 14's pickle bombs)."""
from __future__ import annotations

import pickle

import pytest

from core.snapshot import bounds
from core.snapshot.bounds import SnapshotBoundError, measure, scan_opcodes
from core.snapshot.unpickle import safe_loads
from core.trace.model import TraceParseError


def _deadline():
    return bounds.deadline_after()


def test_shared_references_count_by_their_expanded_size():
    leaf = list(range(10))
    assert measure([leaf, leaf], _deadline()) == 1 + 2 * 11
    assert measure({"a": leaf}, _deadline()) == 1 + 1 + 11


def test_a_shared_frames_list_counts_once():
    frames = [{"filename": "x.py", "line": 1, "name": "f"}] * 3
    events = [{"action": "alloc", "frames": frames} for _ in range(4)]
    walked = 1 + 3 * (1 + 6)  # the frames list and its (shared) frame dict, counted in full once
    first = 1 + 4 + walked - 1  # an event: itself, 2 keys + 2 values, the frames value counted as its size
    later = 1 + 4  # later events: the shared frames list counts once (as one value)
    assert measure(events, _deadline()) == 1 + first + 3 * later


def test_billion_laughs_is_refused_quickly(monkeypatch):
    level = []
    for _ in range(60):
        level = [level] * 10
    with pytest.raises(SnapshotBoundError, match="expands to more than"):
        measure(level, _deadline())


def test_cycles_and_depth_are_refused():
    loop = []
    loop.append(loop)
    with pytest.raises(SnapshotBoundError, match="contains itself"):
        measure(loop, _deadline())
    deep = []
    for _ in range(bounds.MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(SnapshotBoundError, match="nests deeper"):
        measure(deep, _deadline())


def test_tuple_keys_are_measured_too(monkeypatch):
    monkeypatch.setattr(bounds, "MAX_EXPANDED", 10_000)
    key = (1,)
    for _ in range(5):
        key = (key,) * 10  # 10**5 values once expanded (hashing it once is still cheap)
    with pytest.raises(SnapshotBoundError):
        measure({key: 1}, _deadline())


@pytest.mark.parametrize("data, why", [
    (b"\x80\x02]r\xff\xff\xff\x7f.", "memo index"),
    (b"(lp9999999999999\n.", "memo index"),
])
def test_memo_index_bombs_are_refused_before_unpickling(data, why):
    with pytest.raises(SnapshotBoundError, match=why):
        scan_opcodes(data, _deadline())
    with pytest.raises(TraceParseError, match=why):
        safe_loads(data)


def test_object_count_bound(monkeypatch):
    monkeypatch.setattr(bounds, "MAX_OBJECTS", 1000)
    with pytest.raises(TraceParseError, match="more than 1,000 objects"):
        safe_loads(pickle.dumps([[] for _ in range(2000)]))


def test_real_shapes_pass():
    obj = {"segments": [{"address": i, "total_size": 4096, "blocks": [{"size": 512, "state": "active_allocated"}]}
                        for i in range(100)], "device_traces": [[]]}
    assert safe_loads(pickle.dumps(obj, protocol=4)) == obj
    assert safe_loads(pickle.dumps(obj, protocol=0)) == obj
