"""Re-read one event, with every arg, from its trace file.

The model keeps the args that rules and panels use; the Details panel shows the rest (kernel shared
memory, blocks/warps per SM, Concrete Inputs, NCCL message sizes, ...) by reading back the single
selected event at the byte offset the C scanner recorded (`SliceTable.src_offset`). Plain files are
read at the offset; .gz / .xz are inflated as a stream up to it (memory stays bounded; the cost grows
with the offset: ~0.1 s per 100 MB of JSON before it)."""
from __future__ import annotations

import json
import lzma
import zlib
from pathlib import Path

from core.trace import gunzip, io, kineto

WINDOW = 1 << 20  # an event is far smaller; a huge one is cut and reported as unreadable
_BLOCK = 4 << 20


def read_event(path: str | Path, offset: int, window: int = WINDOW) -> dict | None:
    """The JSON object that starts at `offset` of the file's JSON text; None if it cannot be read
    there (file changed or gone, offset unknown, not an object)."""
    if offset < 0:
        return None
    try:
        raw = _read_window(Path(path), offset, window)
    except (OSError, EOFError, zlib.error, lzma.LZMAError, io._IsalError, ValueError):  # GzipError too
        return None
    if not raw.startswith(b"{"):
        return None
    dec = json.JSONDecoder()
    # as the loader reads them (kineto / tolerant.py): unquoted N/A, NaN, Infinity become strings
    for candidate in (raw, kineto._UNQUOTED_NA.sub(rb'\1"\2"', raw)):
        try:
            obj, _ = dec.raw_decode(candidate.decode("utf-8", "replace"))
        except ValueError:
            continue
        return obj if isinstance(obj, dict) else None
    return None


def _read_window(path: Path, offset: int, window: int) -> bytes:
    with open(path, "rb") as fh:
        magic = fh.read(6)
        fh.seek(0)
        if magic.startswith(b"\x1f\x8b"):
            return _window(gunzip.Members(fh, _BLOCK, _BLOCK), offset, window)  # any header length
        if magic.startswith(b"\xfd7zXZ"):
            return _window(_members(fh, lzma.LZMADecompressor), offset, window)
        fh.seek(offset)
        return fh.read(window)


def _window(blocks, offset: int, window: int) -> bytes:
    """Bytes [offset, offset + window) of the decompressed stream."""
    pos = 0
    out = bytearray()
    for got in blocks:
        end = pos + len(got)
        if end > offset:
            out += got[max(0, offset - pos):]
            if len(out) >= window:
                break
        pos = end
    return bytes(out[:window])


def _members(fh, make):
    """Decompressed blocks of at most _BLOCK bytes, over every gzip member / xz stream in the file
    (the loader reads multi-member files whole, so offsets run on across members)."""
    carry = b""
    while True:
        d = make()
        is_lzma = isinstance(d, lzma.LZMADecompressor)
        while not d.eof:
            if is_lzma:
                data = b""
                if d.needs_input:
                    data, carry = carry or fh.read(_BLOCK), b""
                    if not data:
                        return
            else:
                data, carry = d.unconsumed_tail or carry or fh.read(_BLOCK), b""
                if not data:
                    return
            got = d.decompress(data, _BLOCK)
            if got:
                yield got
        carry = d.unused_data or fh.read(_BLOCK)
        if not carry.strip(b"\0"):  # end of file (or trailing zero padding)
            return
