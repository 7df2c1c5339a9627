"""Finding trace files and reading their bytes (.json, .json.gz, .json.xz; dirs, bundles)."""
from __future__ import annotations

import lzma
import mmap
import os
import re
import stat
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

from core.trace import gunzip, safefile
from core.trace.limits import limits, max_inflate_bytes, ratio_check_on
from core.trace.model import TraceParseError

TRACE_SUFFIXES = (".json", ".json.gz", ".json.xz", ".json.gzip")
_GZIP_MAGIC = b"\x1f\x8b"
_XZ_MAGIC = b"\xfd7zXZ\x00"
# refuse to inflate absurd amounts (zip bombs / junk): more than the memory available allows
# (limits.max_inflate_bytes), or a compression ratio no trace reaches (Kineto JSON compresses
# 10-25x; zeros compress 1000x) beyond 64 MiB; resources/limits.toml [inflate]
MAX_RATIO = int(limits()["inflate"]["max_ratio"])
RATIO_CHECK_FROM = int(limits()["inflate"]["ratio_check_from_bytes"])

try:  # ISA-L's gzip is ~1.4x faster than zlib here (docs/architecture.md)
    from isal import isal_zlib as _zlib
    from isal.igzip_lib import IsalError as _IsalError
except ImportError:  # pragma: no cover - optional speedup
    _zlib = zlib
    _IsalError = zlib.error


@dataclass(frozen=True, slots=True)
class TraceSource:
    """One trace file to load, with what the directory layout says about it."""

    path: Path
    rank_hint: int | None = None


@dataclass(frozen=True, slots=True)
class Discovered:
    kind: str  # "file" | "dir" | "bundle"
    root: Path
    sources: tuple[TraceSource, ...]
    bundle_dir: Path | None = None


def is_trace_name(name: str) -> bool:
    low = name.lower()
    return low.endswith(TRACE_SUFFIXES) and not low.endswith((".nvml.json", "run.json", "compile.json"))


_RANK_RE = re.compile(r"rank[_\-.]?(\d+)", re.IGNORECASE)
_CYCLE_RE = re.compile(r"\.cycle(\d{1,9})\.", re.IGNORECASE)


def cycle_of_name(name: str) -> int | None:
    """The profiler cycle a file name says (`rank0.cycle2.pt.trace.json.gz`: 2; the runner's layout), else None."""
    m = _CYCLE_RE.search(name)
    return int(m.group(1)) if m else None


def _stat(p: Path) -> os.stat_result:
    try:
        return os.stat(p)
    except FileNotFoundError:
        raise TraceParseError(p, "no such file or directory") from None
    except OSError as exc:  # EACCES through an unsearchable folder, ELOOP, ENAMETOOLONG...
        raise TraceParseError(p, f"cannot open ({exc.strerror or exc})") from None


def discover(path: str | Path) -> Discovered:
    """What `path` holds: a single trace, a TensorBoard/multi-rank log dir, or a run bundle.

    Only regular files are traces (a FIFO or device would block a reader); folders are searched
    without following symlinked folders, at most [discover] max_depth deep and max_entries wide."""
    p = Path(path).expanduser()
    st = _stat(p)
    if stat.S_ISREG(st.st_mode):
        return Discovered("file", p, (TraceSource(p),))
    if not stat.S_ISDIR(st.st_mode):
        raise TraceParseError(p, "not a regular file or directory (a FIFO, socket or device is not a trace)")
    bundle = _is_regular(p / "run.json") or (_is_dir(p / "traces") and _is_regular(p / "events.jsonl"))
    search_root = p / "traces" if _is_dir(p / "traces") else p
    files = sorted(_trace_files(search_root))
    # prefer *.pt.trace.json* (TensorBoard handler names) when both kinds exist
    pt = [f for f in files if ".pt.trace." in f.name]
    if pt:
        files = pt
    if not files:
        what = "run bundle has no traces yet (did the run reach the active steps?)" if bundle else \
            "folder holds no trace files (*.pt.trace.json / *.json.gz)"
        raise TraceParseError(p, what)
    sources = []
    for f in files:
        rel = str(f.relative_to(p))
        m = _RANK_RE.search(rel)
        sources.append(TraceSource(f, int(m.group(1)) if m and len(m.group(1)) <= 9 else None))
    return Discovered("bundle" if bundle else "dir", p, tuple(sources), p if bundle else None)


def _is_regular(p: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(p).st_mode)
    except (OSError, ValueError):
        return False


def _is_dir(p: Path) -> bool:
    try:
        return stat.S_ISDIR(os.stat(p).st_mode)
    except (OSError, ValueError):
        return False


def _entries(it):
    """scandir entries; a folder that fails mid-listing (/proc, a vanished mount) ends its listing."""
    while True:
        try:
            yield next(it)
        except StopIteration:
            return
        except OSError:
            return


def _trace_files(root: Path) -> list[Path]:
    """Regular trace-named files under root (symlinks to regular files count; symlinked folders are
    not entered). Unreadable folders are passed over; past the limits the search refuses."""
    cfg = limits()["discover"]
    max_depth, max_entries = int(cfg["max_depth"]), int(cfg["max_entries"])
    found: list[Path] = []
    seen = 0
    stack = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            it = os.scandir(folder)
        except OSError as exc:
            if folder == root:  # the folder asked for: say why, not "holds no trace files"
                raise TraceParseError(root, f"cannot read the folder ({exc.strerror or exc})") from None
            continue
        with it:
            for entry in _entries(it):
                seen += 1
                if seen > max_entries:
                    raise TraceParseError(root, f"folder too large to search for traces (more than "
                                                f"{max_entries:,} entries): open a trace file or a smaller folder")
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if depth + 1 < max_depth:
                            stack.append((Path(entry.path), depth + 1))
                    elif is_trace_name(entry.name) and _is_regular(Path(entry.path)):
                        found.append(Path(entry.path))
                except OSError:
                    continue
    return found


def open_trace(path: Path):
    """core.trace.safefile.open_regular (a regular file, refused without blocking otherwise) with its refusals
    as the TraceParseError a trace's reader raises."""
    try:
        return safefile.open_regular(path)
    except safefile.UnsafeFile:
        raise TraceParseError(path, "not a regular file (a FIFO, socket or device is not a trace)") from None
    except FileNotFoundError:
        raise TraceParseError(path, "no such file or directory") from None
    except OSError as exc:
        raise TraceParseError(path, f"cannot read file ({exc.strerror or exc})") from None


def read_bytes(path: Path):
    """The file's JSON bytes: an mmap for plain files, decompressed bytes for gzip/xz.

    Raises TraceParseError with a one-line reason for unreadable, empty, non-regular or corrupt files.
    """
    with open_trace(path) as fh:
        try:
            size = os.fstat(fh.fileno()).st_size
            if size == 0:
                raise TraceParseError(path, "file is empty")
            magic = fh.read(6)
            if magic.startswith(_GZIP_MAGIC):
                return _gunzip(path, fh)
            if magic.startswith(_XZ_MAGIC):
                return _unxz(path, fh)
            fh.seek(0)
            return FileMap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except OSError as exc:
            raise TraceParseError(path, f"cannot read file ({exc.strerror or exc})") from None


def _too_big(path: Path, total: int, compressed: int) -> TraceParseError:
    bound = max_inflate_bytes()
    if total > bound:
        return TraceParseError(path, f"decompresses to more than {bound >> 20:,} MiB, the limit for the memory "
                                     "available now (set PTPROF_MAX_INFLATE_BYTES to change it)")
    return TraceParseError(path, f"implausible decompressed size (> {total >> 20} MiB from {compressed >> 10} KiB, "
                                 f"over {MAX_RATIO}x): not a trace (PTPROF_MAX_INFLATE_BYTES=N loads it anyway)")


def _over(total: int, compressed: int, bound: int) -> bool:
    return total > bound or (total > RATIO_CHECK_FROM and total > MAX_RATIO * compressed and ratio_check_on())


def isize(path: Path) -> int | None:
    """Uncompressed size from the gzip trailer (mod 2**32), None if unusable."""
    try:
        with open_trace(path) as fh:
            size = os.fstat(fh.fileno()).st_size
            if fh.read(2) != b"\x1f\x8b" or size < 20:
                return None
            fh.seek(-4, os.SEEK_END)
            n = struct.unpack("<I", fh.read(4))[0]
    except (OSError, TraceParseError):
        return None
    return n if size < n < MAX_RATIO * size else None


def _gunzip_sized(path: Path, fh) -> bytes | None:
    """One-shot inflate into a buffer of the size the trailer announces (no blocks to join: 0.11 s
    instead of 0.19 s for gpu_gpt_big). None when the file does not fit that plan (several gzip
    members, > 4 GiB, truncated or corrupt): the block-wise reader handles those and their errors.
    A size over the memory bound is refused before anything is inflated."""
    n = isize(path)
    if n is None:
        return None
    if n > max_inflate_bytes():
        raise _too_big(path, n, os.fstat(fh.fileno()).st_size)
    try:
        fh.seek(0)
        raw = fh.read()
        head = _zlib.decompressobj(wbits=31).decompress(raw[: 1 << 16], 4096)
        if head.lstrip()[:1] not in (b"{", b"[") and not head.startswith(b"\xef\xbb\xbf"):
            return None
        d = _zlib.decompressobj(wbits=31)
        out = d.decompress(raw, n + 1)
    except (zlib.error, _IsalError, ValueError, MemoryError):
        return None
    if not d.eof or d.unused_data or d.unconsumed_tail or len(out) != n:
        return None
    return out


def _gunzip(path: Path, fh) -> bytes:
    fast = _gunzip_sized(path, fh)
    return fast if fast is not None else _gunzip_members(path, fh)


def _gunzip_members(path: Path, fh) -> bytes:
    """Every gzip member (core/trace/gunzip.py: headers of any length skipped as they stream in), inflated
    into one bounded buffer (_Inflated), stopping early on content that is not JSON or inflates past the
    bounds. A stream cut off keeps what inflated (a crashed run's trace: the JSON reader says where it ends)."""
    compressed = max(1, os.fstat(fh.fileno()).st_size)
    out = _Inflated(compressed)
    fh.seek(0)
    members = gunzip.Members(fh)
    try:
        for piece in members:
            if not out.size and piece.lstrip()[:1] not in (b"{", b"[", b"") and not piece.startswith(b"\xef\xbb\xbf"):
                raise TraceParseError(path, "compressed file does not hold JSON (expected a PyTorch profiler trace)")
            if _over(out.size + len(piece), compressed, out.bound):
                raise _too_big(path, out.size + len(piece), compressed)
            out.add(piece)
            del piece
    except gunzip.GzipError:
        raise TraceParseError(path, "corrupt gzip file") from None
    if not out.size:
        raise TraceParseError(path, "corrupt gzip file (nothing could be decompressed)")
    return out.done()


def _unxz(path: Path, fh) -> bytes:
    fh.seek(0)
    try:
        with lzma.open(fh, "rb") as xz:
            return _read_bounded(xz, path, fh)
    except (lzma.LZMAError, EOFError):
        raise TraceParseError(path, "corrupt or truncated xz file") from None


class FileMap(mmap.mmap):
    """A read-only mapping of the trace file itself (its clean pages can be dropped and read back)."""


class InflatedMap(mmap.mmap):
    """An anonymous mapping that holds inflated bytes. Not a file mapping: its pages cannot be dropped
    and read back (MADV_DONTNEED would zero them), and no worker can reopen it by path."""


def is_file_map(buf) -> bool:
    """`buf` maps the trace file itself (read_bytes of a plain .json)."""
    return isinstance(buf, mmap.mmap) and not isinstance(buf, InflatedMap)


class _Inflated:
    """The output of an inflate, written into an anonymous mapping of the most the bounds allow for this
    file (pages cost memory only once written), so growing it never copies: a bytearray's realloc copies
    below glibc's mmap threshold, which tune_malloc raises to 1 GiB (a 20 MB bomb refused at 1.3 GB peaked
    at 2.3 GB). `done()` trims the mapping to the data. A reservation the system refuses (a huge
    PTPROF_MAX_INFLATE_BYTES, no mremap) falls back to a bytearray."""

    def __init__(self, compressed: int):
        self.bound = max_inflate_bytes()
        limit = self.bound
        if ratio_check_on():
            limit = min(limit, max(RATIO_CHECK_FROM, MAX_RATIO * compressed))
        self.size = 0
        self._buf: InflatedMap | bytearray
        try:
            private = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0)
            kw = {"flags": private} if private else {}
            self._buf = InflatedMap(-1, limit + 1, **kw)  # add() comes after the bound check: never past it
        except (OSError, ValueError, OverflowError):
            self._buf = bytearray()

    def add(self, block) -> None:
        if isinstance(self._buf, bytearray):
            self._buf += block
        else:
            self._buf[self.size:self.size + len(block)] = block
        self.size += len(block)

    def done(self):
        buf = self._buf
        if isinstance(buf, bytearray):
            return buf
        try:
            if self.size:
                buf.resize(self.size)
                return buf
        except (OSError, ValueError, SystemError):  # no mremap (macOS): one copy of the data
            pass
        out = bytes(buf[:self.size])
        buf.close()
        return out


def _read_bounded(stream, path: Path, raw_fh) -> bytes:
    """Inflate block by block into one buffer that never moves (_Inflated: the peak is the output plus a
    block), stopping early on content that is not JSON or inflates past the bounds."""
    compressed = max(1, os.fstat(raw_fh.fileno()).st_size)
    out = _Inflated(compressed)
    while True:
        block = stream.read(16 << 20 if not out.size else 64 << 20)
        if not block:
            break
        if not out.size and block.lstrip()[:1] not in (b"{", b"[", b"") and not block.startswith(b"\xef\xbb\xbf"):
            raise TraceParseError(path, "compressed file does not hold JSON (expected a PyTorch profiler trace)")
        if _over(out.size + len(block), compressed, out.bound):
            raise _too_big(path, out.size + len(block), compressed)
        out.add(block)
        del block
    return out.done()
