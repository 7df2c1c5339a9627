"""Writing a file without ever following a planted link, leaving half a file, or destroying what is not
a file: the one place every output of ptprof goes through (CSV, report files, diff CSVs, run.json, marker).

What is at PATH decides how it is written:

- nothing, or a regular file: a fresh temp file in the same folder (created exclusively, so never an
  existing file or a planted symlink), then renamed over PATH. A read-only file is refused.
- `-`, or PATH that is this process's own stdout / stderr (`/dev/stdout`, a link to `/proc/self/fd/1`,
  the very file the shell redirected stdout to): written to that stream, never replaced.
- a FIFO or a character device (`/dev/null`, a terminal) that the USER named (`user_path=True`: the
  `--csv FILE` of a command): written in place, like a shell's `>` (a FIFO waits for its reader).
- a symlink the user named to a regular file: the target is written (atomically, in its own folder),
  the link stays. A dangling link is refused.
- anything else is refused with one line (UnsafeOutput, an OSError): a directory, a socket, a block
  device; and, for names ptprof chose inside a folder (report / diff / bundle files, `user_path=False`),
  any symlink, FIFO or device - a planted link is neither written through nor replaced.

Nothing is ever renamed over something that is not a regular file.
"""
from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path


class UnsafeOutput(OSError):
    """PATH holds something ptprof must not replace or write into; str(exc) is one line for the user."""

    def __str__(self) -> str:
        return self.args[0] if self.args else "unsafe output path"


def kind_of(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symlink")):
        if test(mode):
            return name
    return "not a regular file"


def _stdio_fd(st: os.stat_result | None) -> int | None:
    """1 or 2 when `st` is this process's stdout / stderr (the same open file), else None."""
    if st is None:
        return None
    for fd in (1, 2):
        try:
            own = os.fstat(fd)
        except OSError:
            continue
        if (own.st_dev, own.st_ino) == (st.st_dev, st.st_ino) and not stat.S_ISDIR(own.st_mode):
            return fd
    return None


def _write_fd(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _write_stdio(fd: int, data: bytes) -> None:
    stream = sys.stdout if fd == 1 else sys.stderr
    try:
        stream.flush()  # what the command printed so far comes first
    except (OSError, ValueError):
        pass
    _write_fd(fd, data)


def _write_in_place(path: Path, data: bytes) -> None:
    """A FIFO or character device: opened for writing (no create, no truncate), written, closed."""
    fd = os.open(path, os.O_WRONLY | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)  # what was opened, not what was checked: never a regular file truncated here
        if not (stat.S_ISFIFO(st.st_mode) or stat.S_ISCHR(st.st_mode)):
            raise UnsafeOutput(f"{path} changed while it was being opened: nothing was written")
        _write_fd(fd, data)
    finally:
        os.close(fd)


def _replace(path: Path, data: bytes) -> Path:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; reports and bundles are meant to be shared
        try:  # the last look before the rename: only a regular file (or nothing) is ever replaced
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            mode = None
        if mode is not None and not stat.S_ISREG(mode):
            raise UnsafeOutput(f"{path} is {kind_of(mode)}: ptprof does not replace it (nothing was written)")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def check(path: str | Path, user_path: bool = False) -> str | None:
    """Why `path` must not be written (one line), or None. Says nothing about the folder's permissions."""
    try:
        _plan(path, user_path)
    except UnsafeOutput as exc:
        return str(exc)
    return None


def _plan(path: str | Path, user_path: bool):
    """("stdio", fd) | ("in_place", path) | ("replace", path): how `path` is written; UnsafeOutput if not."""
    if user_path and str(path) == "-":
        return "stdio", 1
    path = Path(path)
    try:
        lst = os.lstat(path)
    except FileNotFoundError:
        return "replace", path
    except (OSError, ValueError) as exc:
        raise UnsafeOutput(f"cannot write {path}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        st = os.stat(path)  # follows links: what a link leads to
    except (OSError, ValueError):
        st = None
    if user_path:
        fd = _stdio_fd(st)  # /dev/stdout, a link to /proc/self/fd/1, the file the shell redirected to
        if fd is not None:
            return "stdio", fd
    if stat.S_ISLNK(lst.st_mode):
        if not user_path:
            raise UnsafeOutput(f"{path} is a symlink: ptprof neither writes through it nor replaces it "
                               "(remove it, or pick another folder; nothing was written)")
        if st is None:
            raise UnsafeOutput(f"{path} is a symlink to a missing file: give the target path itself "
                               "(nothing was written)")
        if stat.S_ISREG(st.st_mode):  # a link the user named: its target is written, the link stays
            target = Path(os.path.realpath(path))
            if not os.access(target, os.W_OK):
                raise UnsafeOutput(f"{path} leads to read-only {target}: not replaced (nothing was written)")
            return "replace", target
        lst = st  # judged by what it leads to
    elif stat.S_ISREG(lst.st_mode):
        if not os.access(path, os.W_OK):
            raise UnsafeOutput(f"{path} is read-only: ptprof does not replace it (nothing was written)")
        return "replace", path
    if user_path and (stat.S_ISFIFO(lst.st_mode) or stat.S_ISCHR(lst.st_mode)):
        return "in_place", path
    raise UnsafeOutput(f"{path} is {kind_of(lst.st_mode)}: ptprof does not write over it "
                       "(give a file name; nothing was written)")


def atomic_write(path: str | Path, data: bytes, user_path: bool = False) -> Path:
    """Write `data` to `path` as the module docstring says; returns the path. UnsafeOutput (an OSError,
    one line) for what must not be written."""
    how, where = _plan(path, user_path)
    if how == "stdio":
        _write_stdio(where, data)
        return Path(str(path))
    if how == "in_place":
        _write_in_place(where, data)
        return where
    _replace(where, data)
    return Path(path)


def atomic_write_text(path: str | Path, text: str, user_path: bool = False) -> Path:
    return atomic_write(path, text.encode("utf-8", "backslashreplace"), user_path)  # a non-UTF-8 file name: \udcff


def write_program(path: str | Path, text: str) -> str:
    """An executable for this user alone (0700; SSH_ASKPASS's wrappers): written to `.NAME.PID` beside it
    (O_NOFOLLOW: never through a planted link), then renamed over `path`. Returns the path."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o700)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)
    return str(path)
