"""Sparse slice columns: an arg column held as its present (row, value) pairs.

Most of a slice's arg columns are missing on most rows: on a with_stack trace ~98 % of the rows are
Python frames, which carry no correlation, external id, bytes, grid, block, registers, occupancy,
input dims/strides/types, call stack or sequence number. Held dense, those columns were 272 of the
512 MB of a 1.1 GB trace's model (4.1M rows) and every byte of them a fresh page written with the
fill value. A column whose present rows are few is kept as `Sparse` instead (`sparsify` decides,
`SliceTable` hands out values: `SliceTable.at(name, rows)` reads the pairs; the plain attribute
materializes the dense column once, for code that needs the whole column).

"Present" means the value differs from the column's fill (NaN counts as the fill of a float column):
a row that carried the fill value explicitly reads back the same either way.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# kept sparse when the pairs take at most this share of the dense column's bytes
MAX_SPARSE_SHARE = 0.5


@dataclass(frozen=True, slots=True, eq=False)
class Sparse:
    """n rows; `rows` (int64, strictly increasing, in [0, n)) hold `values`; every other row is `fill`."""

    n: int
    rows: np.ndarray
    values: np.ndarray
    fill: float | int

    @property
    def dtype(self) -> np.dtype:
        return self.values.dtype

    @property
    def nbytes(self) -> int:
        return int(self.rows.nbytes + self.values.nbytes)

    def __len__(self) -> int:
        return self.n

    def dense(self) -> np.ndarray:
        out = np.full(self.n, self.fill, dtype=self.values.dtype) if self.fill != 0 else \
            np.zeros(self.n, dtype=self.values.dtype)  # calloc: pages no value lands on are never touched
        out[self.rows] = self.values
        return out

    def take(self, rows):
        """The values at `rows` (an int, an int array or a bool mask over all n rows), as indexing the
        dense column would give them (a numpy scalar for an int)."""
        if isinstance(rows, (int, np.integer)):
            r = int(rows)
            if r < 0:
                r += self.n
            if not 0 <= r < self.n:
                raise IndexError(f"row {rows} out of range for {self.n} rows")
            i = int(np.searchsorted(self.rows, r))
            if i < len(self.rows) and int(self.rows[i]) == r:
                return self.values[i]
            return self.values.dtype.type(self.fill)
        rows = np.asarray(rows)
        if rows.dtype == bool:
            if rows.shape != (self.n,):
                raise IndexError(f"boolean index of shape {rows.shape} for {self.n} rows")
            rows = np.flatnonzero(rows)
        elif rows.dtype.kind not in "iu":
            raise IndexError(f"rows of dtype {rows.dtype}")
        rows = rows.astype(np.int64, copy=False)
        if len(rows) and (int(rows.min()) < -self.n or int(rows.max()) >= self.n):
            raise IndexError(f"row out of range for {self.n} rows")
        rows = np.where(rows < 0, rows + self.n, rows)
        out = np.full(rows.shape, self.fill, dtype=self.values.dtype)
        if len(self.rows) and rows.size:
            pos = np.minimum(np.searchsorted(self.rows, rows), len(self.rows) - 1)
            hit = self.rows[pos] == rows
            out[hit] = self.values[pos[hit]]
        return out


def present(values: np.ndarray, fill) -> np.ndarray:
    """Bool per value: not the fill (NaN is the fill of a float column)."""
    if isinstance(fill, float) and np.isnan(fill):
        return ~np.isnan(values)
    return values != fill


def worth_it(n: int, k: int, dtype) -> bool:
    """Are k pairs of this dtype (int64 row + value) small enough against n dense values?"""
    item = np.dtype(dtype).itemsize
    return k * (8 + item) <= MAX_SPARSE_SHARE * n * item


def pairs(rows: np.ndarray, values: np.ndarray, fill, dtype) -> tuple[np.ndarray, np.ndarray]:
    """(rows, values) as a Sparse holds them: the fill dropped, rows ascending and unique (where a row
    repeats the last pair wins, as a scatter into the dense column would)."""
    rows = np.asarray(rows, dtype=np.int64)
    values = np.asarray(values).astype(dtype, copy=False)
    keep = present(values, fill)
    if not keep.all():
        rows, values = rows[keep], values[keep]
    if len(rows) > 1 and not bool((rows[1:] > rows[:-1]).all()):
        order = np.argsort(rows, kind="stable")
        rows, values = rows[order], values[order]
        last = np.ones(len(rows), dtype=bool)
        last[:-1] = rows[1:] != rows[:-1]
        if not last.all():
            rows, values = rows[last], values[last]
    return np.ascontiguousarray(rows), np.ascontiguousarray(values)


def values_at(rows: np.ndarray, values: np.ndarray, at: np.ndarray, fill, dtype) -> np.ndarray:
    """The values of the (ascending, unique) pairs at rows `at`, fill where none."""
    out = np.full(len(at), fill, dtype=dtype)
    if len(rows) and len(at):
        pos = np.minimum(np.searchsorted(rows, at), len(rows) - 1)
        hit = rows[pos] == at
        out[hit] = values[pos[hit]]
    return out


def from_pairs(n: int, rows: np.ndarray, values: np.ndarray, fill, dtype) -> Sparse | np.ndarray:
    """The column of n rows with values at rows (any order; where a row repeats the last pair wins,
    as a scatter into the dense column would): Sparse when worth it, else the dense column."""
    rows, values = pairs(rows, values, fill, dtype)
    if not worth_it(n, len(rows), dtype):
        out = np.zeros(n, dtype=dtype) if fill == 0 else np.full(n, fill, dtype=dtype)
        out[rows] = values
        return out
    return Sparse(n, rows, values, fill)


def sparsify(col: np.ndarray, fill) -> Sparse | np.ndarray:
    """A dense column as Sparse when its present values are few enough, else itself."""
    keep = present(col, fill)
    k = int(np.count_nonzero(keep))
    if not worth_it(len(col), k, col.dtype):
        return col
    rows = np.flatnonzero(keep)
    return Sparse(len(col), rows, np.ascontiguousarray(col[rows]), fill)
