"""Opening files that come from outside: only regular files, never blocking, never following a link
we did not ask for, never reading more than a stated cap.

A FIFO named run.json (or in place of a cache column) would block `open()` forever; a 2 GB file named
by an events.jsonl line would be read whole; a 1,000-deep JSON array raises RecursionError in the
stdlib decoder. These helpers turn each of those into an `UnsafeFile` (an OSError, so every caller's
existing `except OSError` treats it as "cannot read"), with a one-line reason.
"""
from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path

# JSON side files (run.json, compile.json, one events.jsonl line) are a few KB; 64 MiB is far beyond
MAX_JSON_BYTES = 64 << 20
MAX_JSON_DEPTH = 64  # real side files nest 4-5 levels


class UnsafeFile(OSError):
    """The path is not a regular file, is too large, or could not be opened safely."""


def open_regular(path: str | Path, *, follow_symlinks: bool = True, max_bytes: int | None = None):
    """A binary file object for `path`, opened O_NONBLOCK, after checking (on the open descriptor) that it
    is a regular file of at most `max_bytes`. With follow_symlinks=False a symlink is refused."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        st = os.stat(path, follow_symlinks=follow_symlinks)  # refuse a FIFO before open() could block
    except OSError:
        raise
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeFile("not a regular file")
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)  # the same check on what was actually opened (no swap in between)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFile("not a regular file")
        if max_bytes is not None and st.st_size > max_bytes:
            raise UnsafeFile(f"{st.st_size} bytes, more than the {max_bytes} this reader accepts")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)  # regular files never block; plain reads from here on
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | Path, max_bytes: int, *, follow_symlinks: bool = True) -> bytes:
    with open_regular(path, follow_symlinks=follow_symlinks, max_bytes=max_bytes) as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:  # grew after the check
        raise UnsafeFile(f"more than the {max_bytes} bytes this reader accepts")
    return data


def bracket_depths(text: str, start: int = 0):
    """(index, depth after it) of every '[', '{', ']', '}' outside JSON strings, from `start` on. One
    walk for the depth bound below and for skipping a nested value (core.trace.kineto)."""
    depth = 0
    in_string = escaped = False
    for k in range(start, len(text)):
        ch = text[k]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            yield k, depth
        elif ch in "]}":
            depth -= 1
            yield k, depth


def nesting_depth_exceeds(text: str | bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when the JSON text opens more than `limit` nested arrays/objects (a quick count of brackets
    first, strings included: most texts stop there; then the walk outside strings). Never recurses."""
    if isinstance(text, (bytes, bytearray)):
        opens = text.count(b"[") + text.count(b"{")
    else:
        opens = text.count("[") + text.count("{")
    if opens <= limit:
        return False
    if isinstance(text, (bytes, bytearray)):
        text = text.decode("utf-8", "replace")
    return any(depth > limit for _, depth in bracket_depths(text))


def _finite_float(text: str) -> float | None:
    value = float(text)
    return value if math.isfinite(value) else None  # 1e400 -> None, not inf (int(inf) raises later)


def _no_constant(_name: str) -> None:
    return None  # NaN / Infinity / -Infinity are not JSON; read as null


def _refuse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number out of range: {text[:32]}")
    return value


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def loads_json_bounded(text: str | bytes, limit: int = MAX_JSON_DEPTH, strict: bool = False):
    """json.loads with a nesting bound; ValueError (never RecursionError) on anything bad. NaN, Infinity and
    1e400 read as None - or, `strict` (a file only we write), refuse the document."""
    if nesting_depth_exceeds(text, limit):
        raise ValueError(f"JSON nests deeper than {limit} levels")
    try:
        if strict:
            return json.loads(text, parse_float=_refuse_float, parse_constant=_refuse_constant)
        return json.loads(text, parse_float=_finite_float, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError("JSON nests too deeply") from None


def read_json_file(path: str | Path, max_bytes: int = MAX_JSON_BYTES, limit: int = MAX_JSON_DEPTH):
    """The decoded JSON of a regular file; OSError (UnsafeFile) or ValueError on anything bad."""
    data = read_regular(path, max_bytes)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    return loads_json_bounded(text, limit)
