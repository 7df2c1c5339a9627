"""The slow, tolerant decoding paths: non-standard JSON (unquoted N/A, NaN) and truncated chunks.

Used only for chunks the typed decoder refused. Events are rebuilt from stdlib-parsed dicts with
coercion; a truncated last chunk is decoded typed up to its last event separator and walked event by
event (json.raw_decode) after it, so a crashed run's file keeps every complete event.
"""
from __future__ import annotations

import json

import msgspec

from core.trace.kineto import (
    _EVENT_SEP, _NAN, _UNQUOTED_NA, EMPTY_ARGS, Args, Event, _decode_events, _fast_counter_args,
)



def _to_int(v):
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    try:
        return int(float(v))
    except (TypeError, ValueError, OverflowError):
        return None


def _to_float(v):
    if v is None or isinstance(v, bool):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
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
    ts = _to_float(d.get("ts"))
    dur = _to_float(d.get("dur"))
    return Event(
        ph=str(d.get("ph", "")), cat=str(d.get("cat", "") or ""), name=str(d.get("name", "") or ""),
        pid=pid, tid=tid, ts=_NAN if ts is None else ts, dur=_NAN if dur is None else dur, id=fid,
        args=_args_from_dict(args) if isinstance(args, dict) else EMPTY_ARGS,
    )


def _counter_args(items: list) -> dict[int, dict]:
    return {i: d["args"] for i, d in enumerate(items)
            if isinstance(d, dict) and d.get("ph") == "C" and isinstance(d.get("args"), dict)}


def tolerant_decode(chunk: bytes) -> tuple[list[Event], dict[int, dict]]:
    """Decode `[ ...events... ]` with the stdlib after quoting N/A-like tokens; coerce each event."""
    text = _UNQUOTED_NA.sub(rb'\1"\2"', chunk)
    items = json.loads(text.decode("utf-8", errors="replace"), strict=False)
    if not isinstance(items, list):
        raise ValueError("traceEvents is not a list")
    items = [d for d in items if isinstance(d, dict)]
    return [event_from_dict(d) for d in items], _counter_args(items)


def _salvage(chunk: bytes) -> tuple[list[Event], dict[int, dict], bool]:
    """Recover every complete event from a chunk whose end is cut off (a crashed run's file).

    Returns (events, counter args, truncated). Walks the chunk event by event with raw_decode.
    """
    text = _UNQUOTED_NA.sub(rb'\1"\2"', chunk).decode("utf-8", errors="replace")
    dec = json.JSONDecoder(strict=False)
    pos = text.find("[") + 1
    items: list[dict] = []
    n = len(text)
    truncated = True
    while True:
        while pos < n and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= n or text[pos] == "]":
            truncated = pos >= n
            break
        try:
            obj, pos = dec.raw_decode(text, pos)
        except (json.JSONDecodeError, RecursionError):
            break
        if isinstance(obj, dict):
            items.append(obj)
    return [event_from_dict(d) for d in items], _counter_args(items), truncated


def salvage_fast(chunk: bytes, warnings: list[str]) -> tuple[list[Event], dict[int, dict], list[str]]:
    """A truncated last chunk: typed decode up to the last event separator, salvage the rest."""
    cut = None
    for m in _EVENT_SEP.finditer(chunk, max(0, len(chunk) - (4 << 20))):
        cut = m
    head: list[Event] = []
    head_cargs: dict[int, dict] = {}
    rest = chunk
    if cut is not None:
        try:
            head = _decode_events(chunk[:cut.start() + 1] + b"]")
            head_cargs = _fast_counter_args(chunk[:cut.start() + 1] + b"]", head)
            rest = b"[" + chunk[cut.end() - 1:]
        except (msgspec.ValidationError, msgspec.DecodeError):
            head = []
    events, cargs, truncated = _salvage(rest)
    if head:
        cargs = {**head_cargs, **{i + len(head): v for i, v in cargs.items()}}
        events = head + events
    if truncated:
        warnings.append(f"file is truncated (crashed run?): recovered {len(events):,} complete events of the last part")
    return events, cargs, warnings


