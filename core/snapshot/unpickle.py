"""A pickle reader that never executes code: every class/function lookup is refused.

`torch.cuda.memory._dump_snapshot` writes only plain containers (dict, list, tuple, str, int, float, bool,
None), so a snapshot needs no `find_class` at all. Refusing it blocks GLOBAL / STACK_GLOBAL / INST / EXT*
and, with no callable ever on the stack, REDUCE / NEWOBJ / BUILD too; persistent ids are refused as well.
The C unpickler is iterative (no recursion on nesting). Everything it may cost is bounded: the file (a
regular file only; decompressed size capped absolutely, from available memory, and by a ratio to the
compressed size), then bounds.py walks the opcodes once (objects, memo, depth, integer widths, refused
opcodes) before the C unpickler runs; what shared references may cost the reader is bounded where it
reads (load.py).
"""
from __future__ import annotations

import gzip
import io
import os
import pickle
import zlib
from pathlib import Path

from core.snapshot.bounds import SnapshotBoundError, scan_opcodes
from core.snapshot.columns import no_gc
from core.trace.model import TraceParseError
from core.trace.safefile import open_regular

_GZIP_MAGIC = b"\x1f\x8b"
# a snapshot with the default 100k-entry trace ring and deep stacks pickles to a few hundred MiB;
# 4 GiB decompressed is far beyond any real one and keeps a gzip bomb from exhausting memory
MAX_PICKLE_BYTES = 4 << 30
MAX_GZIP_RATIO = 200  # real snapshots compress ~16x; a run of zeros ~1000x
MIN_GZIP_ALLOWANCE = 64 << 20  # small files may inflate to this whatever the ratio
_CHUNK = 1 << 20


def pickle_cap_bytes() -> int:
    """Decompressed bytes allowed: MAX_PICKLE_BYTES, or a quarter of the memory available now (the
    unpickled objects take several times the pickle's size)."""
    available = _available_memory()
    return MAX_PICKLE_BYTES if available is None else max(64 << 20, min(MAX_PICKLE_BYTES, available // 4))


def _available_memory() -> int | None:
    try:
        import psutil
        return int(psutil.virtual_memory().available)
    except Exception:  # noqa: BLE001 - psutil missing or unsupported here: the absolute cap applies
        return None


class ForbiddenPickleGlobal(pickle.UnpicklingError):
    """The pickle asked for a class or function (`module.name`); snapshots never do."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name
        super().__init__(f"pickle references {module}.{name}; refused (memory snapshots hold only plain data)")


class _PlainDataUnpickler(pickle.Unpickler):
    def find_class(self, module, name):  # noqa: D401 - pickle API
        raise ForbiddenPickleGlobal(str(module), str(name))

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("pickle uses persistent ids; refused")


def safe_loads(data, path: str | Path = "<bytes>"):
    """Unpickle plain data only, within bounds.py's bounds. Any failure -> TraceParseError(path, one line)."""
    if len(data) > MAX_PICKLE_BYTES:
        raise TraceParseError(path, "pickle is implausibly large for a memory snapshot")
    try:
        scan_opcodes(data)
        with no_gc():  # the collector rescanned millions of new containers: 2.7x the time
            obj = _PlainDataUnpickler(io.BytesIO(data) if not isinstance(data, (bytes, bytearray)) else
                                      _Reader(data)).load()
    except SnapshotBoundError as exc:
        raise TraceParseError(path, str(exc)) from None
    except ForbiddenPickleGlobal as exc:
        raise TraceParseError(path, str(exc)) from None
    except EOFError:
        raise TraceParseError(path, "pickle is truncated") from None
    except MemoryError:
        raise TraceParseError(path, "out of memory while reading the pickle") from None
    except RecursionError:
        raise TraceParseError(path, "pickle nests too deeply") from None
    except Exception as exc:  # UnpicklingError, ValueError, struct/index errors on corrupt opcodes
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if "truncated" in msg.lower() or "ran out of input" in msg.lower():
            raise TraceParseError(path, "pickle is truncated") from None
        raise TraceParseError(path, f"not a valid pickle ({msg[:200]})") from None
    return obj


class _Reader(io.RawIOBase):
    """A read-only file over `data` without a copy (BytesIO(bytearray) would copy it)."""

    def __init__(self, data) -> None:
        self._data = data  # bytes or bytearray
        self._view = memoryview(data).cast("B")
        self._pos = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        n = min(len(buf), len(self._view) - self._pos)
        buf[:n] = self._view[self._pos:self._pos + n]
        self._pos += n
        return n

    def peek(self, size=0) -> bytes:
        """The C unpickler prefetches through peek (one call per 64 KiB); without it, a pickle without
        FRAME opcodes (protocols 0-3, or hand-made) costs one Python call per opcode (6 s per 1 M)."""
        return bytes(self._view[self._pos:self._pos + max(int(size or 0), 1 << 16)])

    def readline(self, size=-1) -> bytes:  # text opcodes (protocol 0) only
        end = len(self._view) if size is None or size < 0 else min(len(self._view), self._pos + size)
        found = self._data.find(b"\n", self._pos, end)
        stop = end if found < 0 else found + 1
        out = bytes(self._view[self._pos:stop])
        self._pos = stop
        return out


def read_pickle_bytes(path: Path) -> bytearray:
    """The pickle's bytes, gunzipped when the file is gzip; bounded by pickle_cap_bytes() and, for gzip,
    by MAX_GZIP_RATIO. Only a regular file is opened (a FIFO never blocks)."""
    cap = pickle_cap_bytes()
    try:
        with open_regular(path) as fh:
            size = os.fstat(fh.fileno()).st_size
            if size == 0:
                raise TraceParseError(path, "file is empty")
            head = fh.read(2)
            fh.seek(0)
            if head != _GZIP_MAGIC:
                if size > cap:
                    raise TraceParseError(path, f"file is implausibly large for a memory snapshot "
                                                f"({size >> 20} MiB; at most {cap >> 20} MiB with the memory free now)")
                out = bytearray(size)
                got = fh.readinto(out)
                del out[got:]
                return out
            return _gunzip_bounded(fh, path, min(cap, max(MIN_GZIP_ALLOWANCE, size * MAX_GZIP_RATIO)))
    except OSError as exc:
        raise TraceParseError(path, f"cannot read file ({exc.strerror or exc})") from None


def _gunzip_bounded(fh, path: Path, limit: int) -> bytearray:
    out = bytearray()
    try:
        with gzip.GzipFile(fileobj=fh, mode="rb") as gz:
            while piece := gz.read(_CHUNK):
                if len(out) + len(piece) > limit:
                    raise TraceParseError(path, f"gzip inflates past {limit >> 20} MiB: implausibly large "
                                                "for a memory snapshot of this file size")
                out += piece
    except EOFError:
        raise TraceParseError(path, "gzip file is truncated") from None
    except (OSError, zlib.error):
        raise TraceParseError(path, "corrupt gzip file") from None
    return out
