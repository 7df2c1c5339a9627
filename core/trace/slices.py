"""`SliceTable`: the model's slice columns (one row per complete event), dense arrays or `Sparse` pairs.

Split from model.py (the rest of the model's tables); model.py re-exports it with NONE.
"""
from __future__ import annotations

import threading

import numpy as np

from core.trace.sparse import Sparse, present as sparse_present

NONE = -1  # "missing" in integer arg columns


class SliceTable:
    """One row per complete event (ph X, or a matched B/E pair).

    Every column reads as a numpy array of len(self) rows (`s.name`, `s.grid`, ...). The arg columns in
    SPARSE_COLUMNS may be held as `Sparse` pairs (core/trace/sparse.py: most rows of a with_stack trace
    carry none of them); reading such a column as an attribute builds its dense array once (then kept).
    Code that needs only some rows reads `s.at(name, rows)` and `s.present_rows(name)`, which never
    build it. Immutable, like the rest of the model: `with_columns` makes a changed copy.
    """

    COLUMNS = ("ts_ns", "dur_ns", "track", "name", "cat", "kind", "depth", "correlation", "external_id", "stream",
               "device", "bytes", "grid", "block", "registers", "occupancy", "input_dims", "input_strides",
               "input_types", "call_stack", "python_id", "python_parent_id", "seq", "src_offset",
               "track_offsets", "max_dur_ns")
    # ts_ns int64; dur_ns int64 (>= 0); track int32 row in TrackTable; name, cat int32 string ids (cat: the
    # raw category); kind int8 Kind; depth int16 nesting depth on CPU tracks, sub-row (lane) on GPU tracks;
    # correlation, external_id int64; stream int32; device int16; bytes int64 (memcpy/memset); grid, block
    # int32 string ids ("[x, y, z]"); registers int32 per thread; occupancy float32 est. achieved occupancy
    # % (NaN if absent); input_dims / input_strides / input_types int32 string ids of the raw JSON text;
    # call_stack int32 string id ("Call stack", experimental_config verbose); python_id, python_parent_id,
    # seq (autograd sequence number), src_offset (byte offset of the event in its file's JSON) int64.
    # Integer args are NONE and string ids 0 where absent (FILL). Per track: track_offsets int64, n_tracks + 1
    # (rows of track t are [off[t], off[t+1])); max_dur_ns int64, the longest slice (for range culling).
    SPARSE_COLUMNS = ("correlation", "external_id", "stream", "device", "bytes", "grid", "block", "registers",
                      "occupancy", "input_dims", "input_strides", "input_types", "call_stack", "python_id",
                      "python_parent_id", "seq", "src_offset")
    FILL: dict[str, float | int] = {c: NONE for c in SPARSE_COLUMNS} | {
        "occupancy": float("nan"), "grid": 0, "block": 0, "input_dims": 0, "input_strides": 0, "input_types": 0,
        "call_stack": 0}

    __slots__ = ("_stored", "_dense", "_lock", "__weakref__")

    def __init__(self, **cols) -> None:
        missing = [c for c in self.COLUMNS if c not in cols]
        extra = [c for c in cols if c not in self.COLUMNS]
        if missing or extra:
            raise TypeError(f"SliceTable columns: missing {missing}, unexpected {extra}")
        for c, v in cols.items():
            if isinstance(v, Sparse) and c not in self.SPARSE_COLUMNS:
                raise TypeError(f"SliceTable.{c} cannot be sparse")
        object.__setattr__(self, "_stored", {c: cols[c] for c in self.COLUMNS})
        object.__setattr__(self, "_dense", {})
        object.__setattr__(self, "_lock", threading.Lock())

    def __setattr__(self, name, value):
        raise AttributeError("SliceTable is immutable (use with_columns)")

    def __len__(self) -> int:
        return len(self._stored["ts_ns"])

    def __repr__(self) -> str:
        return f"SliceTable({len(self)} rows, sparse: {sorted(self.sparse_names())})"

    def _column(self, name: str) -> np.ndarray:
        v = self._stored[name]
        if not isinstance(v, Sparse):
            return v
        d = self._dense.get(name)
        if d is None:
            with self._lock:  # one build per column, whichever thread asks first
                d = self._dense.get(name)
                if d is None:
                    d = v.dense()
                    d.flags.writeable = False
                    self._dense[name] = d
        return d

    def at(self, name: str, rows):
        """Column `name` at rows (an int, an int array or a bool mask), as `getattr(self, name)[rows]`
        gives it, without building a sparse column's dense array."""
        v = self._stored[name]
        if isinstance(v, Sparse) and name not in self._dense:
            return v.take(rows)
        return self._column(name)[rows]

    def present_rows(self, name: str) -> np.ndarray:
        """Rows (int64, ascending) where an arg column holds a value (not its FILL)."""
        v = self._stored[name]
        if isinstance(v, Sparse):
            return v.rows
        return np.flatnonzero(sparse_present(v, self.FILL[name])) if name in self.FILL else np.arange(len(v))

    def sparse(self, name: str) -> Sparse | None:
        v = self._stored[name]
        return v if isinstance(v, Sparse) else None

    def sparse_names(self) -> list[str]:
        return [c for c, v in self._stored.items() if isinstance(v, Sparse)]

    def materialized(self) -> list[str]:
        """Sparse columns whose dense array has been built (tests keep the rules and panels off them)."""
        return list(self._dense)

    def stored(self) -> dict[str, np.ndarray | Sparse]:
        """The columns as held: arrays, and Sparse pairs (the cache writes these)."""
        return dict(self._stored)

    @property
    def nbytes(self) -> int:
        return sum(int(v.nbytes) for v in self._stored.values())

    @property
    def end_ns(self) -> np.ndarray:
        return self.ts_ns + self.dur_ns

    def columns(self) -> dict[str, np.ndarray]:
        """Every column dense (builds the sparse ones)."""
        return {c: self._column(c) for c in self.COLUMNS}

    def with_columns(self, **cols) -> SliceTable:
        return SliceTable(**(self._stored | cols))

    def __reduce__(self):  # the loader child pickles a model when the cache is off: the columns as held
        return (_slice_table, (self._stored,))


def _slice_table(stored: dict) -> SliceTable:
    return SliceTable(**stored)


def _slice_column(name: str) -> property:
    return property(lambda self: self._column(name), doc=f"column {name} (dense)")


for _c in SliceTable.COLUMNS:
    setattr(SliceTable, _c, _slice_column(_c))
del _c
