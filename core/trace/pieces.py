"""Worker entry: one chunk of events -> ChunkColumns, decoded in cache-sized pieces.

Every decoded event is a few Python objects (~600 bytes with its args), and the column passes of
core.trace.columns touch each of them a dozen times. A whole chunk (4-32 MB of JSON, 40-200 MB of
objects) does not fit the CPU cache, so each pass streamed it from memory again. Decoding and
extracting ~1 MB of JSON at a time keeps the objects cache-resident, and each piece's objects
reuse the memory the previous piece just freed (measured on gpu_gpt_big: column extraction -25 %,
decode -10 %). The pieces share one chunk-local string table and are concatenated into one
ChunkColumns, so nothing downstream changes. Anything irregular in a piece (a decode error: bad cut,
non-standard values, a truncated tail) sends the whole chunk down the ordinary path, which
handles it exactly as before.
"""
from __future__ import annotations

import msgspec
import numpy as np

from core.trace import kineto
from core.trace.columns import ChunkColumns, _Strings, events_to_columns, scan_columns
from core.trace.kineto import _EVENT_SEP, _decode_events
from core.trace.tolerant import decode_events

PIECE_BYTES = 1 << 20  # ~3k events: a piece's objects stay in L2/L3 (1 MB L2 per core here)

_scratch: list[bytearray] = []  # `[` + piece + `]` (the chunk itself may sit in kineto's scratch)


def decode_chunk_columns(chunk, last: bool, pin: list | None = None, salvage: bool | None = None) -> ChunkColumns:
    """Decode a `[...]` chunk and return its columns. ValueError: bad cut (the caller merges on).

    `pin` (a list) keeps every 256th event alive afterwards: that keeps Python's allocator arenas
    from being returned to the OS between chunks, so the next chunk reuses touched memory (a
    quarter less CPU per chunk here, where fresh pages are expensive).
    """
    out = scan_columns(chunk, 0, len(chunk), file_offsets=False)  # a copy: offsets are not the file's
    if out is not None:
        return out
    if len(chunk) > 2 * PIECE_BYTES:
        out = _in_pieces(chunk, piece_bounds(chunk, 1, len(chunk) - 1), pin)
        if out is not None:
            return out
    return _whole(chunk, last, pin, salvage)


def decode_range(buf, a: int, b: int, last: bool, pin: list | None = None) -> ChunkColumns:
    """Like decode_chunk_columns(kineto.chunk_view(buf, a, b)), without copying the whole chunk
    first when it is decoded in pieces."""
    out = scan_columns(buf, a, b)
    if out is not None:
        return out
    if b - a > 2 * PIECE_BYTES:
        out = _in_pieces(buf, piece_bounds(buf, a, b), pin)
        if out is not None:
            return out
    return _whole(kineto.chunk_view(buf, a, b), last, pin)


def _whole(chunk, last: bool, pin: list | None, salvage: bool | None = None) -> ChunkColumns:
    events, counter_args, warnings = decode_events(chunk, last, salvage)
    out = events_to_columns(events, counter_args, warnings, chunk)
    if pin is not None:
        pin[:] = events[::256]
    return out


def piece_bounds(buf, a: int, end: int, piece_bytes: int | None = None) -> list[tuple[int, int]]:
    """[x, y) ranges covering the events in buf[a:end) (a at a '{', end just past a '}'), cut at
    event separators, each ~piece_bytes long."""
    piece_bytes = piece_bytes or PIECE_BYTES
    bounds = []
    while True:
        target = a + piece_bytes
        m = _EVENT_SEP.search(buf, target, end) if target < end - piece_bytes // 2 else None
        if m is None:
            bounds.append((a, end))
            return bounds
        bounds.append((a, m.start() + 1))
        a = m.end() - 1


def _piece_view(buf, a: int, b: int) -> memoryview:
    n = b - a + 2
    if not _scratch or len(_scratch[0]) < n:
        _scratch[:] = [bytearray(max(n, 2 * PIECE_BYTES))]
    s = _scratch[0]
    s[0] = 0x5B
    s[1:n - 1] = memoryview(buf)[a:b]
    s[n - 1] = 0x5D
    return memoryview(s)[:n]


def _in_pieces(buf, bounds: list[tuple[int, int]], pin: list | None) -> ChunkColumns | None:
    st = _Strings()
    parts = []
    for a, b in bounds:
        text = _piece_view(buf, a, b)
        try:
            events = _decode_events(text)
        except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
            return None
        parts.append(events_to_columns(events, None, [], text, st))
        if pin is not None:
            pin[:] = events[::256]
        del events
    return concat_parts(parts, st)


def concat_parts(parts: list[ChunkColumns], st: _Strings) -> ChunkColumns:
    """One ChunkColumns of consecutive pieces that share the string table `st`."""
    def cat(table: str) -> dict[str, np.ndarray]:
        cols = [getattr(p, table) for p in parts]
        return {k: np.concatenate([c[k] for c in cols]) for k in cols[0]}

    offsets = np.cumsum([0] + [len(p.rows["ts"]) for p in parts[:-1]]).tolist()
    args = {k: (np.concatenate([p.args[k][0] + off for p, off in zip(parts, offsets)]),
                np.concatenate([p.args[k][1] for p in parts])) for k in parts[0].args}
    return ChunkColumns(strings=st.strs, rows=cat("rows"), args=args, instants=cat("instants"),
                        memory=cat("memory"), flows=cat("flows"), counters=cat("counters"),
                        metadata=[m for p in parts for m in p.metadata],
                        n_events=sum(p.n_events for p in parts), skipped=sum(p.skipped for p in parts),
                        warnings=[w for p in parts for w in p.warnings])
