"""The slow, tolerant decoding paths: non-standard JSON (unquoted N/A, NaN), corrupt and truncated chunks.

`decode_events` is the entry: the typed decoder (core.trace.kineto) first, these paths only for chunks it
refused (kineto imports nothing from here: no circle). Events are rebuilt from stdlib-parsed dicts with
coercion. A chunk that still does not decode (a flipped byte, a crashed run's cut-off tail) is
resynchronised at event boundaries (`resync`): only the events that do not decode are skipped,
counted with their byte offsets, so one bad byte costs one event, not the rest of the file.
"""
from __future__ import annotations

import json

import msgspec

from core.trace.kineto import (
    _EVENT_SEP,
    _UNQUOTED_NA,
    CORRUPT_MARK,
    EMPTY_ARGS,
    Args,
    Event,
    _decode_events,
    _fast_counter_args,
)
from core.trace.timens import ExactFloat, raw_of_value

_INT64 = 2**63


def _to_int(v):
    """An int64 or None (missing): strings of numbers are read, out-of-range values are missing."""
    if v is None or isinstance(v, bool):
        return None
    if not isinstance(v, int):
        try:
            v = int(float(v))
        except (TypeError, ValueError, OverflowError):
            return None
    return v if -_INT64 <= v < _INT64 else None


def _to_float(v):
    if v is None or isinstance(v, bool):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError, OverflowError):
        return None
    return f if f == f else None


def _args_from_dict(a: dict) -> Args:
    kw = {}
    for key, fld in (("External id", "external_id"), ("correlation", "correlation"), ("stream", "stream"),
                     ("device", "device"), ("bytes", "bytes"), ("registers per thread", "registers"),
                     ("Python id", "python_id"), ("Python parent id", "python_parent_id"),
                     ("Sequence number", "seq"), ("sort_index", "sort_index"),
                     ("Total Allocated", "total_allocated"), ("Total Reserved", "total_reserved"),
                     ("Bytes", "mem_bytes"), ("Device Id", "device_id"), ("Device Type", "device_type"),
                     ("Addr", "addr")):
        if key in a:
            kw[fld] = _to_int(a[key])
    if "est. achieved occupancy %" in a:
        kw["occupancy"] = _to_float(a["est. achieved occupancy %"])
    for key, fld in (("grid", "grid"), ("block", "block"), ("Input Dims", "input_dims"),
                     ("Input Strides", "input_strides"), ("Input type", "input_types")):
        if key in a:
            kw[fld] = msgspec.Raw(json.dumps(a[key], separators=(", ", ": ")).encode())
    for key, fld in (("Call stack", "call_stack"), ("name", "name"), ("labels", "labels")):
        if isinstance(a.get(key), str):
            kw[fld] = a[key]
    return Args(**kw)


def event_from_dict(d: dict) -> Event | None:
    if not isinstance(d, dict):
        return None
    pid = d.get("pid", 0)
    tid = d.get("tid", 0)
    if not isinstance(pid, (int, str)) or isinstance(pid, bool):
        pid = str(pid)
    if not isinstance(tid, (int, str)) or isinstance(tid, bool):
        tid = str(tid)
    fid = d.get("id")
    if fid is not None and not isinstance(fid, (int, str)):
        fid = str(fid)
    args = d.get("args")
    return Event(
        ph=str(d.get("ph", "")), cat=str(d.get("cat", "") or ""), name=str(d.get("name", "") or ""),
        pid=pid, tid=tid, ts=raw_of_value(d.get("ts")), dur=raw_of_value(d.get("dur")), id=fid,
        args=_args_from_dict(args) if isinstance(args, dict) else EMPTY_ARGS,
    )


def _counter_args(items: list) -> dict[int, dict]:
    return {i: d["args"] for i, d in enumerate(items)
            if isinstance(d, dict) and d.get("ph") == "C" and isinstance(d.get("args"), dict)}


def tolerant_decode(chunk: bytes) -> tuple[list[Event], dict[int, dict]]:
    """Decode `[ ...events... ]` with the stdlib after quoting N/A-like tokens; coerce each event."""
    text = _UNQUOTED_NA.sub(rb'\1"\2"', chunk)
    items = json.loads(text.decode("utf-8", errors="replace"), strict=False, parse_float=ExactFloat)  # exact ts
    if not isinstance(items, list):
        raise ValueError("traceEvents is not a list")
    items = [d for d in items if isinstance(d, dict)]
    return [event_from_dict(d) for d in items], _counter_args(items)


def _decode_range(chunk: bytes, a: int, b: int, tolerant: bool) -> tuple[list[Event], dict[int, dict]] | None:
    """Events of chunk[a:b) (whole events and their separators), typed or (`tolerant`, for a few
    events: the stdlib is slow) tolerant; None if neither reads it."""
    text = b"[" + chunk[a:b] + b"]"
    try:
        events = _decode_events(text)
        return events, _fast_counter_args(text, events)
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
        if not tolerant:
            return None
    try:
        return tolerant_decode(text)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


def resync(chunk: bytes, cut_tail: bool) -> tuple[list[Event], dict[int, dict], list[int], int | None]:
    """Every event of a `[...]` chunk that decodes, resynchronising at the next event boundary
    (Kineto's `},\n  {`) after a corrupt one.

    The chunk is split at separators; ranges that fail are halved until single events remain, so
    the good parts decode typed and fast. A failed event is retried joined with the following ones
    (a separator inside a string split it). Returns (events, counter args, chunk offsets of skipped
    events, offset of the cut-off tail or None): with `cut_tail` (the last chunk of a file) a failed
    final event is the tail a crashed run left unfinished, not a corrupt one."""
    body_start = chunk.find(b"{")
    body_end = chunk.rfind(b"]")
    if body_start < 0:
        return [], {}, [], None
    if body_end < body_start:
        body_end = len(chunk)
    starts, ends = [body_start], []
    for m in _EVENT_SEP.finditer(chunk, body_start, body_end):
        ends.append(m.start() + 1)
        starts.append(m.end() - 1)
    ends.append(body_end)
    n = len(starts)
    done: dict[int, tuple[list[Event], dict[int, dict]]] = {}
    failed: list[int] = []

    todo = [(0, n)]
    while todo:  # halve failing ranges (iteratively: no recursion limit on huge chunks)
        lo, hi = todo.pop()
        got = _decode_range(chunk, starts[lo], ends[hi - 1], hi - lo <= 64)
        if got is not None:
            done[lo] = got
        elif hi - lo == 1:
            failed.append(lo)
        else:
            mid = (lo + hi) // 2
            todo += [(mid, hi), (lo, mid)]
    skipped: list[int] = []
    tail_at = None
    failed.sort()
    k = 0
    while k < len(failed):
        i = failed[k]
        joined = 0
        for extra in (1, 2, 3):  # a separator inside a string split one event in pieces
            if k + extra < len(failed) and failed[k + extra] == i + extra:
                got = _decode_range(chunk, starts[i], ends[i + extra], True)
                if got is not None:
                    done[i] = got
                    joined = extra
                    break
        if joined:
            k += joined + 1
            continue
        if cut_tail and i == n - 1:
            tail_at = starts[i]
        else:
            skipped.append(starts[i])
        k += 1
    events: list[Event] = []
    cargs: dict[int, dict] = {}
    for i in sorted(done):
        evs, ca = done[i]
        base = len(events)
        cargs.update({j + base: v for j, v in ca.items()})
        events += evs
    return events, cargs, skipped, tail_at


def salvage_fast(chunk: bytes, warnings: list[str], cut_tail: bool = True) -> tuple[list[Event], dict[int, dict], list[str]]:
    """A chunk neither decoder read whole: every good event, resynchronised after corrupt ones."""
    events, cargs, skipped, tail_at = resync(chunk, cut_tail)
    warnings += [f"{CORRUPT_MARK}{at}" for at in skipped]
    if tail_at is not None:
        warnings.append(f"file is truncated (crashed run?): recovered {len(events):,} complete events of the last part")
    return events, cargs, warnings


def decode_events(chunk, last: bool, salvage: bool | None = None) -> tuple[list[Event], dict[int, dict] | None, list[str]]:
    """Decode one `[...]` chunk of events. Never raises on bad content: returns warnings instead.

    Returns (events, {index: args} of counter events or None = not decoded yet, warnings). Raises ValueError only when
    nothing at all could be read from a chunk that is not to be salvaged (`salvage`, default: the
    last chunk): the caller merges it with the next one (a bad cut). Salvaging keeps every event
    that decodes (resync); a failed final event of the `last` chunk is a cut-off tail.
    """
    salvage = last if salvage is None else salvage
    warnings: list[str] = []
    try:
        events = _decode_events(chunk)
        return events, None, warnings  # counter args: decoded on demand (events_to_columns)
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError) as exc:
        first_error = exc
    if last and "truncated" in str(first_error):
        return salvage_fast(bytes(chunk), warnings, cut_tail=True)
    try:
        events, cargs = tolerant_decode(bytes(chunk))
        warnings.append("non-standard JSON values (e.g. unquoted N/A) were read as strings")
        return events, cargs, warnings
    except (ValueError, UnicodeDecodeError, RecursionError):
        pass
    if not salvage:
        raise ValueError(str(first_error))
    return salvage_fast(bytes(chunk), warnings, cut_tail=last)
