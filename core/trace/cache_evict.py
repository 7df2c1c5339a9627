"""What the columnar cache may delete, and when: only folders it made itself.

An entry is a folder named `<24 hex digits>` holding the marker file `.ptprof-cache-entry` (written
first, with MARKER_TEXT); a writer's temporary is `.tmp-ptprof-*` with the same marker. Both the name
and the marker are checked before anything is removed, so PTPROF_CACHE_DIR may point at a folder that
holds other things (a 6 GB vm_images/, a .tmp-build/): they are never sized, never evicted. Sizing and
deleting never follow symlinks.

Eviction is amortized: the first store in a process scans the cache once; later stores add their own
size to that running total and rescan only when the total passes the bound (or the scan is older than
RESCAN_S, in case other processes wrote too). Over the bound, least recently used entries go until the
cache is at LOW_WATER of the bound, so the next stores do not rescan at once.
"""
from __future__ import annotations

import logging
import os
import re
import shutil
import stat
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

MARKER = ".ptprof-cache-entry"
MARKER_TEXT = b"ptprof columnar cache entry; safe to delete with its folder\n"
ENTRY_NAME = re.compile(r"[0-9a-f]{24}")
TMP_PREFIX = ".tmp-ptprof-"
STALE_TMP_S = 3600  # a writer that died an hour ago
RESCAN_S = 300.0
LOW_WATER = 0.9


def write_marker(folder: Path) -> None:
    with open(folder / MARKER, "xb") as fh:
        fh.write(MARKER_TEXT)


def has_marker(folder: Path) -> bool:
    try:
        st = os.lstat(folder / MARKER)
        if not stat.S_ISREG(st.st_mode) or st.st_size != len(MARKER_TEXT):
            return False
        fd = os.open(folder / MARKER, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
        try:
            return os.read(fd, len(MARKER_TEXT) + 1) == MARKER_TEXT
        finally:
            os.close(fd)
    except OSError:
        return False


def is_real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def is_entry(folder: Path) -> bool:
    """A cache entry we made: our name, a real folder (not a link), our marker inside."""
    return bool(ENTRY_NAME.fullmatch(folder.name)) and is_real_dir(folder) and has_marker(folder)


def is_our_tmp(folder: Path) -> bool:
    return folder.name.startswith(TMP_PREFIX) and is_real_dir(folder) and has_marker(folder)


def remove(folder: Path) -> bool:
    """rmtree of one of our folders, after checking again that it is ours (never follows links)."""
    if not (is_entry(folder) or is_our_tmp(folder)):
        return False
    shutil.rmtree(folder, ignore_errors=True)
    return not os.path.lexists(folder)


def folder_bytes(folder: Path) -> int:
    """Bytes of the regular files directly in `folder` (entries are flat); links are not followed."""
    total = 0
    with os.scandir(folder) as it:
        for e in it:
            if e.is_file(follow_symlinks=False):
                total += e.stat(follow_symlinks=False).st_size
    return total


@dataclass
class _Tally:
    root: str
    total_bytes: int
    scanned_at: float


_tally: _Tally | None = None


def note_stored(root: Path, entry: Path, limit: int, keep: Path | None = None) -> int:
    """Account for a freshly stored entry; evict when the running total passes `limit`."""
    global _tally
    now = time.time()
    if _tally is None or _tally.root != str(root) or now - _tally.scanned_at > RESCAN_S:
        return evict(root, limit, keep=keep)
    try:
        _tally.total_bytes += folder_bytes(entry)
    except OSError:
        pass
    if _tally.total_bytes > limit:
        return evict(root, limit, keep=keep)
    return 0


def note_added(root: Path, nbytes: int, limit: int, keep: Path | None = None) -> int:
    """Account for `nbytes` added to an entry already counted (its timeline index); evict when the
    running total passes `limit`."""
    if _tally is not None and _tally.root == str(root):
        _tally.total_bytes += nbytes
        if _tally.total_bytes <= limit:
            return 0
    return evict(root, limit, keep=keep)


def evict(root: Path, limit: int, keep: Path | None = None) -> int:
    """One scan: remove stale temporaries of ours, then least recently used entries until the cache is
    at LOW_WATER x limit (or `limit` itself when nothing would be left). Returns entries removed."""
    global _tally
    if not is_real_dir(root):
        _tally = None
        return 0
    entries = []
    now = time.time()
    try:
        children = list(os.scandir(root))
    except OSError:
        return 0
    for child in children:
        path = Path(child.path)
        if child.name.startswith(TMP_PREFIX):
            try:
                old = child.stat(follow_symlinks=False).st_mtime < now - STALE_TMP_S
            except OSError:
                continue
            if old and is_our_tmp(path):
                remove(path)
            continue
        if not is_entry(path):
            continue  # not ours: never sized, never removed
        try:
            size = folder_bytes(path)
            stamp = os.lstat(path / MARKER).st_mtime  # the LRU clock (touched on every hit)
        except OSError:
            continue
        entries.append((stamp, size, path))
    total = sum(size for _stamp, size, _path in entries)
    target = int(limit * LOW_WATER) if total > limit else limit
    removed = 0
    for _stamp, size, path in sorted(entries, key=lambda e: e[0]):
        if total <= target:
            break
        if keep is not None and (path in keep if isinstance(keep, (set, frozenset)) else path == keep):
            continue  # the entry just stored, or every entry of the run being opened (cache.pin_run)
        if remove(path):
            total -= size
            removed += 1
    _tally = _Tally(str(root), total, now)
    return removed


def touch(entry: Path) -> None:
    try:
        os.utime(entry / MARKER, follow_symlinks=False)
    except (OSError, NotImplementedError):
        pass
