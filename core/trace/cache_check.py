"""Nothing in a cache entry is trusted: the checks run on every open, before a model is handed out.

A few vectorized checks per column (dtype, length, id range), so an entry that was swapped, retyped
or edited is a miss (and rebuilt) instead of wrong data on screen or an IndexError later.
"""
from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import fields

import numpy as np
from numpy.lib import format as npy_format

from core.trace.model import (
    CounterTable,
    EventCounts,
    FlowKind,
    FlowTable,
    InstantTable,
    Kind,
    MemoryTable,
    SliceTable,
    StepTable,
    TrackKind,
    TrackTable,
)
from core.trace.sparse import Sparse

TABLES = {"slices": SliceTable, "tracks": TrackTable, "memory": MemoryTable, "instants": InstantTable,
          "counters": CounterTable, "flows": FlowTable, "steps": StepTable}

_I8, _I16, _I32, _I64 = np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.int32), np.dtype(np.int64)
# what core/trace/build.py writes (tests/core/trace/test_cache_hostile.py checks it against a fresh build)
DTYPES: dict[str, dict[str, np.dtype]] = {
    "slices": {"ts_ns": _I64, "dur_ns": _I64, "track": _I32, "name": _I32, "cat": _I32, "kind": _I8, "depth": _I16,
               "correlation": _I64, "external_id": _I64, "stream": _I32, "device": _I16, "bytes": _I64,
               "grid": _I32, "block": _I32, "registers": _I32, "occupancy": np.dtype(np.float32),
               "input_dims": _I32, "input_strides": _I32, "input_types": _I32, "call_stack": _I32,
               "python_id": _I64, "python_parent_id": _I64, "seq": _I64, "src_offset": _I64,
               "track_offsets": _I64, "max_dur_ns": _I64},
    "tracks": {"kind": _I8, "pid": _I64, "tid": _I64, "device": _I16, "label": _I32, "sort_index": _I64,
               "max_depth": _I16},
    "memory": {"ts_ns": _I64, "device": _I16, "device_type": _I8, "bytes": _I64, "total_allocated": _I64,
               "total_reserved": _I64, "addr": _I64, "track": _I32},
    "instants": {"ts_ns": _I64, "track": _I32, "name": _I32},
    "counters": {"ts_ns": _I64, "series": _I32, "value": np.dtype(np.float64)},
    "flows": {"src": _I64, "dst": _I64, "kind": _I8},
    "steps": {"number": _I64, "ts_ns": _I64, "dur_ns": _I64, "slice": _I64},
}
STRING_COLUMNS = {"slices": ("name", "cat", "grid", "block", "input_dims", "input_strides", "input_types",
                             "call_stack"),
                  "tracks": ("label",), "instants": ("name",), "counters": ("series",)}
TRACK_COLUMNS = {"slices": ("track",), "memory": ("track",), "instants": ("track",)}
_NO_TRACK_OK = {"memory", "instants"}  # global instants / untracked samples carry -1 (model.NONE)
_PER_TRACK = {"track_offsets": 1, "max_dur_ns": 0}  # slices columns sized by the track count (+1)


class BadEntry(ValueError):
    pass


# what np.save writes for a plain 1-d column; anything else goes through numpy's own (slower) parser
_HEADER = re.compile(rb"\{'descr': '([<>|=]?[iuf][1248])', 'fortran_order': (False|True), 'shape': \((\d+),\), \}")
MAP_FROM_BYTES = 1 << 20  # smaller columns are read (a copy costs < 0.1 ms); larger ones are memory-mapped


def _read_header(fh, name: str):
    """(shape, fortran, dtype) of an .npy header: the fixed layout np.save writes is read with one regex
    (numpy's parser runs ast.literal_eval: ~0.2 ms a column, 4 s for a 526-cycle bundle's 21,000)."""
    version = npy_format.read_magic(fh)
    if version == (1, 0):
        size = int.from_bytes(fh.read(2), "little")
    elif version in ((2, 0), (3, 0)):
        size = int.from_bytes(fh.read(4), "little")
    else:
        raise BadEntry(f"{name}: unknown .npy version {version}")
    if size > 1 << 16:
        raise BadEntry(f"{name}: .npy header of {size} bytes")
    raw = fh.read(size)
    m = _HEADER.match(raw)
    if m is not None and not raw[m.end():].strip():
        return (int(m.group(3)),), m.group(2) == b"True", np.dtype(m.group(1).decode())
    fh.seek(0)
    read = npy_format.read_array_header_1_0 if version == (1, 0) else npy_format.read_array_header_2_0
    npy_format.read_magic(fh)
    return read(fh)


def open_npy(path, shape) -> np.ndarray:
    """One `.npy` column, read-only: only a regular file, never a link, never blocking; no object dtype,
    and the file must be long enough for the header's shape. Columns under MAP_FROM_BYTES are read into
    memory and the file closed: a memory map keeps a descriptor open (CPython dups it), and a bundle of
    526 cycle files x 41 columns ran out of descriptors (EMFILE) at a 1,024 or even 20,000 limit."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        raise BadEntry(f"{path.name}: not a regular file")
    fh = os.fdopen(os.open(path, flags), "rb")
    with fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise BadEntry(f"{path.name}: not a regular file")
        header_shape, fortran, dtype = _read_header(fh, path.name)
        if dtype.hasobject or fortran or len(header_shape) != 1:
            raise BadEntry(f"{path.name}: not a plain 1-d column")
        if list(header_shape) != list(shape):
            raise BadEntry(f"{path.name}: wrong shape")
        offset = fh.tell()
        n = int(header_shape[0])
        nbytes = n * dtype.itemsize
        if os.fstat(fh.fileno()).st_size < offset + nbytes:
            raise BadEntry(f"{path.name}: file shorter than its header says")
        if n == 0:
            return np.empty(0, dtype)
        if nbytes < MAP_FROM_BYTES:
            data = fh.read(nbytes)
            if len(data) != nbytes:
                raise BadEntry(f"{path.name}: file shorter than its header says")
            return np.frombuffer(data, dtype=dtype)  # bytes-backed: read-only like a memmap
        return np.memmap(fh, dtype=dtype, mode="r", offset=offset, shape=(n,))


FINGERPRINT_ITEMS = 512  # from each end of a column


def fingerprint(arr: np.ndarray | Sparse) -> str:
    """Length, dtype and the first and last FINGERPRINT_ITEMS values of a column, hashed: two touched pages
    per column (a mapped column stays unread). Stored in entry.json, it tells a column swapped with
    another of the same type and range (name <-> cat, correlation <-> external_id) - which the range
    checks below let through, showing wrong names - from the column that was written there. A sparse
    column: its length, then its rows and its values the same way."""
    h = hashlib.blake2b(digest_size=8)
    parts = (arr.rows, arr.values) if isinstance(arr, Sparse) else (arr,)
    h.update(f"{len(arr)}:{arr.dtype.str}:".encode())
    for a in parts:
        h.update(f"{len(a)}:".encode())
        h.update(np.ascontiguousarray(a[:FINGERPRINT_ITEMS]).tobytes())
        h.update(np.ascontiguousarray(a[-FINGERPRINT_ITEMS:]).tobytes())
    return h.hexdigest()


def stored_columns(table) -> dict:
    """A table's columns as held (SliceTable: arrays and Sparse pairs; never builds a dense column)."""
    return table.stored() if hasattr(table, "stored") else table.columns()


def check_fingerprints(model, fingerprints) -> None:
    if not isinstance(fingerprints, dict):
        raise BadEntry("no column fingerprints")
    for name in TABLES:
        want = fingerprints.get(name)
        if not isinstance(want, dict):
            raise BadEntry(f"{name}: no column fingerprints")
        for col, arr in stored_columns(getattr(model, name)).items():
            if want.get(col) != fingerprint(arr):
                raise BadEntry(f"{name}.{col}: not the column written there (swapped or edited)")


def check_entry(entry, key: dict) -> None:
    """entry.json's own shape: the key, the strings, the shapes of every column."""
    if not isinstance(entry, dict) or entry.get("key") != key:
        raise BadEntry("key mismatch")
    strings = entry.get("strings")
    if not isinstance(strings, list) or not strings or strings[0] != "" or \
            not all(isinstance(s, str) for s in strings):
        raise BadEntry("bad string table")
    shapes = entry.get("shapes")
    if not isinstance(shapes, dict):
        raise BadEntry("no column shapes")
    for name, cols in DTYPES.items():
        got = shapes.get(name)
        if not isinstance(got, dict) or set(got) != set(cols):
            raise BadEntry(f"{name}: wrong column list")
        for col in cols:
            shape = got[col]
            if not (isinstance(shape, list) and len(shape) == 1 and isinstance(shape[0], int) and shape[0] >= 0):
                raise BadEntry(f"{name}.{col}: bad shape")
    sparse = entry.get("sparse")
    if not isinstance(sparse, dict) or set(sparse) - {"slices"} or not isinstance(sparse.get("slices", {}), dict):
        raise BadEntry("bad sparse column list")
    for col, k in sparse.get("slices", {}).items():
        if col not in SliceTable.SPARSE_COLUMNS or not isinstance(k, int) or isinstance(k, bool) or \
                not 0 <= k <= shapes["slices"][col][0]:
            raise BadEntry(f"slices.{col}: bad sparse column")
    _check_packed_layout(entry.get("packed"), shapes, sparse)
    if not isinstance(entry.get("warnings"), list) or not all(isinstance(w, str) for w in entry["warnings"]):
        raise BadEntry("bad warnings")
    _check_fields(entry)


_COUNT_FIELDS = frozenset(f.name for f in fields(EventCounts))


def _check_fields(entry: dict) -> None:
    """The scalar fields of entry.json, checked as the trace parser would have made them: counts are the
    EventCounts fields, each a count; the rank a plausible rank; the meta's wall clock a plausible time
    (sanitize.wall_clock_ns: 0 <= ns < 2^62) - a string count was a TypeError in `info`, a base of 2^100
    an OverflowError once shifted into int64 columns."""
    counts, meta = entry.get("counts"), entry.get("meta")
    if not isinstance(counts, dict) or set(counts) != _COUNT_FIELDS or not all(map(_is_count, counts.values())):
        raise BadEntry("bad counts")
    if not isinstance(meta, dict):
        raise BadEntry("bad meta")
    base = meta.get("base_unix_ns", 0)
    if not (_is_count(base) and base < 2**62):
        raise BadEntry("bad meta.base_unix_ns")
    version = meta.get("schema_version")
    if version is not None and not (_is_count(version) and version < 2**31):
        raise BadEntry("bad meta.schema_version")
    if not isinstance(meta.get("trace_name", ""), str):
        raise BadEntry("bad meta.trace_name")
    rank = entry.get("rank")
    if not (_is_count(rank) and rank < 2**31) or not isinstance(entry.get("path"), str):
        raise BadEntry("bad rank/path")


def _is_count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 62


def packed_stems(shapes: dict, sparse: dict) -> dict[str, int]:
    """{"<table>.<column>[.rows|.values]": element count} of every array an entry holds."""
    stems = {}
    for name, cols in DTYPES.items():
        pairs = sparse.get(name, {})
        for col in cols:
            if col in pairs:
                stems[f"{name}.{col}.rows"] = stems[f"{name}.{col}.values"] = pairs[col]
            else:
                stems[f"{name}.{col}"] = shapes[name][col][0]
    return stems


def packed_dtype(stem: str) -> np.dtype:
    """The schema's dtype of a packed array (a sparse column's rows are int64)."""
    name, col, *part = stem.split(".")
    return _I64 if part == ["rows"] else DTYPES[name][col]


def _check_packed_layout(packed, shapes: dict, sparse: dict) -> None:
    """entry.json "packed": None (one .npy per column), or {stem: [offset, count]} naming exactly the entry's
    arrays, each with its count, at an aligned offset (the file's length is checked when it is read)."""
    if packed is None:
        return
    want = packed_stems(shapes, sparse)
    if not isinstance(packed, dict) or set(packed) != set(want):
        raise BadEntry("bad packed column list")
    for stem, n in want.items():
        place = packed[stem]
        if not (isinstance(place, list) and len(place) == 2 and _is_count(place[0]) and _is_count(place[1])):
            raise BadEntry(f"{stem}: bad packed place")
        if place[1] != n or place[0] % packed_dtype(stem).itemsize:
            raise BadEntry(f"{stem}: packed count or alignment wrong")


def packed_bytes(entry: dict) -> int:
    """How long the packed file of a (checked) entry is at most: the end of its last array, padded."""
    ends = [off + n * packed_dtype(stem).itemsize for stem, (off, n) in entry["packed"].items()]
    return max(ends, default=0) + 8


def packed_column(buf: bytes, packed: dict, stem: str, n: int) -> np.ndarray:
    """One array of a packed entry, a read-only view of the file's bytes (placed by `_check_packed_layout`)."""
    offset, count = packed[stem]
    dtype = packed_dtype(stem)
    if count != n or offset + count * dtype.itemsize > len(buf):
        raise BadEntry(f"{stem}: outside the packed file")
    return np.frombuffer(buf, dtype=dtype, count=count, offset=offset)


_PIECE = 1 << 18  # elements per piece: min and max of a piece read it once from memory, once from cache


def in_range(arr: np.ndarray, lo: int, hi: int) -> bool:
    """Every value in [lo, hi) (an empty column passes). In cache-sized pieces: a reopen of a 37M-row
    model reads ~2 GB of columns, and two whole-column passes (min, then max) read it twice."""
    arr = arr.view(np.ndarray)
    for a in range(0, len(arr), _PIECE):
        piece = arr[a:a + _PIECE]
        if int(piece.min()) < lo or int(piece.max()) >= hi:
            return False
    return True


def _sorted_within_tracks(ts: np.ndarray, offsets: np.ndarray) -> bool:
    """ts may only go back where a new track starts (rows sorted by (track, ts)); in pieces, without
    an n-sized diff."""
    ts = ts.view(np.ndarray)
    for a in range(1, len(ts), _PIECE):
        b = min(len(ts), a + _PIECE)
        back = np.flatnonzero(ts[a:b] < ts[a - 1:b - 1])
        if len(back) and not np.isin(back + a, offsets).all():
            return False
    return True


def _values(arr):
    return arr.values if isinstance(arr, Sparse) else arr


def _check_pairs(name: str, sp: Sparse) -> None:
    """A sparse column's rows: int64, strictly increasing, in [0, n), one per value (in pieces)."""
    rows = sp.rows.view(np.ndarray)
    if rows.dtype != _I64 or len(rows) != len(sp.values) or len(rows) > sp.n:
        raise BadEntry(f"{name}: bad sparse rows")
    if len(rows) and (int(rows[0]) < 0 or int(rows[-1]) >= sp.n):
        raise BadEntry(f"{name}: sparse row out of range")
    for a in range(1, len(rows), _PIECE):
        b = min(len(rows), a + _PIECE)
        if not bool((rows[a:b] > rows[a - 1:b - 1]).all()):
            raise BadEntry(f"{name}: sparse rows not increasing")


def check_model(model, n_strings: int) -> None:
    """dtypes, equal lengths, id ranges and the track index of a model read from the cache."""
    n_tracks = len(model.tracks.kind)
    n_slices = len(model.slices.ts_ns)
    for name, cols in DTYPES.items():
        table = getattr(model, name)
        held = stored_columns(table)
        lengths = set()
        for col, dtype in cols.items():
            arr = held[col]
            if arr.dtype != dtype:
                raise BadEntry(f"{name}.{col}: dtype {arr.dtype}, expected {dtype}")
            if isinstance(arr, Sparse):
                _check_pairs(f"{name}.{col}", arr)
            if name == "slices" and col in _PER_TRACK:
                if len(arr) != n_tracks + _PER_TRACK[col]:
                    raise BadEntry(f"slices.{col}: length does not match the tracks")
            else:
                lengths.add(len(arr))
        if len(lengths) > 1:
            raise BadEntry(f"{name}: columns of different lengths")
        for col in STRING_COLUMNS.get(name, ()):
            if not in_range(_values(held[col]), 0, n_strings):
                raise BadEntry(f"{name}.{col}: string id out of range")
        for col in TRACK_COLUMNS.get(name, ()):
            if not in_range(_values(held[col]), -1 if name in _NO_TRACK_OK else 0, n_tracks):
                raise BadEntry(f"{name}.{col}: track id out of range")
    offsets = model.slices.track_offsets
    if offsets[0] != 0 or offsets[-1] != n_slices or (n_tracks and bool(np.any(np.diff(offsets) < 0))):
        raise BadEntry("slices.track_offsets: not a track index")
    _check_times(model)
    if not _sorted_within_tracks(model.slices.ts_ns, offsets):
        raise BadEntry("slices.ts_ns: not sorted within its tracks")
    if not in_range(model.slices.kind, 0, max(Kind) + 1) or not in_range(model.tracks.kind, 0, max(TrackKind) + 1):
        raise BadEntry("kind out of range")
    flows = model.flows
    if not (in_range(flows.src, 0, n_slices) and in_range(flows.dst, 0, n_slices)
            and in_range(flows.kind, 0, max(FlowKind) + 1)):
        raise BadEntry("flows: slice id out of range")
    if not in_range(model.steps.slice, -1, n_slices):
        raise BadEntry("steps.slice: slice id out of range")


def _check_times(model) -> None:
    """Times as the parser leaves them (core/trace/sanitize.py: every event within max_span_us of the rest,
    no duration longer): durations in [0, span], times in [-2 span, 2 span] ns of the file's origin. An entry
    stored with a dur_ns of 2^62 (fingerprints right) overflowed int64 sums in the rules."""
    from core.trace.limits import limits
    span_ns = int(limits()["time"]["max_span_us"]) * 1000
    for name, col in (("slices", "dur_ns"), ("slices", "max_dur_ns"), ("steps", "dur_ns")):
        if not in_range(getattr(getattr(model, name), col), 0, span_ns + 1):
            raise BadEntry(f"{name}.{col}: negative durations or one longer than the parser keeps")
    for name in ("slices", "steps", "memory", "instants", "counters"):
        if not in_range(getattr(model, name).ts_ns, -2 * span_ns, 2 * span_ns + 1):
            raise BadEntry(f"{name}.ts_ns: a time the parser never keeps")
