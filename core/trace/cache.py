"""Columnar cache: a loaded TraceModel as plain `.npy` files, memory-mapped on reopen.

One entry per source file, a directory named by a hash of (resolved path, size, mtime_ns,
FORMAT_VERSION) under `cache_dir()` ($PTPROF_CACHE_DIR, else the user cache dir, e.g.
~/.cache/ptprof). An entry holds `<table>.<column>.npy` for every column of every table, and
`entry.json` (source key, strings, meta, counts, warnings, column list). Writes go to a temporary
directory renamed into place, so readers never see half an entry; anything unreadable is treated as
a miss, deleted and rebuilt - never an error. The cache is bounded (PTPROF_CACHE_MAX_BYTES, default
5 GB): after each store the least recently used entries beyond the bound are removed.
"""
from __future__ import annotations

import hashlib
import logging
import os
import shutil
import sys
import tempfile
from dataclasses import asdict, fields
from pathlib import Path

import msgspec
import numpy as np

from core.trace.model import (
    CounterTable, EventCounts, FlowTable, InstantTable, MemoryTable, SliceTable, StepTable, TraceMeta,
    TraceModel, TrackTable,
)
from core.trace.strings import StringTable

log = logging.getLogger(__name__)

FORMAT_VERSION = 2  # bump when a column's meaning changes (added/removed columns invalidate by themselves)
DEFAULT_MAX_BYTES = 5 * 10**9
_ENTRY = "entry.json"
TABLES = {"slices": SliceTable, "tracks": TrackTable, "memory": MemoryTable, "instants": InstantTable,
          "counters": CounterTable, "flows": FlowTable, "steps": StepTable}


def cache_dir() -> Path:
    env = os.environ.get("PTPROF_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
        return base / "ptprof" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "ptprof"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ptprof"


def max_bytes() -> int:
    try:
        return int(float(os.environ.get("PTPROF_CACHE_MAX_BYTES", DEFAULT_MAX_BYTES)))
    except ValueError:
        return DEFAULT_MAX_BYTES


def source_key(path: Path) -> dict | None:
    try:
        p = Path(path).resolve()
        st = p.stat()
    except OSError:
        return None
    return {"path": str(p), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "format": FORMAT_VERSION}


def entry_dir(key: dict) -> Path:
    digest = hashlib.sha1(msgspec.json.encode(key)).hexdigest()[:24]
    return cache_dir() / digest


def load(path: Path) -> TraceModel | None:
    """The cached model of `path`, memory-mapped; None on a miss or an unusable entry."""
    key = source_key(path)
    if key is None:
        return None
    d = entry_dir(key)
    if not (d / _ENTRY).is_file():
        return None
    try:
        model = _read(d, key)
    except Exception as exc:  # noqa: BLE001 - a broken entry is a miss, whatever broke it
        log.info("ignoring unusable cache entry %s (%s)", d, exc)
        shutil.rmtree(d, ignore_errors=True)
        return None
    try:
        os.utime(d / _ENTRY)  # LRU clock
    except OSError:
        pass
    return model


def _read(d: Path, key: dict) -> TraceModel:
    entry = msgspec.json.decode((d / _ENTRY).read_bytes())
    if entry["key"] != key:
        raise ValueError("key mismatch")
    tables = {}
    for name, cls in TABLES.items():
        cols = {}
        for f in fields(cls):
            arr = np.load(d / f"{name}.{f.name}.npy", mmap_mode="r", allow_pickle=False)
            if arr.shape != tuple(entry["shapes"][name][f.name]):
                raise ValueError(f"{name}.{f.name}: wrong shape")
            cols[f.name] = arr
        tables[name] = cls(**cols)
    return TraceModel(
        path=entry["path"], rank=int(entry["rank"]), strings=StringTable(entry["strings"]),
        meta=TraceMeta.from_json(entry["meta"]), counts=EventCounts(**entry["counts"]),
        warnings=tuple(entry["warnings"]), **tables,
    )


def store(path: Path, model: TraceModel) -> bool:
    """Write `model` as the cache entry of `path`. Returns False (and logs) when it could not."""
    key = source_key(path)
    if key is None:
        return False
    root = cache_dir()
    final = entry_dir(key)
    tmp = None
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=root))
        shapes: dict[str, dict[str, list[int]]] = {}
        for name in TABLES:
            table = getattr(model, name)
            shapes[name] = {}
            for col, arr in table.columns().items():
                np.save(tmp / f"{name}.{col}.npy", np.ascontiguousarray(arr), allow_pickle=False)
                shapes[name][col] = list(arr.shape)
        entry = {"key": key, "path": model.path, "rank": model.rank, "strings": model.strings.to_list(),
                 "meta": model.meta.to_json(), "counts": asdict(model.counts), "warnings": list(model.warnings),
                 "shapes": shapes}
        (tmp / _ENTRY).write_bytes(msgspec.json.encode(entry))
        if final.exists():
            shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
        tmp = None
    except (OSError, TypeError, ValueError, msgspec.EncodeError) as exc:
        log.warning("could not write the trace cache in %s: %s", root, exc)
        return False
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    evict(max_bytes(), keep=final)
    return True


def evict(limit: int, keep: Path | None = None) -> int:
    """Remove least recently used entries (and stale temporaries) until the cache is <= limit bytes."""
    root = cache_dir()
    if not root.is_dir():
        return 0
    entries = []
    for d in root.iterdir():
        if not d.is_dir():
            continue
        try:
            size = sum(f.stat().st_size for f in d.iterdir())
            stamp = (d / _ENTRY).stat().st_mtime if (d / _ENTRY).exists() else d.stat().st_mtime
        except OSError:
            continue
        if d.name.startswith(".tmp-"):
            if stamp < _now() - 3600:  # a writer that died an hour ago
                shutil.rmtree(d, ignore_errors=True)
            continue
        entries.append((stamp, size, d))
    total = sum(e[1] for e in entries)
    removed = 0
    for _stamp, size, d in sorted(entries, key=lambda e: e[0]):
        if total <= limit:
            break
        if keep is not None and d == keep:
            continue
        shutil.rmtree(d, ignore_errors=True)
        total -= size
        removed += 1
    return removed


def _now() -> float:
    import time
    return time.time()
