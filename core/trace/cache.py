"""Columnar cache: a loaded TraceModel as plain `.npy` files, memory-mapped on reopen.

One entry per source file, a directory named by a hash of (resolved path, size, mtime_ns,
FORMAT_VERSION) under `cache_dir()` ($PTPROF_CACHE_DIR, else the user cache dir, e.g.
~/.cache/ptprof). An entry holds `<table>.<column>.npy` for every column of every table (a sparse
slice column as `slices.<column>.rows.npy` + `.values.npy`, core/trace/sparse.py) - or, for a small
model (PACK_MAX_BYTES), all of them in one `columns.bin` placed by entry.json's "packed" -, `entry.json`
(source key, strings, meta, counts, warnings, column list; strings that UTF-8 cannot hold - a file name
that is not UTF-8 - escaped by jsontext.py), a big model's timeline index
(index_store.py) and the marker file that says the folder is ours (cache_evict.py: only such folders
are ever removed). Writes go to a temporary directory renamed into place, so readers never see half an
entry. Nothing in an entry is trusted: every file is opened only when it is a regular file (a FIFO
never blocks), and the columns are checked on open (cache_check.py: dtypes, lengths, id ranges);
anything unusable is a miss, deleted and rebuilt - never an error. The cache is bounded
(PTPROF_CACHE_MAX_BYTES, default 5 GB), evicting least recently used entries, amortized over stores.
"""
from __future__ import annotations

import errno
import hashlib
import logging
import math
import os
import sys
import tempfile
import threading
import weakref
from dataclasses import asdict
from pathlib import Path

import msgspec
import numpy as np

from core.env import env_int
from core.trace import cache_evict, index_store, jsontext
from core.trace.cache_check import (
    TABLES,
    check_entry,
    check_fingerprints,
    check_model,
    fingerprint,
    open_npy,
    packed_bytes,
    packed_column,
    stored_columns,
)
from core.trace.cache_pack import map_packed as _map_packed, write_packed as _write_packed
from core.trace.model import EventCounts, TraceMeta, TraceModel
from core.trace.safefile import read_regular
from core.trace.sparse import Sparse
from core.trace.strings import StringTable

log = logging.getLogger(__name__)

FORMAT_VERSION = 9  # bump when a column's meaning changes (2: every Kineto category; 3: marker file, checked columns;
# 4: device sync-record track labels, headers with Kineto-mangled quotes read; 5: column fingerprints;
# 6: sparse slice arg columns as <col>.rows.npy + <col>.values.npy, listed in entry.json "sparse";
# 7: a small model's columns packed in one columns.bin, laid out in entry.json "packed";
# 8: category "Runtime" (older Kineto's launch calls) is Kind.RUNTIME, not OTHER;
# 9: times read exactly to the ns (core/trace/timens.py), not through float µs: epoch-µs traces' times change)
DEFAULT_MAX_BYTES = 5 * 10**9
MAX_ENTRY_JSON_BYTES = 1 << 30  # strings of the biggest traces are tens of MB
# models with at most this many bytes of columns are written as one file (PTPROF_CACHE_PACK_MAX_BYTES; 0:
# one .npy per column, the older layout, still read): one .npy per column cost ~66 file creates per entry (a
# 422-cycle bundle's first open took 9-21 s against 1.4 s without the cache), and a mapped .npy per column kept
# one descriptor each (10-11 per rank: past `ulimit -n` a warm open of ~100 ranks re-parsed). A packed file of
# more than MAP_PACKED_FROM bytes is memory-mapped once: one mapping and one descriptor per entry.
PACK_MAX_BYTES = 1 << 40
MAP_PACKED_FROM = 8 << 20
_ENTRY = "entry.json"
_PACKED = "columns.bin"
_warned: set[str] = set()
_ENTRY_OF: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # SliceTable -> entry folder it maps
_entry_lock = threading.Lock()

__all__ = ["TABLES", "cache_dir", "max_bytes", "load", "store", "evict", "source_key", "entry_dir"]


def _warn_once(msg: str) -> None:
    if msg not in _warned:
        _warned.add(msg)
        log.warning("%s", msg)


def cache_dir() -> Path | None:
    """The cache folder, or None (cache off, with one warning) when PTPROF_CACHE_DIR cannot be used."""
    env = os.environ.get("PTPROF_CACHE_DIR")
    try:
        if env:
            return Path(env).expanduser()
        if sys.platform == "win32":
            base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
            return base / "ptprof" / "Cache"
        if sys.platform == "darwin":
            return Path.home() / "Library" / "Caches" / "ptprof"
        return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ptprof"
    except (RuntimeError, KeyError, OSError) as exc:  # "~nosuchuser", no home directory
        _warn_once(f"trace cache off: cannot use cache folder {env or '~'!r} ({exc})")
        return None


def max_bytes() -> int:
    """PTPROF_CACHE_MAX_BYTES: a byte count (1e10 and 10000000000 both work); anything else -> default."""
    raw = os.environ.get("PTPROF_CACHE_MAX_BYTES")
    if raw is None or not raw.strip():
        return DEFAULT_MAX_BYTES
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        _warn_once(f"PTPROF_CACHE_MAX_BYTES={raw!r} is not a byte count; using {DEFAULT_MAX_BYTES}")
        return DEFAULT_MAX_BYTES
    return int(value)


def source_key(path: Path) -> dict | None:
    try:
        p = Path(path).resolve()
        st = p.stat()
    except (OSError, RuntimeError):
        return None
    return {"path": str(p), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "format": FORMAT_VERSION}


def entry_dir(key: dict, root: Path | None = None) -> Path | None:
    root = root if root is not None else cache_dir()
    if root is None:
        return None
    digest = hashlib.sha1(jsontext.encode(key)[0]).hexdigest()[:24]  # a non-UTF-8 file name too
    return root / digest


_TRANSIENT = {errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.EAGAIN, errno.EINTR}


def load(path: Path) -> TraceModel | None:
    """The cached model of `path`, memory-mapped; None on a miss or an unusable entry."""
    key = source_key(path)
    d = entry_dir(key) if key is not None else None
    if d is None or not cache_evict.is_real_dir(d):
        return None
    if not cache_evict.is_entry(d):
        return None  # not one we made: leave it alone
    try:
        try:
            model = _read(d, key)
        except OSError as exc:
            if exc.errno not in (errno.EMFILE, errno.ENFILE) or not raise_nofile_limit():
                raise
            model = _read(d, key)  # the soft descriptor limit was below the hard one: raised, once more
    except (MemoryError, OSError) as exc:
        if isinstance(exc, MemoryError) or exc.errno in _TRANSIENT:
            # out of descriptors / memory / maps now: a miss, but the entry is fine - removing it made every
            # open of a many-file bundle delete and rewrite the entries it could not map. Never silent: the
            # loader adds `unreadable_reason` to the model's warnings (a warm open that parses says why)
            why = os.strerror(exc.errno) if isinstance(exc, OSError) and exc.errno else "out of memory"
            limit = _nofile_text() if isinstance(exc, OSError) and exc.errno in (errno.EMFILE, errno.ENFILE) else ""
            _unreadable[str(path)] = f"its cache entry could not be opened now ({why}{limit}): parsed again"
            log.warning("cache entry %s not readable now (%s): parsing instead", d, exc)
            return None
        log.info("ignoring unusable cache entry %s (%s)", d, exc)
        cache_evict.remove(d)
        return None
    except Exception as exc:  # noqa: BLE001 - a broken entry is a miss, whatever broke it
        log.info("ignoring unusable cache entry %s (%s)", d, exc)
        cache_evict.remove(d)
        return None
    cache_evict.touch(d)  # LRU clock
    with _entry_lock:
        _ENTRY_OF[model.slices] = d
    return model


_unreadable: dict[str, str] = {}  # source path -> why its entry could not be opened (cache.load's last miss)


def unreadable_reason(path) -> str | None:
    """Why `load(path)` missed although the entry is there (descriptors / memory), once; else None."""
    return _unreadable.pop(str(path), None)


def raise_nofile_limit() -> bool:
    """Raise the soft RLIMIT_NOFILE to the hard limit (once); True when it went up."""
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        if soft == resource.RLIM_INFINITY or soft >= want:
            return False
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        log.info("raised the open-file limit from %d to %d for the cache's mappings", soft, want)
        return True
    except (ImportError, ValueError, OSError):
        return False


def _nofile_text() -> str:
    try:
        import resource
        return f"; ulimit -n is {resource.getrlimit(resource.RLIMIT_NOFILE)[0]}"
    except (ImportError, ValueError, OSError):
        return ""


def entry_of(model: TraceModel) -> Path | None:
    """The cache entry `model`'s columns were opened from or written to by this process, else None."""
    with _entry_lock:
        return _ENTRY_OF.get(model.slices)


def add_index(model: TraceModel, index) -> bool:
    """Keep `index` in the cache entry `model` was opened from, when it has none and the model is worth it
    (core/trace/index_store.py). False when there is nothing to do or it could not be written."""
    d = entry_of(model)
    if d is None or index.stored or not index_store.worth_storing(model) or index_store.has_index(d):
        return False
    try:
        if not cache_evict.is_entry(d):
            return False
        nbytes = index_store.write(d, index, model)
        if not os.path.isfile(d / _ENTRY):  # evicted meanwhile: leave no orphan files behind
            index_store.remove_orphan(d)
            return False
    except (OSError, ValueError) as exc:
        log.warning("could not add the timeline index to %s: %s", d, exc)
        index_store.remove(d)
        return False
    cache_evict.note_added(d.parent, nbytes, max_bytes(), keep=_keep(d))
    return True


def has_entry(path: Path) -> bool:
    """Whether the cache holds an entry of ours for `path` as it is now (not opened or checked)."""
    key = source_key(path)
    d = entry_dir(key) if key is not None else None
    return d is not None and cache_evict.is_real_dir(d) and cache_evict.is_entry(d) and \
        os.path.isfile(d / _ENTRY)


def _read(d: Path, key: dict) -> TraceModel:
    entry = msgspec.json.decode(read_regular(d / _ENTRY, MAX_ENTRY_JSON_BYTES, follow_symlinks=False))
    if isinstance(entry, dict) and entry.get("escaped") is True:  # names that were not UTF-8 (jsontext.py)
        entry = jsontext.unescape(entry)
    check_entry(entry, key)
    if entry.get("packed") is not None:
        size = packed_bytes(entry)
        buf = _map_packed(d / _PACKED, size) if size > MAP_PACKED_FROM else \
            read_regular(d / _PACKED, size, follow_symlinks=False)

        def column(stem: str, n: int) -> np.ndarray:
            return packed_column(buf, entry["packed"], stem, n)
    else:
        def column(stem: str, n: int) -> np.ndarray:
            return open_npy(d / f"{stem}.npy", [n])
    tables = {}
    for name, cls in TABLES.items():
        pairs = entry["sparse"].get(name, {})
        cols = {}
        for col in _field_names(cls):
            n = entry["shapes"][name][col][0]
            if col in pairs:
                cols[col] = Sparse(n, column(f"{name}.{col}.rows", pairs[col]),
                                   column(f"{name}.{col}.values", pairs[col]), cls.FILL[col])
            else:
                cols[col] = column(f"{name}.{col}", n)
        tables[name] = cls(**cols)
    strings = entry["strings"]
    model = TraceModel(
        path=entry["path"], rank=int(entry["rank"]), strings=StringTable(strings),
        meta=TraceMeta.from_json(entry["meta"]), counts=EventCounts(**entry["counts"]),
        warnings=tuple(entry["warnings"]), **tables,
    )
    check_model(model, len(strings))
    check_fingerprints(model, entry.get("fingerprints"))
    return model


def pack_max_bytes() -> int:
    return env_int("PTPROF_CACHE_PACK_MAX_BYTES", PACK_MAX_BYTES, lo=0, hi=1 << 40)


def store(path: Path, model: TraceModel, index=None) -> bool:
    """Write `model` as the cache entry of `path`, with its timeline index (`query.SliceIndex`) when given
    and worth keeping (core/trace/index_store.py). Returns False (and logs) when it could not."""
    key = source_key(path)
    root = cache_dir()
    if key is None or root is None:
        return False
    final = entry_dir(key, root)
    tmp = None
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=cache_evict.TMP_PREFIX, dir=root))
        cache_evict.write_marker(tmp)
        shapes: dict[str, dict[str, list[int]]] = {}
        prints: dict[str, dict[str, str]] = {}
        sparse: dict[str, dict[str, int]] = {}
        files: dict[str, np.ndarray] = {}  # "<table>.<column>[.rows|.values]" -> array
        for name in TABLES:
            table = getattr(model, name)
            shapes[name], prints[name] = {}, {}
            for col, arr in stored_columns(table).items():
                if isinstance(arr, Sparse):  # its pairs, as held (core/trace/sparse.py)
                    sparse.setdefault(name, {})[col] = len(arr.rows)
                    files[f"{name}.{col}.rows"], files[f"{name}.{col}.values"] = arr.rows, arr.values
                    shapes[name][col] = [len(arr)]
                else:
                    files[f"{name}.{col}"] = arr
                    shapes[name][col] = list(arr.shape)
                prints[name][col] = fingerprint(arr)
        packed = None
        if sum(int(a.nbytes) for a in files.values()) <= pack_max_bytes():
            packed = _write_packed(tmp / _PACKED, files)
        else:
            for stem, arr in files.items():
                np.save(tmp / f"{stem}.npy", np.ascontiguousarray(arr), allow_pickle=False)
        entry = {"key": key, "path": model.path, "rank": model.rank, "strings": model.strings.to_list(),
                 "meta": model.meta.to_json(), "counts": asdict(model.counts), "warnings": list(model.warnings),
                 "shapes": shapes, "sparse": sparse, "fingerprints": prints, "packed": packed}
        if index is not None and index_store.worth_storing(model):
            index_store.write(tmp, index, model)
        data, escaped = jsontext.encode(entry)
        if escaped:  # a file name or trace strings with surrogates: held escaped, marked so
            data = jsontext.encode({**jsontext.escape(entry), "escaped": True})[0]
        (tmp / _ENTRY).write_bytes(data)
        if os.path.lexists(final):
            if not cache_evict.remove(final):
                log.info("not replacing %s: it is not a cache entry of ours", final)
                return False
        os.replace(tmp, final)
        tmp = None
    except (OSError, TypeError, ValueError, OverflowError, msgspec.EncodeError) as exc:
        log.warning("could not write the trace cache in %s: %s", root, exc)
        return False
    finally:
        if tmp is not None:
            cache_evict.remove(tmp)
    with _entry_lock:  # its index may be added later (`add_index`)
        _ENTRY_OF[model.slices] = final
    cache_evict.note_stored(root, final, max_bytes(), keep=_keep(final))
    return True


_pinned: frozenset = frozenset()  # entry folders of the run being opened: its own stores never evict them


def pin_run(paths) -> None:
    """The bound scales with the input: while a run of many files is opened (the loader, core/ranks' maps),
    storing one file's entry never evicts another file's entry of the same run - the 5 GB default was a silent
    cliff past ~20 large ranks, where each store evicted a sibling and the run never reopened warm (nor kept
    `diff`'s findings). Other entries are still evicted least recently used first; the run's own entries may
    then hold more than the bound until a later store of another run."""
    global _pinned
    root = cache_dir()
    dirs = set()
    for p in paths if root is not None else ():
        key = source_key(Path(p))
        d = entry_dir(key, root) if key is not None else None
        if d is not None:
            dirs.add(d)
    _pinned = frozenset(dirs)  # () unpins


def _keep(final: Path):
    pins = _pinned
    return (pins | {final}) if pins and final in pins else final


ASYNC_MIN_BYTES = 256 << 20  # models this big are written by a background thread (10 GB trace: 4.3 GB, ~23 s)
_pending: list[threading.Thread] = []
_pending_lock = threading.Lock()


def model_bytes(model: TraceModel) -> int:
    return sum(int(arr.nbytes) for name in TABLES for arr in stored_columns(getattr(model, name)).values())


def store_soon(path: Path, model: TraceModel, index=None) -> threading.Thread | None:
    """`store`, in a background thread for a big model: the loaded model is the caller's at once (a 10 GB
    trace is open ~20 s earlier) while its columns go to disk. The thread is not a daemon: the interpreter
    waits for it at exit, so `ptprof info` prints first and leaves a complete entry. Small models (and
    PTPROF_CACHE_SYNC=1) are written before this returns. `flush()` waits for the pending writes.
    `path` None: add `index` to the entry `model` was opened from (`add_index`), the same way."""
    if os.environ.get("PTPROF_CACHE_SYNC", "") not in ("", "0") or model_bytes(model) < ASYNC_MIN_BYTES:
        _write(path, model, index)
        return None
    t = threading.Thread(target=_store_behind, args=(path, model, index), name="ptprof-cache-write", daemon=False)
    with _pending_lock:
        _pending[:] = [p for p in _pending if p.is_alive()]
        _pending.append(t)
    t.start()
    return t


def _write(path: Path | None, model: TraceModel, index) -> bool:
    return store(path, model, index) if path is not None else add_index(model, index)


_behind: list = []  # (path or None, model, index) queued by write_behind, not yet started


def write_behind(path: Path | None, model: TraceModel, index=None) -> None:
    """Queue `model`'s cache write (with its timeline index; `path` None: only the index, added to the
    entry the model was opened from) until `release_behind()` (the window: once the after-open work is
    done - a 1.1 GB trace's 0.5 GB write beside the open took 0.3 s from its first paint, and beside the
    after-open jobs it froze the window 100-220 ms). Written at interpreter exit if never released."""
    import atexit
    with _pending_lock:
        if not _behind:
            atexit.register(_write_behind_now)
        _behind.append((path, model, index))


def release_behind() -> int:
    """Start the queued writes (`store_soon`); how many."""
    with _pending_lock:
        queued = list(_behind)
        _behind.clear()
    for path, model, index in queued:
        store_soon(path, model, index)
    return len(queued)


def _write_behind_now() -> None:
    with _pending_lock:
        queued = list(_behind)
        _behind.clear()
    for path, model, index in queued:  # at exit: threads would no longer be waited for
        _write(path, model, index)


WRITER_NICE = 10


def _store_behind(path: Path | None, model: TraceModel, index) -> None:
    """`store` at a lower CPU priority of this thread only (Linux: a thread is a task with its own nice
    value): the write's page faults are system CPU that took a core from the window while it opened the
    trace (a 1.1 GB trace's open turn froze 221 ms beside it); nothing waits for it."""
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + WRITER_NICE))
    except (AttributeError, OSError):
        pass  # not Linux, or not allowed: the write goes at the caller's priority
    _write(path, model, index)


def flush(timeout: float | None = None) -> bool:
    """Wait for the background cache writes; True when none is left running."""
    with _pending_lock:
        threads = list(_pending)
    for t in threads:
        t.join(timeout)
    return not any(t.is_alive() for t in threads)


def evict(limit: int, keep: Path | None = None) -> int:
    """Remove least recently used entries (and stale temporaries of ours) until the cache is <= limit bytes."""
    root = cache_dir()
    return 0 if root is None else cache_evict.evict(root, limit, keep=keep)


def _field_names(cls) -> list[str]:
    if hasattr(cls, "COLUMNS"):  # SliceTable
        return list(cls.COLUMNS)
    from dataclasses import fields
    return [f.name for f in fields(cls)]
