"""Keep freed big numpy buffers in the heap for reuse (glibc only; a no-op elsewhere).

On this kind of VM the first touch of a fresh page costs ~3-8 µs (docs/architecture.md), so a load
that allocates and frees many column-sized temporaries spends more time faulting pages in than
computing. glibc serves allocations above M_MMAP_THRESHOLD (32 MiB at most by default) with fresh
mmaps and returns them on free; raising the threshold and the trim threshold makes the next
temporary reuse already-touched memory (2-5x faster alloc/free cycles measured here). Peak RSS is
unchanged; memory freed after a load stays with the process for the next one.

`single_arena()`, for the same reason (bench/README.md, "Fresh pages"): the threads a process
starts from then on share the main malloc arena. The scanner threads' chunk buffers would otherwise
live in per-thread arenas, where the main thread's merge and build can never reuse them once freed.
Only processes without a UI call it (the CLI, the GUI's loader child): in the window, the UI thread
would wait on that arena's lock while a load thread frees or trims gigabytes (10 GB trace: UI gaps of
200-660 ms at the end of the load, none without it).
Numpy's transparent huge pages are left on: turning them off was 10-20 % faster on this VM at
1.1 GB (first touching 1 GiB in huge pages took 3.6 s here against 0.8 s in 4 KiB pages) but
slower at 10 GB here and at 1.1 GB on the 16-core GPU host (bench/device_fresh_pages.sh).
Disable all of it with PTPROF_MALLOC_TUNE=0.
"""
from __future__ import annotations

import ctypes
import os
import sys

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8
_done = False
_libc = None


def _glibc() -> ctypes.CDLL:
    """glibc by its soname (`ctypes.util.find_library` runs `ldconfig -p` in a child process and its
    import pulls in subprocess: ~13 ms of every CLI start), found the slow way only where that fails."""
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:
        from ctypes.util import find_library
        return ctypes.CDLL(find_library("c") or "libc.so.6")


def tune_malloc() -> bool:
    global _done
    if _done:
        return True
    if not sys.platform.startswith("linux") or os.environ.get("PTPROF_MALLOC_TUNE", "1") == "0":
        return False
    try:
        libc = _glibc()
        global _libc
        _libc = libc
        ok = libc.mallopt(_M_MMAP_THRESHOLD, 1 << 30) == 1 and libc.mallopt(_M_TRIM_THRESHOLD, (1 << 31) - 1) == 1
    except (OSError, AttributeError):
        return False
    _done = ok
    return ok


def single_arena() -> bool:
    """Make threads started from now on share the main malloc arena (glibc; see the module doc).
    Not for a process with a UI thread. Off with PTPROF_MALLOC_TUNE=0."""
    if not sys.platform.startswith("linux") or os.environ.get("PTPROF_MALLOC_TUNE", "1") == "0":
        return False
    try:
        return _glibc().mallopt(_M_ARENA_MAX, 1) == 1
    except (OSError, AttributeError):
        return False


def trim() -> None:
    """Give the free pages inside the heap back to the system (glibc `malloc_trim(0)`, which
    madvises them away). With the thresholds above the heap keeps every freed column; on a
    multi-GB load the holes left by the merged chunk columns would otherwise stay in RSS under
    the model built next (10 GB trace: ~1 GB of the peak). Pages reused later fault in again, so
    this is for big loads only (the caller decides)."""
    if _done and _libc is not None:
        try:
            _libc.malloc_trim(0)
        except (OSError, AttributeError):  # pragma: no cover - not glibc
            pass
