"""Row selections by kind and by name that stay cheap at tens of millions of slices.

`np.isin(s.name, ids)` / `np.isin(s.kind, kinds)` make several passes and n-sized temporaries per call
(on the 10 GB trace's 37M slices, 16 such calls cost `ptprof info` 2.5 s). Here: the kind histogram is
counted once per model; rows of rare kinds (GPU work, runtime calls, CPU ops next to millions of Python
frames) are found in one pass and kept; names are tested through a boolean table indexed by string id, on
those rows only where the kinds are rare. A name predicate that matches no string costs nothing.
"""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from core.analysis.derived import cached
from core.trace.model import FlowKind, TraceModel

KEEP_ROWS_SHARE = 0.25  # selections up to this share of the slices are kept with the model


def _kinds_key(kinds: Iterable[int]) -> tuple[int, ...]:
    return tuple(sorted({int(k) for k in kinds}))


COUNT_PIECE_ROWS = 1 << 22  # np.bincount holds the GIL: in 4M-row pieces a window's UI thread gets a turn between


def kind_counts(model: TraceModel) -> np.ndarray:
    """Slices per kind code (length 256)."""
    def count() -> np.ndarray:
        kinds = model.slices.kind.view(np.uint8)
        out = np.zeros(256, np.int64)
        for a in range(0, len(kinds), COUNT_PIECE_ROWS):
            out += np.bincount(kinds[a:a + COUNT_PIECE_ROWS], minlength=256)
        return out
    return cached(model, "rows:kind_counts", count)


def kind_table(kinds: Iterable[int]) -> np.ndarray:
    """bool table over kind codes: True for `kinds`."""
    lut = np.zeros(256, dtype=bool)
    lut[np.asarray(_kinds_key(kinds), dtype=np.int64)] = True
    return lut


def kind_mask(model: TraceModel, kinds: Iterable[int]) -> np.ndarray:
    """Boolean mask over all slices: kind in `kinds` (one table lookup per row)."""
    return kind_table(kinds)[model.slices.kind.view(np.uint8)]


def _rare_rows(model: TraceModel) -> dict[int, np.ndarray]:
    """Rows of every rare kind (each at most KEEP_ROWS_SHARE of the slices), found in one pass and kept."""
    def compute() -> dict[int, np.ndarray]:
        counts = kind_counts(model)
        rare = [k for k in np.flatnonzero(counts).tolist() if counts[k] <= KEEP_ROWS_SHARE * len(model.slices)]
        if not rare:
            return {}
        kind = model.slices.kind.view(np.uint8)
        found = np.flatnonzero(kind_table(rare)[kind])
        if len(rare) == 1:
            return {rare[0]: found}
        found = found[np.argsort(kind[found], kind="stable")]  # grouped by kind, ascending rows in each
        bounds = np.cumsum([0] + [int(counts[k]) for k in rare])
        return {k: found[bounds[j]:bounds[j + 1]] for j, k in enumerate(rare)}
    return cached(model, "rows:rare", compute)


def kind_rows(model: TraceModel, kinds: Iterable[int]) -> np.ndarray:
    """Rows (int64, ascending) of the slices whose kind is in `kinds` (must not be written to). Rare kinds
    come from one pass per model; a set holding a common kind takes its own pass."""
    key = [k for k in _kinds_key(kinds) if 0 <= k < 256 and kind_counts(model)[k]]
    if not key:
        return np.zeros(0, dtype=np.int64)
    rare = _rare_rows(model)
    if all(k in rare for k in key):
        parts = [rare[k] for k in key]
        return parts[0] if len(parts) == 1 else np.sort(np.concatenate(parts))
    return np.flatnonzero(kind_table(key)[model.slices.kind.view(np.uint8)])


def name_table(model: TraceModel, ids: np.ndarray | Iterable[int]) -> np.ndarray:
    """bool table over string ids: True for `ids` (negative ids - strings never interned - ignored)."""
    ids = np.asarray(list(ids) if not isinstance(ids, np.ndarray) else ids, dtype=np.int64)
    lut = np.zeros(len(model.strings) + 1, dtype=bool)
    lut[ids[(ids >= 0) & (ids < len(lut))]] = True
    return lut


def named_rows(model: TraceModel, ids, kinds: Iterable[int] | None = None, column: str = "name") -> np.ndarray:
    """Rows (int64, ascending) whose `column` string id (name or cat) is in `ids` and, if given, whose kind is
    in `kinds`. Where the kinds are rare, only their rows are looked at."""
    lut = name_table(model, ids)
    if not lut.any():
        return np.zeros(0, dtype=np.int64)
    s = model.slices
    col = getattr(s, column)
    if kinds is not None:
        rare = _rare_rows(model)
        counts = kind_counts(model)
        if all(k in rare or not counts[k] for k in _kinds_key(kinds) if 0 <= k < 256):
            rows = kind_rows(model, kinds)
            return rows[lut[col[rows]]]
    rows = np.flatnonzero(lut[col])
    if kinds is not None:
        rows = rows[kind_table(kinds)[s.kind[rows].view(np.uint8)]]
    return rows


def named_rows_matching(model: TraceModel, predicate, kinds: Iterable[int] | None = None) -> np.ndarray:
    """named_rows of the names for which predicate(str) holds (no pass over the rows when none does)."""
    return named_rows(model, model.strings.ids_matching(predicate), kinds)


def launch_src_ts(model: TraceModel, rows: np.ndarray, missing: int) -> np.ndarray:
    """Per row of `rows`: the start of the CPU call whose LAUNCH flow ends at it (the last such flow, as a
    scatter over all slices would keep), else `missing`. Works over the flows, not over every slice."""
    f = model.flows
    launch = f.kind == FlowKind.LAUNCH
    dst = f.dst[launch]
    order = np.argsort(dst, kind="stable")
    dst, src = dst[order], f.src[launch][order]
    rows = np.asarray(rows, dtype=np.int64)
    out = np.full(len(rows), missing, dtype=np.int64)
    if not len(dst) or not len(rows):
        return out
    i = np.searchsorted(dst, rows, side="right") - 1
    hit = (i >= 0) & (dst[np.maximum(i, 0)] == rows)
    out[hit] = model.slices.ts_ns[src[i[hit]]]
    return out


def launch_ends(model: TraceModel, rows: np.ndarray, side: str = "dst") -> np.ndarray:
    """bool per row of `rows`: a LAUNCH flow ends (side "dst") or starts ("src") at it."""
    f = model.flows
    ends = getattr(f, side)[f.kind == FlowKind.LAUNCH]
    return np.isin(np.asarray(rows, dtype=np.int64), ends)
