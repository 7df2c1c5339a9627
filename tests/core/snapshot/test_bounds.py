"""core/snapshot/bounds.py: the one-pass opcode walk (issue 14's pickle bombs, issue 37's opcode classes).
Every case runs through both walks: the C one (core/snapshot/_pickscan.h in core.trace._scan) and its
pure-Python twin, which must give the same answer."""
from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from hostile import gen_snapshot

from core.snapshot import bounds
from core.snapshot.bounds import SnapshotBoundError, scan_opcodes
from core.snapshot.unpickle import safe_loads
from core.trace import columns as trace_columns
from core.trace.model import TraceParseError

WALKS = ["c", "python"]


@pytest.fixture(params=WALKS)
def walk(request, monkeypatch):
    if request.param == "c":
        if trace_columns._scan is None or not hasattr(trace_columns._scan, "pickle_bounds"):
            pytest.skip("core.trace._scan is not built (cc ... core/trace/_scan.c)")
    else:
        monkeypatch.setattr(trace_columns, "_scan", None)
    return request.param


def _reason(data) -> str | None:
    try:
        scan_opcodes(bytearray(data))
    except SnapshotBoundError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("case, why", [
    ("long_put_index", "memo index 2147483647 is beyond"),
    ("many_memoize", "memoises more often"),
    ("deep_list", "nests deeper than 100"),
    ("deep_marks", "nests deeper than 100"),
    ("deep_tuples", "nests deeper than 100"),
    ("big_int_value", "integer of 16616 bits"),
    ("big_int_key", "integer of 16616 bits"),
    ("big_int_in_list", "integer of 16616 bits"),
    ("big_int_text", "integer of 5001 characters"),
    ("huge_length_prefix", "truncated"),
])
def test_opcode_classes_are_refused_by_both_walks(walk, case, why):
    assert why in (_reason(gen_snapshot.CASES[case]()) or "")


@pytest.mark.parametrize("case", ["put_leading_zeros", "put_leading_spaces"])
def test_padded_put_index_is_refused_at_once(walk, case):
    n = 150_000_000 if walk == "c" else 200_000  # the Python walk is the same rule, ~100x slower
    data = getattr(gen_snapshot, case)(n)
    assert "memo index written with" in (_reason(data) or "")


@pytest.mark.parametrize("data, why", [
    (b"\x80\x02]r\xff\xff\xff\x7f.", "memo index"),
    (b"(lp9999999999999\n.", "memo index"),
    (b"\x80\x02]" + b"q\x00" * 3 + b".", "memoises more often"),
])
def test_memo_bombs(walk, data, why):
    assert why in (_reason(data) or "")
    with pytest.raises(TraceParseError, match=why):
        safe_loads(data)


def test_object_count_bound(walk, monkeypatch):
    monkeypatch.setattr(bounds, "MAX_OBJECTS", 1000)
    with pytest.raises(TraceParseError, match="more than 1000 objects"):
        safe_loads(pickle.dumps([[] for _ in range(2000)]))


def test_stack_bound(walk, monkeypatch):
    monkeypatch.setattr(bounds, "MAX_STACK", 5000)
    with pytest.raises(TraceParseError, match="more than 5000 items on its stack"):
        safe_loads(b"\x80\x04" + b"N" * 6000 + b".")


@pytest.mark.parametrize("protocol", [0, 1, 2, 3, 4, 5])
def test_real_shapes_pass_every_protocol(walk, protocol):
    frames = [{"filename": "train.py", "line": 3, "name": "step"}]
    obj = {"segments": [{"address": i, "total_size": 4096, "segment_pool_id": (0, 0),
                         "blocks": [{"size": 512, "state": "active_allocated", "frames": frames}]}
                        for i in range(300)],
           "device_traces": [[{"action": "alloc", "addr": i, "size": -1 + 2**40, "time_us": 2**50, "frames": frames}
                              for i in range(1500)]],
           "allocator_settings": {"big": 10**40, "neg": -2**63, "f": 1.5, "t": (1, (2, 3))}}
    assert _reason(pickle.dumps(obj, protocol=protocol)) is None
    assert safe_loads(pickle.dumps(obj, protocol=protocol)) == obj


def test_the_shared_snapshot_passes_both_walks(walk):
    data = (Path(__file__).resolve().parents[2] / "data" / "traces" / "gpu_memory.snapshot.pickle").read_bytes()
    assert _reason(data) is None


def test_the_walks_agree_on_mutations():
    """Both walks give the same answer on flipped / cut / inserted bytes of a real-shaped pickle."""
    if trace_columns._scan is None or not hasattr(trace_columns._scan, "pickle_bounds"):
        pytest.skip("core.trace._scan is not built")
    import random
    rnd = random.Random(37)
    base = pickle.dumps({"segments": [{"address": 1, "total_size": 2, "blocks": [[1, [2, (3,)]]]}],
                         "device_traces": [[{"a": 10**30}]] * 2}, protocol=2)
    c_walk = trace_columns._scan
    for _ in range(3000):
        b = bytearray(base)
        k = rnd.randrange(len(b))
        how = rnd.randrange(3)
        if how == 0:
            b[k] = rnd.randrange(256)
        elif how == 1:
            del b[k:]
        else:
            b[k:k] = bytes([rnd.randrange(256)])
        c = c_walk.pickle_bounds(b, bounds.MAX_OBJECTS, bounds.MAX_DEPTH, bounds.MAX_STACK, bounds.MAX_INT_BYTES,
                                 bounds.MAX_TEXT_ARG)
        py = bounds._scan_python(b, bounds.deadline_after())
        assert c == py, (bytes(b), c, py)
