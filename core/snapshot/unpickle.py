"""A pickle reader that never executes code: every class/function lookup is refused.

`torch.cuda.memory._dump_snapshot` writes only plain containers (dict, list, tuple, str, int, float, bool,
None), so a snapshot needs no `find_class` at all. Refusing it blocks GLOBAL / STACK_GLOBAL / INST / EXT*
and, with no callable ever on the stack, REDUCE / NEWOBJ / BUILD too; persistent ids are refused as well.
The C unpickler is iterative (no recursion on nesting); sizes are bounded before unpickling.
"""
from __future__ import annotations

import gzip
import io
import pickle
import zlib
from pathlib import Path

from core.trace.model import TraceParseError

_GZIP_MAGIC = b"\x1f\x8b"
# a snapshot with the default 100k-entry trace ring and deep stacks pickles to a few hundred MiB;
# 4 GiB decompressed is far beyond any real one and keeps a gzip bomb from exhausting memory
MAX_PICKLE_BYTES = 4 << 30
_CHUNK = 1 << 20


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


def safe_loads(data: bytes | memoryview, path: str | Path = "<bytes>"):
    """Unpickle plain data only. Any failure -> TraceParseError(path, one-line reason)."""
    if len(data) > MAX_PICKLE_BYTES:
        raise TraceParseError(path, "pickle is implausibly large for a memory snapshot")
    buf = io.BytesIO(data)
    try:
        obj = _PlainDataUnpickler(buf).load()
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
        raise TraceParseError(path, f"not a valid pickle ({msg})") from None
    return obj


def read_pickle_bytes(path: Path) -> bytes:
    """The pickle's bytes, gunzipped when the file is gzip; bounded by MAX_PICKLE_BYTES."""
    try:
        size = path.stat().st_size
        if size == 0:
            raise TraceParseError(path, "file is empty")
        with open(path, "rb") as fh:
            head = fh.read(2)
            fh.seek(0)
            if head != _GZIP_MAGIC:
                if size > MAX_PICKLE_BYTES:
                    raise TraceParseError(path, "file is implausibly large for a memory snapshot")
                return fh.read()
            return _gunzip_bounded(fh, path)
    except OSError as exc:
        raise TraceParseError(path, f"cannot read file ({exc.strerror or exc})") from None


def _gunzip_bounded(fh, path: Path) -> bytes:
    out, total = [], 0
    try:
        with gzip.GzipFile(fileobj=fh, mode="rb") as gz:
            while piece := gz.read(_CHUNK):
                total += len(piece)
                if total > MAX_PICKLE_BYTES:
                    raise TraceParseError(path, "gzip inflates implausibly large for a memory snapshot")
                out.append(piece)
    except EOFError:
        raise TraceParseError(path, "gzip file is truncated") from None
    except (OSError, zlib.error):
        raise TraceParseError(path, "corrupt gzip file") from None
    return b"".join(out)
