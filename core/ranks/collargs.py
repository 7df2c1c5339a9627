"""Process group and sequence number of a rank's collectives, read back from its trace file.

The model keeps no NCCL metadata; Kineto writes it on the collective's kernel ("Process Group Name", "Seq"
in newer torch, with "Collective name", "In msg nelems", ...). The rows' `src_offset` (the C scanner's byte
offset of each event in the file's JSON) lets one pass re-read exactly those events: a plain file is read
at the offsets, a .gz / .xz is inflated once as a stream up to the last of them (memory stays bounded).
Anything unreadable leaves those operations unkeyed ("" / -1), and matching falls back to name + order.
"""
from __future__ import annotations

import json
import lzma
import zlib
from pathlib import Path

import numpy as np

from core.trace import io, rawevent

EVENT_MAX = 1 << 16  # one collective event is well under this


def coll_keys(path: str | Path, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(process group name per offset, "" unknown; sequence number, -1 unknown)."""
    n = len(offsets)
    pg = np.full(n, "", dtype=object)
    seq = np.full(n, -1, dtype=np.int64)
    ok = np.flatnonzero(np.asarray(offsets) >= 0)
    if not len(ok):
        return pg.astype(str), seq
    order = ok[np.argsort(np.asarray(offsets)[ok], kind="stable")]
    try:
        for i, obj in zip(order.tolist(), _events(Path(path), [int(offsets[i]) for i in order])):
            args = obj.get("args") if isinstance(obj, dict) else None
            if not isinstance(args, dict):
                continue
            g, q = args.get("Process Group Name"), args.get("Seq")
            if isinstance(q, (int, float, str)) and str(q).lstrip("-").isdigit() and len(str(q)) <= 18:
                seq[i] = int(q)
                pg[i] = str(g) if isinstance(g, (str, int)) else ""
    except (OSError, EOFError, zlib.error, lzma.LZMAError, io._IsalError, ValueError):
        pass
    return pg.astype(str), seq


def _events(path: Path, offsets: list[int]):
    """The JSON object at each (sorted) offset of the file's JSON text; None where none decodes."""
    with open(path, "rb") as fh:
        magic = fh.read(6)
        fh.seek(0)
        if magic.startswith(b"\x1f\x8b"):
            blocks = rawevent._members(fh, lambda: io._zlib.decompressobj(wbits=31))
        elif magic.startswith(b"\xfd7zXZ"):
            blocks = rawevent._members(fh, lzma.LZMADecompressor)
        else:
            for off in offsets:
                fh.seek(off)
                yield _decode(fh.read(EVENT_MAX))
            return
        buf = bytearray()
        start = 0  # stream offset of buf[0]
        it = iter(blocks)
        done = False
        for off in offsets:
            while not done and start + len(buf) < off + EVENT_MAX:
                try:
                    buf += next(it)
                except StopIteration:
                    done = True
            if off < start:
                yield None
                continue
            del buf[:off - start]
            start = off
            yield _decode(bytes(buf[:EVENT_MAX]))


def _decode(raw: bytes):
    if not raw.startswith(b"{"):
        return None
    try:
        obj, _ = json.JSONDecoder().raw_decode(raw.decode("utf-8", "replace"))
    except ValueError:
        return None
    return obj
