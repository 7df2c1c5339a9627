"""Kineto / Chrome-trace JSON -> raw event columns.

The cost of loading a trace is building Python objects, not reading JSON (see docs/architecture.md).
So: msgspec decodes each event into a small typed Struct holding only the fields we use (unknown
keys are skipped in C), `args` into one typed Struct (nested lists such as "Input Dims" stay raw
JSON text, interned as strings; `ts` / `dur` stay raw JSON text too, read as exact int ns a column at a time by
core.trace.timens), and the `traceEvents` array is cut into chunks at event
boundaries so that chunks decode independently (in worker processes for big files) and a broken
chunk (unquoted N/A, a truncated tail) costs only that chunk a slower, tolerant path.
"""
from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass

import msgspec

from core.trace.model import NONE
from core.trace.safefile import bracket_depths
from core.trace.timens import MISSING_RAW

log = logging.getLogger(__name__)

CHUNK_BYTES = 32 << 20
# Between two events Kineto writes "},\n  {"; the regex also accepts compact "},{" files.
_EVENT_SEP = re.compile(rb"\}\s*,\s*\{")
_UNQUOTED_NA = re.compile(rb'(:\s*|\[\s*|,\s*)(N/A|NaN|-?Infinity)(?=\s*[,}\]])')


# a skipped corrupt event, + its offset (in the chunk; parallel.collect makes it a file offset):
# build_model folds every mark into one warning (how many, where)
CORRUPT_MARK = "\x00corrupt-event-at:"

_EMPTY_RAW = msgspec.Raw(b"")
_NAN = float("nan")


class Args(msgspec.Struct, frozen=True, gc=False, rename={
    "external_id": "External id", "correlation": "correlation", "stream": "stream", "device": "device",
    "bytes": "bytes", "grid": "grid", "block": "block", "registers": "registers per thread",
    "occupancy": "est. achieved occupancy %", "input_dims": "Input Dims", "input_strides": "Input Strides",
    "input_types": "Input type", "call_stack": "Call stack", "python_id": "Python id",
    "python_parent_id": "Python parent id", "seq": "Sequence number", "name": "name",
    "sort_index": "sort_index", "labels": "labels", "total_allocated": "Total Allocated",
    "total_reserved": "Total Reserved", "mem_bytes": "Bytes", "device_id": "Device Id",
    "device_type": "Device Type", "addr": "Addr",
}):
    """The args the model keeps. Missing values are sentinels (NONE / 0 / NaN / empty), so that
    columns come out with one C-level pass (`np.fromiter(map(attrgetter(...)))`); a JSON null
    gives None, which the column code maps to the sentinel on a slower path."""

    external_id: int | None = NONE
    correlation: int | None = NONE
    stream: int | None = NONE
    device: int | None = NONE
    bytes: int | None = NONE
    grid: msgspec.Raw = _EMPTY_RAW
    block: msgspec.Raw = _EMPTY_RAW
    registers: int | None = NONE
    occupancy: float | None = _NAN
    input_dims: msgspec.Raw = _EMPTY_RAW
    input_strides: msgspec.Raw = _EMPTY_RAW
    input_types: msgspec.Raw = _EMPTY_RAW
    call_stack: str | None = ""
    python_id: int | None = NONE
    python_parent_id: int | None = NONE
    seq: int | None = NONE
    name: str | None = ""
    sort_index: int | None = None
    labels: str | None = ""
    total_allocated: int | None = 0
    total_reserved: int | None = 0
    mem_bytes: int | None = 0
    device_id: int | None = NONE
    device_type: int | None = NONE
    addr: int | None = 0


EMPTY_ARGS = Args()


class Event(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: msgspec.Raw = MISSING_RAW  # µs as written (exact int ns: timens.ns_col); empty = missing
    dur: msgspec.Raw = MISSING_RAW
    id: int | str | None = None
    args: Args = EMPTY_ARGS


class CounterEvent(msgspec.Struct, gc=False):
    """Second, cheap pass over chunks holding ph "C" events: their args are free-form series."""

    ph: str = ""
    args: msgspec.Raw = _EMPTY_RAW


_decode_events = msgspec.json.Decoder(list[Event]).decode
_decode_counter_events = msgspec.json.Decoder(list[CounterEvent]).decode


def _fast_counter_args(chunk, events: list[Event] | None = None) -> dict[int, dict]:
    """{event index: args dict} of the chunk's ph "C" events (a second, cheap decode pass)."""
    if events is not None and not any(e.ph == "C" for e in events):
        return {}
    out = {}
    for i, c in enumerate(_decode_counter_events(chunk)):
        if c.ph == "C" and c.args:
            try:
                a = msgspec.json.decode(c.args)
            except (msgspec.DecodeError, RecursionError):
                continue
            if isinstance(a, dict):
                out[i] = a
    return out


# ---------------------------------------------------------------------------------------------
# document structure: header keys, the traceEvents array, trailing keys


class NotATrace(ValueError):
    """The document is JSON but not a trace; the message is a one-line reason."""


@dataclass
class Document:
    meta: dict  # top-level keys other than traceEvents
    events_start: int  # offset of the '[' of traceEvents
    events_end: int  # offset just past its ']' (or len(buf) when truncated)
    complete: bool  # False when the closing ']' was not found (truncated)


_TE_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_EVENTS_CLOSE = re.compile(rb'\}\s*\](?=\s*,\s*")')


def locate(buf) -> Document | None:
    """Find the traceEvents array and decode the other top-level keys. None if not a trace."""
    mv = memoryview(buf)
    head = bytes(mv[: 1 << 16]).lstrip()
    if head.startswith(b"["):  # bare Chrome-trace array of events
        start = len(buf) - len(bytes(mv).lstrip()) if len(buf) < (1 << 16) else bytes(mv[:4096]).find(b"[")
        end = _rstrip_len(mv)
        complete = end > 0 and bytes(mv[end - 1:end]) == b"]"
        return Document({}, start, end if complete else len(buf), complete)
    fast = _locate_fast(mv)
    if fast is not None:
        return fast
    try:
        top = msgspec.json.decode(mv, type=dict[str, msgspec.Raw])
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        top = None
    if top is not None:
        raw = top.pop("traceEvents", None)
        if raw is None:
            return None
        if bytes(memoryview(raw)[:1]) != b"[":
            raise NotATrace("traceEvents is not a list of events")
        meta = {}
        for k, v in top.items():
            try:
                meta[k] = msgspec.json.decode(v)
            except (msgspec.DecodeError, RecursionError):
                meta[k] = None
        # locate the Raw inside buf: msgspec.Raw keeps a view; find it by searching the key
        m = _TE_KEY.search(mv)
        start = m.end() - 1
        end = start + len(raw)
        return Document(meta, start, end, True)
    # invalid somewhere: find the key textually, parse header and tail separately
    m = _TE_KEY.search(mv)
    if m is None:
        return None
    start = m.end() - 1
    meta = _loose_keys(bytes(mv[: m.start()]) + b'"_": 0}')
    tail_at = _find_tail(mv, start)
    if tail_at is None:
        return Document(meta, start, len(buf), False)
    meta.update(_loose_keys(b'{"_": 0' + bytes(mv[tail_at:])))
    meta.pop("_", None)
    return Document(meta, start, tail_at, True)


def _locate_fast(mv) -> Document | None:
    """Kineto's layout: header keys, `"traceEvents": [`, events, `]`, a simple tail
    (`"traceName": "..."}`). Found textually near both ends, without parsing the events; None when
    the file does not look like that (the caller then parses the whole document)."""
    m = _TE_KEY.search(mv, 0, min(len(mv), 4 << 20))
    if m is None:
        return None
    meta = _header_json(bytes(mv[: m.start()]) + b'"_": 0}')
    if not isinstance(meta, dict):
        return None
    meta.pop("_", None)
    n = _rstrip_len(mv)
    window_start = max(m.end(), n - (1 << 16))
    window = bytes(mv[window_start:n])
    close = window.rfind(b"]")
    if close < 0 or b"[" in window[close:]:
        return None
    before = window[:close].rstrip()
    if not before.endswith((b"}", b"[")) and window_start + len(before) != m.end():
        return None
    try:
        tail = json.loads(b'{"_": 0' + window[close + 1:])
    except (ValueError, RecursionError):
        return None
    if not isinstance(tail, dict):
        return None
    tail.pop("_", None)
    meta.update(tail)
    return Document(meta, m.end() - 1, window_start + close + 1, True)


def _header_json(text: bytes):
    """The header keys; None when they do not decode. Kineto writes metadata values with every backslash
    turned into '/' (sanitizeStrForJSON), so a value that held an escaped quote has `/"` in it: when the
    header does not decode as written it is read once more with those put back (ptprof's own metadata
    before 2026-12 had them; the reader of that key sees a `"` where the writer had one)."""
    for attempt in (text, text.replace(b'/"', b'\\"') if b'/"' in text else None):
        if attempt is None:
            return None
        try:
            return json.loads(attempt)
        except (ValueError, RecursionError):
            continue
    return None


_PAD = b" \t\r\n\x00"
_PAD_BLOCK = 1 << 20


def _rstrip_len(mv) -> int:
    """Length of `mv` without trailing whitespace / NUL padding: a page-aligned block at a time from the end,
    NUL blocks by a SIMD count, others by bytes.rstrip (a byte-by-byte loop took ~0.34 CPU s per MB; a 2 GB
    NUL-padded file never answered). Blocks of a file mapping that are all padding are dropped from memory
    again (clean file pages: they were only read)."""
    import mmap

    import numpy as np

    from core.trace.io import FileMap
    drop = mv.obj.madvise if isinstance(mv.obj, FileMap) and mv.nbytes == len(mv.obj) and \
        hasattr(mmap, "MADV_DONTNEED") else None
    n = len(mv)
    while n > 0:
        a = max(0, (n - _PAD_BLOCK) & -mmap.PAGESIZE)
        block = mv[a:n]
        if np.count_nonzero(np.frombuffer(block, np.uint8)):
            kept = len(bytes(block).rstrip(_PAD))
            if kept:
                return a + kept
        if drop is not None:
            drop(mmap.MADV_DONTNEED, a, n - a)
        n = a
    return 0


def _find_tail(mv, start: int) -> int | None:
    """Offset just past the closing ']' of traceEvents, when the file is complete."""
    n = _rstrip_len(mv)
    if n == 0 or mv[n - 1] != ord("}"):
        return None
    window = bytes(mv[max(start, n - (1 << 20)): n])
    base = max(start, n - (1 << 20))
    pos = len(window)
    for _ in range(64):
        pos = window.rfind(b"]", 0, pos)
        if pos < 0:
            return None
        if not window[max(0, pos - 256):pos].rstrip().endswith((b"}", b"[")):  # the array ends after an event
            continue
        tail = b'{"_": 0' + window[pos + 1:]
        try:
            json.loads(tail)
            return base + pos + 1
        except (ValueError, RecursionError):
            continue
    # a tail that does not parse (nested too deep, corrupt): the last `}` `]` `,` `"key"` closes the events
    last = None
    for m in _EVENTS_CLOSE.finditer(window):
        last = m
    return None if last is None else base + last.end()


def _loose_keys(text: bytes) -> dict:
    text = text.strip()
    if not text.startswith(b"{"):
        return {}
    text = _UNQUOTED_NA.sub(rb'\1"\2"', text)
    try:
        d = json.loads(text, strict=False)
    except RecursionError:
        d = _shallow_keys(text.decode("utf-8", errors="replace"))
    except ValueError:
        return {}
    if not isinstance(d, dict):
        return {}
    d.pop("_", None)
    return d


def _shallow_keys(text: str) -> dict:
    """The top-level keys of an object one by one; a value nested too deep to decode is left out
    (skipped by bracket counting), so one hostile key does not cost the whole header."""
    dec = json.JSONDecoder(strict=False)
    out: dict = {}
    pos, n = 1, len(text)
    while pos < n:
        while pos < n and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= n or text[pos] == "}":
            break
        try:
            key, pos = dec.raw_decode(text, pos)
            while pos < n and text[pos] in " \t\r\n:":
                pos += 1
            value, pos = dec.raw_decode(text, pos)
            out[key] = value
        except RecursionError:
            pos = _skip_nested(text, pos)
        except ValueError:
            break
    return out


def _skip_nested(text: str, pos: int) -> int:
    """Offset just past the nested value that starts at `pos` (end of text when it never closes)."""
    for k, depth in bracket_depths(text, pos):
        if depth == 0:
            return k + 1
    return len(text)


def chunk_bounds(buf, doc: Document, chunk_bytes: int = CHUNK_BYTES) -> list[tuple[int, int]]:
    """Cut the events array into [a, b) ranges, each starting at '{' and ending after '}'."""
    mv = memoryview(buf)
    a = doc.events_start + 1
    end = doc.events_end - 1 if doc.complete else doc.events_end
    bounds = []
    while a < end:
        target = a + chunk_bytes
        if target >= end:
            bounds.append((a, end))
            break
        m = _EVENT_SEP.search(mv, target, min(end, target + (8 << 20)))
        if m is None:
            bounds.append((a, end))
            break
        bounds.append((a, m.start() + 1))
        a = m.end() - 1
    return bounds


def chunk_text(buf, a: int, b: int) -> bytes:
    """The bytes of `[event, event, ...]` for range [a, b)."""
    body = bytes(memoryview(buf)[a:b]).strip().strip(b",")
    return b"[" + body + b"]"


_scratch: list[bytearray] = []  # one reused buffer per process: fresh pages cost ~8 µs each on this VM


def chunk_view(buf, a: int, b: int) -> memoryview:
    """`[` + buf[a:b] + `]` in a reused scratch buffer (valid until the next call)."""
    n = b - a + 2
    if not _scratch or len(_scratch[0]) < n:
        _scratch[:] = [bytearray(max(n, 1 << 20))]
    s = _scratch[0]
    s[0] = 0x5B
    s[1:n - 1] = memoryview(buf)[a:b]
    s[n - 1] = 0x5D
    return memoryview(s)[:n]
