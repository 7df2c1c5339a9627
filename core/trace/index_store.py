"""A timeline index (`query.SliceIndex`) kept in its model's cache entry, memory-mapped on reopen.

Building the index is a sort and three gathers over every slice: ~2 s and 1.2 GB of fresh pages for the
10 GB trace's 37M slices, most of a reopen of the window. So a big model's index (STORE_MIN_SLICES) is
written beside its columns: with a new entry (`cache.store(..., index=)`, inside the entry's temporary
folder, so it appears with it), or added to an entry that has none (`add`, by the loader child or behind
the window's after-open work). Files: `index.<array>.npy` for order / ts_ns / run_end_ns / group_ids /
bounds, and `index.json` written last (a reader sees an index only once it is whole).

As with the entry's columns, nothing is trusted on open (`open_index`): shapes and dtypes, fingerprints of
each array (core/trace/cache_check.py) and of the model columns it was built from (an index of another
build of the entry is stale), group bounds and ids, every row number in range, and a sample of
positions checked against the model (start time, group). An index that fails is removed and rebuilt -
a miss, never an error; the worst a hand-edited middle value can do is draw a slice in the wrong place.
"""
from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

import msgspec
import numpy as np

from core.env import env_int
from core.trace import cache_evict
from core.trace.cache_check import BadEntry, fingerprint, in_range, open_npy
from core.trace.model import TraceModel
from core.trace.query import SliceIndex, order_dtype
from core.trace.safefile import UnsafeFile, read_regular

log = logging.getLogger(__name__)

INDEX_FORMAT = 1
STORE_MIN_SLICES = 1 << 20  # smaller models build their index in < 0.1 s: not worth six more files
# (PTPROF_INDEX_MIN_SLICES overrides it: 0 keeps every index, e.g. to test the path on small traces)
MAX_INDEX_JSON_BYTES = 1 << 16
ARRAYS = ("order", "ts_ns", "run_end_ns", "group_ids", "bounds")
BUILT_FROM = ("ts_ns", "dur_ns", "track", "depth")  # the slice columns an index is a function of
SAMPLE = 4096  # positions checked against the model on open
_META = "index.json"
_TMP = ".tmp-index-"


def min_slices() -> int:
    return env_int("PTPROF_INDEX_MIN_SLICES", STORE_MIN_SLICES, lo=0, hi=1 << 62)


def worth_storing(model: TraceModel) -> bool:
    return len(model.slices) >= min_slices()


def files(folder: Path) -> list[Path]:
    return [folder / f"index.{name}.npy" for name in ARRAYS] + [folder / _META]


def has_index(folder: Path | None) -> bool:
    """Whether `folder` holds an index (anything under its index.json name: opening tells whether it is one)."""
    return folder is not None and os.path.lexists(folder / _META)


def _built_from(model: TraceModel) -> dict[str, str]:
    s = model.slices
    return {col: fingerprint(getattr(s, col)) for col in BUILT_FROM}


def write(folder: Path, index: SliceIndex, model: TraceModel) -> int:
    """Write `index` (of `model`) into `folder`: each array under a temporary name renamed into place,
    index.json last. Returns the bytes written. Raises OSError / ValueError."""
    arrays = index.arrays()
    total = 0
    mine = f"{_TMP}{os.getpid()}-{threading.get_ident()}-"  # two writers of one entry never share a temporary
    for name, arr in arrays.items():
        tmp = folder / f"{mine}{name}.npy"
        np.save(tmp, np.ascontiguousarray(arr), allow_pickle=False)
        os.replace(tmp, folder / f"index.{name}.npy")
        total += int(arr.nbytes)
    meta = {"format": INDEX_FORMAT, "n": len(model.slices), "n_depth": int(index.n_depth),
            "groups": len(index.group_ids), "built_from": _built_from(model),
            "prints": {name: fingerprint(arr) for name, arr in arrays.items()}}
    tmp = folder / f"{mine}{_META}"
    tmp.write_bytes(msgspec.json.encode(meta))
    os.replace(tmp, folder / _META)
    return total


def remove(folder: Path) -> None:
    """Drop an index from an entry of ours: its names only, whatever they are (a FIFO, a link itself - never
    what a link points to); a folder under one of its names is left alone."""
    if not cache_evict.is_entry(folder):
        return
    for f in files(folder):
        try:
            if os.path.lexists(f) and not cache_evict.is_real_dir(f):
                os.unlink(f)
        except OSError:
            pass


def remove_orphan(folder: Path) -> None:
    """An index written into an entry evicted meanwhile: its files (and the folder, once empty) go."""
    for f in files(folder):
        try:
            f.unlink()
        except OSError:
            pass
    try:
        folder.rmdir()
    except OSError:
        pass


def open_index(folder: Path, model: TraceModel) -> SliceIndex | None:
    """The index stored in `folder` for `model`, memory-mapped and checked; None when there is none or it
    is unusable (then removed)."""
    if not has_index(folder):
        return None
    try:
        return _read(folder, model)
    except UnsafeFile as exc:  # a FIFO, a link, a file too big: not an index of ours
        log.info("ignoring unusable index in %s (%s)", folder, exc)
        remove(folder)
        return None
    except (MemoryError, OSError) as exc:
        log.info("index in %s not readable now (%s): building it", folder, exc)
        return None
    except Exception as exc:  # noqa: BLE001 - a broken index is a miss, whatever broke it
        log.info("ignoring unusable index in %s (%s)", folder, exc)
        remove(folder)
        return None


def _read(folder: Path, model: TraceModel) -> SliceIndex:
    meta = msgspec.json.decode(read_regular(folder / _META, MAX_INDEX_JSON_BYTES, follow_symlinks=False))
    s = model.slices
    n = len(s)
    if not isinstance(meta, dict) or meta.get("format") != INDEX_FORMAT or meta.get("n") != n:
        raise BadEntry("index of another format or model")
    n_depth, k = meta.get("n_depth"), meta.get("groups")
    if not (_int(n_depth) and 1 <= n_depth <= 1 << 16 and _int(k) and 0 <= k <= n and (k > 0) == (n > 0)):
        raise BadEntry("bad index sizes")
    if meta.get("built_from") != _built_from(model):
        raise BadEntry("index built from other columns (stale)")
    shapes = {"order": n, "ts_ns": n, "run_end_ns": n, "group_ids": k, "bounds": k + 1}
    dtypes = {"order": order_dtype(n)}
    arrays = {}
    prints = meta.get("prints")
    if not isinstance(prints, dict):
        raise BadEntry("no index fingerprints")
    for name in ARRAYS:
        arr = open_npy(folder / f"index.{name}.npy", [shapes[name]])
        if arr.dtype != dtypes.get(name, np.dtype(np.int64)):
            raise BadEntry(f"index.{name}: dtype {arr.dtype}")
        if prints.get(name) != fingerprint(arr):
            raise BadEntry(f"index.{name}: not the array written there")
        arrays[name] = arr
    _check(arrays, model, n_depth)
    index = SliceIndex.from_arrays(model, n_depth, **arrays)
    index.stored = True
    return index


def _int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check(a: dict[str, np.ndarray], model: TraceModel, n_depth: int) -> None:
    """Bounds and ids of the groups, row numbers in range, and a sample of positions against the model."""
    s = model.slices
    n = len(s)
    bounds, gids = np.asarray(a["bounds"]), np.asarray(a["group_ids"])
    if int(bounds[0]) != 0 or int(bounds[-1]) != n or (len(bounds) > 1 and not bool((np.diff(bounds) > 0).all())):
        raise BadEntry("index.bounds: not group bounds")
    n_tracks = len(model.tracks)
    if len(gids) and (int(gids[0]) < 0 or int(gids[-1]) >= n_tracks * n_depth
                      or not bool((np.diff(gids) > 0).all())):
        raise BadEntry("index.group_ids: not increasing group ids")
    if not in_range(a["order"], 0, n):
        raise BadEntry("index.order: row out of range")
    if n == 0:
        return
    pos = np.unique(np.concatenate([np.linspace(0, n - 1, min(n, SAMPLE)).astype(np.int64),
                                    bounds[:-1][:SAMPLE], bounds[1:][:SAMPLE] - 1]))
    rows = np.asarray(a["order"][pos]).astype(np.int64)
    ts = np.asarray(a["ts_ns"][pos])
    if not np.array_equal(ts, s.ts_ns[rows]):
        raise BadEntry("index.ts_ns: not the start of its row")
    if bool((np.asarray(a["run_end_ns"][pos]) < ts + s.dur_ns[rows]).any()):
        raise BadEntry("index.run_end_ns: before the end of its row")
    g = np.searchsorted(bounds, pos, side="right") - 1
    want = s.track[rows].astype(np.int64) * n_depth + s.depth[rows]
    if not np.array_equal(gids[g], want):
        raise BadEntry("index.order: a row in another group")
