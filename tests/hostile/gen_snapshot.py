"""Hostile memory-snapshot pickles of issue 37 (a corpus written from scratch found them): huge integers
in the allocator settings, out-of-range numbers in the columns, and pickles whose *opcodes* cost far more
than their size (memo tables, deep nesting, millions of appends or memoisations). gen_store.SNAPSHOT_CASES
lists them beside issue 14's bombs, so the CLI, property and GUI tests walk them all.

Each builder returns the pickle's bytes; the big ones are built from opcodes (pickle.dumps would recurse
or take minutes) and stay a few MB.
"""
from __future__ import annotations

import pickle
import struct
from collections.abc import Callable

PROTO4 = b"\x80\x04"


def _snapshot(**extra) -> dict:
    seg = {"device": 0, "address": 4096, "total_size": 1 << 20, "allocated_size": 512, "active_size": 512,
           "stream": 0, "segment_type": "large",
           "blocks": [{"address": 4096, "size": 512, "requested_size": 512, "state": "active_allocated"}]}
    ring = [{"action": "alloc", "addr": 4096, "size": 512, "stream": 0, "time_us": 1}]
    return {"segments": [seg], "device_traces": [ring], **extra}


# ---- numbers no snapshot holds ----

def big_int_value() -> bytes:  # > 4,300 digits: str() of it raised ValueError in `info`
    return pickle.dumps(_snapshot(allocator_settings={"max_split_size": 10 ** 5000}), protocol=4)


def big_int_key() -> bytes:
    return pickle.dumps(_snapshot(allocator_settings={10 ** 5000: 1}), protocol=4)


def big_int_in_list() -> bytes:
    return pickle.dumps(_snapshot(allocator_settings={"sizes": [1, 10 ** 5000]}), protocol=4)


def big_int_text() -> bytes:  # protocol 0: LONG written in decimal
    return b"(dp0\nVsegments\np1\n(lp2\nsVx\np3\nL" + b"7" * 5000 + b"L\ns."


def negative_size() -> bytes:  # cumsum + baseline overflowed: OverflowError in active_timeline
    snap = _snapshot()
    snap["device_traces"][0].append({"action": "alloc", "addr": 8192, "size": -(2 ** 63), "time_us": 2})
    return pickle.dumps(snap, protocol=4)


def huge_size() -> bytes:
    snap = _snapshot()
    snap["device_traces"][0] += [{"action": "alloc", "addr": 8192 * k, "size": 2 ** 62, "time_us": 2 + k}
                                 for k in range(1, 4)]
    return pickle.dumps(snap, protocol=4)


def huge_time() -> bytes:  # time_us * 1000 wrapped around int64 silently ("2 events over 0 ns")
    snap = _snapshot()
    snap["device_traces"][0].append({"action": "alloc", "addr": 8192, "size": 512, "time_us": 2 ** 60})
    return pickle.dumps(snap, protocol=4)


def negative_total_size() -> bytes:
    snap = _snapshot()
    snap["segments"][0]["total_size"] = -(2 ** 70)
    return pickle.dumps(snap, protocol=4)


# ---- opcodes that cost more than their bytes ----

def long_put_index() -> bytes:
    """84 bytes: a PUT index written with 70 characters (the scan read only the first 64, so the bound was
    skipped); the C unpickler then sized its memo table by it (2.3 GB)."""
    return b"(lp" + b"0" * 60 + b"2147483647\n."


def put_leading_zeros(n: int = 150_000_000) -> bytes:
    """A PUT index behind 150 M leading zeros (150 MB of one opcode's argument)."""
    return b"(lp" + b"0" * n + b"1\n."


def put_leading_spaces(n: int = 150_000_000) -> bytes:
    return b"(lp" + b" " * n + b"1\n."


def many_memoize(n: int = 10_000_000) -> bytes:
    """10 MB: one list memoised 10 M times (the pickler memoises an object once)."""
    return PROTO4 + b"]" + b"\x94" * n + b"."


def deep_list(n: int = 1_000_000) -> bytes:
    """A 1 M-deep nest of lists: EMPTY_LIST x n, then APPEND x (n - 1)."""
    return PROTO4 + b"]" * n + b"a" * (n - 1) + b"."


def deep_marks(n: int = 1_000_000) -> bytes:
    """A 1 M-deep nest of lists through MARK ... LIST."""
    return PROTO4 + b"(" * n + b"l" * n + b"."


def deep_tuples(n: int = 1_000_000) -> bytes:
    """A 1 M-deep nest of 1-tuples: one stack slot (TUPLE1 repeated)."""
    return PROTO4 + b"N" + b"\x85" * n + b"."


def many_appends(n: int = 1_000_000) -> bytes:
    """device_traces[0] = one event dict appended 1 M times by reference (BINGET + APPEND each)."""
    head = (PROTO4 + b"}\x94(\x8c\x08segments\x94]\x94\x8c\x0ddevice_traces\x94]\x94]\x94"
            + b"}\x94(\x8c\x06action\x94\x8c\x05alloc\x94\x8c\x04addr\x94K\x01\x8c\x04size\x94M\x00\x02"
            + b"\x8c\x07time_us\x94K\x01u")  # memo 6 = the event dict
    body = b"a" + b"h\x06a" * (n - 1)  # the first append takes the dict from the stack, the rest by reference
    return head + body + b"au."


def many_appends_top(n: int = 1_000_000) -> bytes:
    """A list of 1 M Nones, one APPEND each."""
    return PROTO4 + b"]" + b"Na" * n + b"."


def many_annotations(n: int = 1_000_000) -> bytes:
    """1 M START/END annotations (real runs: one pair per step)."""
    ann = [{"name": f"ProfilerStep#{i // 2}", "stage": "START" if i % 2 == 0 else "END", "device": 0,
            "time_us": i} for i in range(n)]
    return pickle.dumps(_snapshot(external_annotations=ann), protocol=4)


def shared_long_stack(events: int = 50_000, frames: int = 1_000_000) -> bytes:
    """Every trace event shares one frames list of 1 M references to 10 frame dicts (the pickle memoises
    it once: ~3 MB): stack keying must cost the list's length once, not once per event (issue 32's C
    grouping keys a list object once)."""
    pool = [{"filename": f"/p/m{k}.py", "line": k, "name": f"f{k}"} for k in range(10)]
    stack = [pool[k % 10] for k in range(frames)]
    ring = [{"action": "alloc", "addr": 4096 + 512 * i, "size": 512, "stream": 0, "time_us": 1 + i,
             "frames": stack} for i in range(events)]
    return pickle.dumps(_snapshot(device_traces=[ring]), protocol=4)


def huge_length_prefix() -> bytes:
    """A BINUNICODE8 that claims 2**62 bytes."""
    return PROTO4 + b"\x8d" + struct.pack("<Q", 2 ** 62) + b"abc."


CASES: dict[str, Callable[[], bytes]] = {
    "big_int_value": big_int_value, "big_int_key": big_int_key, "big_int_in_list": big_int_in_list,
    "big_int_text": big_int_text, "negative_size": negative_size, "huge_size": huge_size,
    "huge_time": huge_time, "negative_total_size": negative_total_size, "long_put_index": long_put_index,
    "put_leading_zeros": put_leading_zeros, "put_leading_spaces": put_leading_spaces,
    "many_memoize": many_memoize, "deep_list": deep_list, "deep_marks": deep_marks, "deep_tuples": deep_tuples,
    "many_appends": many_appends, "many_appends_top": many_appends_top, "many_annotations": many_annotations,
    "huge_length_prefix": huge_length_prefix, "shared_long_stack": shared_long_stack,
}

# the one-line reason `ptprof info` must give (None: it opens, with what is valid in it)
REASON = {
    "big_int_value": "integer of", "big_int_key": "integer of", "big_int_in_list": "integer of",
    "big_int_text": "integer of", "negative_size": "size", "huge_size": "size", "huge_time": "time",
    "negative_total_size": "total_size", "long_put_index": "memo index", "put_leading_zeros": "memo index",
    "put_leading_spaces": "memo index", "many_memoize": "memoises", "deep_list": "nests deeper",
    "deep_marks": "nests deeper", "deep_tuples": "nests deeper", "many_appends": None,
    "many_appends_top": "not a CUDA memory snapshot", "many_annotations": None, "huge_length_prefix": "pickle",
    "shared_long_stack": None,
}
WARNING = {"many_annotations": "annotations"}  # opens, with this in its one warning line
