"""The unpickled snapshot's lists of dicts -> numpy columns, one field at a time in C, checked for range.

A 1 M-allocation snapshot is ~10 M dict lookups: `map(methodcaller("get", key, default), rows)` feeds
`np.fromiter`, so no Python frame runs per row. Numbers outside what a CUDA allocator can report are
refused with the field named (`Malformed`): a size of -2**63 made the active-memory cumsum overflow, a
time of 2**60 us wrapped around int64 silently. What shared references could multiply is bounded
before anything is read (`check_rows`): more than MAX_DEVICES rings, more than MAX_ROWS rows in all,
rings or block lists shared so often that the rows read are many times those held. Entries that are not
dicts are skipped, with a warning.
The cyclic garbage collector is paused while millions of containers are built and read (`no_gc`: it
scanned them all again and again; 2.7x the unpickling time of a 1 M-allocation snapshot).
"""
from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from itertools import chain, repeat
from operator import itemgetter, methodcaller

import numpy as np

from core.snapshot.intern import Interner
from core.snapshot.model import (
    ACTION_CODES,
    BLOCK_STATE_CODES,
    Action,
    BlockState,
    BlockTable,
    DeviceTrace,
    SegmentTable,
    Window,
)

MAX_DEVICES = 1024  # distinct device ids (a node has <= 16 GPUs); more would make the per-device views quadratic
MAX_ROWS = 50_000_000  # trace events + blocks read in all (a 1 GB snapshot holds ~7 M)
MAX_SHARING = 4  # rows read / distinct rows held (a ring shared by two devices is 2)
MAX_ANNOTATIONS = 100_000  # external annotations read (a run records a START and an END per step)
MAX_BYTES = 1 << 50  # a size, address-range or byte count a GPU allocator can report (1 PiB)
MAX_TIME_US = 1 << 52  # time_us (year ~2112); time_ns = time_us * 1000 stays inside int64


class Malformed(ValueError):
    """A field no CUDA memory snapshot holds: the load is refused with this one-line reason."""


_gc_lock = threading.Lock()
_gc_pauses = 0


@contextmanager
def no_gc():
    """Pause the cyclic GC (nested and across threads: it resumes when the last pause ends, and only if it
    was enabled when the first began)."""
    global _gc_pauses, _gc_was_enabled
    with _gc_lock:
        if _gc_pauses == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pauses += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_was_enabled:
                gc.enable()


_gc_was_enabled = True


def _dicts(rows, where: str, warnings: list[str]) -> list:
    if not isinstance(rows, list):
        return []
    if not rows or set(map(type, rows)) == {dict}:
        return rows
    kept = [r for r in rows if type(r) is dict]
    warnings.append(f"{where}: {len(rows) - len(kept):,} entries are not dicts (skipped)")
    return kept


def _values(rows: list, key: str, default=None, into=None):
    """`row.get(key, default)` of every row, in C: `itemgetter` (1.7x quicker) when every row has the key,
    `methodcaller("get")` otherwise. `into(iterator)` consumes them (default: a list)."""
    into = into or list
    try:
        return into(map(itemgetter(key), rows))
    except KeyError:
        return into(map(methodcaller("get", key, default), rows))


def _ints(rows: list, key: str, default, where: str, lo: int, hi: int, dtype=np.int64) -> np.ndarray:
    try:
        col = _values(rows, key, default, lambda it: np.fromiter(it, np.int64, len(rows)))
    except OverflowError:
        raise Malformed(f"{where}: a '{key}' beyond 64 bits") from None
    if len(col):
        bad = (col < lo) | (col >= hi)
        if bad.any():
            i = int(np.argmax(bad))
            raise Malformed(f"{where}[{i}] has '{key}' {int(col[i]):,}, outside {lo:,} .. {hi:,}")
    return col.astype(dtype, copy=False)


def check_rows(segments, traces) -> None:
    """Refuse, before reading, what shared references would multiply: the rows read (trace events +
    blocks, a shared list counted each time it is referenced) past MAX_ROWS, or past MAX_SHARING times
    the rows the pickle really holds (each distinct list once)."""
    if len(traces) > MAX_DEVICES:
        raise Malformed(f"{len(traces):,} device traces (at most {MAX_DEVICES}): not a real CUDA memory snapshot")
    lists = [r for r in traces if isinstance(r, list)]
    lists += [b for s in segments if type(s) is dict and isinstance(b := s.get("blocks"), list)]
    expanded = sum(map(len, lists))
    distinct = sum(map(len, {id(x): x for x in lists}.values()))
    if expanded > MAX_ROWS or expanded > MAX_SHARING * max(distinct, 1000):
        raise Malformed(f"pickle expands to more than {min(expanded, MAX_ROWS):,} trace events and blocks through "
                        f"shared references ({distinct:,} distinct): not a real CUDA memory snapshot")


def segments(raw: list, interner: Interner, warnings: list[str]) -> tuple[SegmentTable, BlockTable]:
    segs = _dicts(raw, "segments", warnings)
    where = "segments"
    pool_ids = tuple(_pool_id(s.get("segment_pool_id")) for s in segs)
    table = SegmentTable(
        device=_ints(segs, "device", 0, where, -(1 << 31), 1 << 31, np.int32),
        address=_ints(segs, "address", None, where, 0, 1 << 63),
        total_size=_ints(segs, "total_size", None, where, 0, MAX_BYTES),
        allocated_size=_ints(segs, "allocated_size", 0, where, 0, MAX_BYTES),
        active_size=_ints(segs, "active_size", 0, where, 0, MAX_BYTES),
        stream=_ints(segs, "stream", 0, where, -(1 << 63), 1 << 63),
        pool_large=np.array([s.get("segment_type") == "large" for s in segs], bool),
        pool_id=pool_ids)
    per_seg = [_dicts(s.get("blocks") or [], f"segments[{i}].blocks", warnings) for i, s in enumerate(segs)]
    rows = list(chain.from_iterable(per_seg))
    where = "blocks"
    size = _ints(rows, "size", 0, where, 0, MAX_BYTES)
    requested = _ints(rows, "requested_size", -1, where, -1, MAX_BYTES)  # -1: missing, the block's size
    other = BlockState.OTHER.value
    blocks = BlockTable(
        segment=np.repeat(np.arange(len(segs), dtype=np.int32), [len(b) for b in per_seg]),
        address=_ints(rows, "address", 0, where, 0, 1 << 63),
        size=size,
        requested_size=np.where(requested < 0, size, requested),
        state=np.fromiter(map(BLOCK_STATE_CODES.get, _values(rows, "state"), repeat(other)),
                          np.int8, len(rows)) if rows else np.zeros(0, np.int8),
        stack=interner.stacks_of(_values(rows, "frames")))
    return table, blocks


def _pool_id(v) -> tuple[int, int]:
    if isinstance(v, (tuple, list)) and len(v) == 2:
        try:
            return int(v[0]), int(v[1])
        except (TypeError, ValueError, OverflowError):
            return (0, 0)
    return (0, 0)


def trace(device: int, ring, interner: Interner, warnings: list[str]) -> DeviceTrace | None:
    where = f"device_traces[{device}]"
    ev = _dicts(ring, where, warnings)
    if not ev:
        return None
    other = Action.OTHER.value
    size = _ints(ev, "size", 0, where, 0, MAX_BYTES)
    if float(size.astype(np.float64).sum()) >= 2.0 ** 62:
        raise Malformed(f"{where}: its sizes add up past 2**62 bytes")
    return DeviceTrace(
        device=device,
        action=np.fromiter(map(ACTION_CODES.get, _values(ev, "action"), repeat(other)), np.int8, len(ev)),
        addr=_ints(ev, "addr", 0, where, 0, 1 << 63),
        size=size,
        stream=_ints(ev, "stream", 0, where, -(1 << 63), 1 << 63),
        time_ns=_ints(ev, "time_us", 0, where, 0, MAX_TIME_US) * 1000,
        stack=interner.stacks_of(_values(ev, "frames")))


def windows(raw, warnings: list[str]) -> tuple[Window, ...]:
    """Pair START/END annotations by (name, device); unmatched starts are dropped; at most MAX_ANNOTATIONS
    are read (a warning says how many were left)."""
    if not isinstance(raw, list):
        return ()
    if len(raw) > MAX_ANNOTATIONS:
        warnings.append(f"{len(raw):,} external annotations: only the first {MAX_ANNOTATIONS:,} are read")
        raw = raw[:MAX_ANNOTATIONS]
    open_: dict[tuple[str, int], int] = {}
    out: list[Window] = []
    for a in raw:
        if type(a) is not dict or "time_us" not in a:
            continue
        t_us, dev = a["time_us"], a.get("device", 0)
        if not (_small_int(t_us, 0, MAX_TIME_US) and _small_int(dev, -(1 << 31), 1 << 31)):
            continue
        key = (str(a.get("name", ""))[:1000], int(dev))
        if a.get("stage") == "START":
            open_[key] = int(t_us) * 1000
        elif a.get("stage") == "END" and key in open_:
            out.append(Window(key[0], key[1], open_.pop(key), int(t_us) * 1000))
    return tuple(sorted(out, key=lambda w: w.t0_ns))


def _small_int(v, lo: int, hi: int) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and lo <= v < hi
