"""Chunk columns (from workers, in file order) -> one set of columns on one global StringTable.

Each chunk's string ids are remapped with one `intern_many` over its (unique) strings and one numpy
take per string column; string-coded pids/tids/flow ids become small negative ids. B/E pairs become
complete rows here (a per-event loop over only the B/E rows, which are rare in Kineto traces).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from core.trace.columns import (
    ARG_FILL,
    FLOAT_ARGS,
    INT_ARGS,
    PH_B,
    PH_X,
    STR_ARGS,
    STR_CODE_BASE,
    ChunkColumns,
    as_sparse,
)
from core.trace.strings import StringTable
from core.trace.timens import NS_HIGH


@dataclass
class Merged:
    strings: StringTable
    rows: dict[str, np.ndarray]  # ts, dur (int64 ns as written; timens.NS_MISSING = no dur), name, cat, kind, pid, tid
    # arg columns: sparse (row index, value), rows ascending, or dense (None, value per row; see ARG_FILL)
    args: dict[str, tuple[np.ndarray | None, np.ndarray]]
    instants: dict[str, np.ndarray]
    memory: dict[str, np.ndarray]
    flows: dict[str, np.ndarray]
    counters: dict[str, np.ndarray]
    metadata: list[tuple]
    n_events: int = 0
    skipped: int = 0
    warnings: list[str] = field(default_factory=list)


class _CodeMap:
    """STR_CODE_BASE - global sid -> -1, -2, ... in order of first appearance."""

    def __init__(self) -> None:
        self.map: dict[int, int] = {}

    def __call__(self, codes: np.ndarray, remap: np.ndarray) -> np.ndarray:
        s = codes <= STR_CODE_BASE
        if not s.any():
            return codes
        codes = codes.copy()
        gsid = remap[STR_CODE_BASE - codes[s]]
        for g in dict.fromkeys(gsid.tolist()):
            self.map.setdefault(g, -1 - len(self.map))
        codes[s] = np.fromiter((self.map[g] for g in gsid.tolist()), dtype=np.int64, count=len(gsid))
        return codes


def _concat(parts: list[np.ndarray], dtype) -> np.ndarray:
    if not parts:
        return np.zeros(0, dtype=dtype)
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


_STR_COLS = {"rows": ("name", "cat"), "instants": ("name",), "flows": ("cat",), "counters": ("series",), "memory": ()}
_CODE_COLS = {"rows": ("pid", "tid"), "instants": ("pid", "tid"), "memory": ("pid", "tid"),
              "flows": ("pid", "tid", "id"), "counters": ()}


class Merger:
    """Takes chunk columns in file order as they arrive (so remapping overlaps the workers' decoding
    and each chunk's string list is dropped early); `finish()` concatenates.

    The row columns (nearly all the data) are written straight into their final arrays at the chunk's
    row offset instead of being kept per chunk and concatenated: each byte of them is copied once
    and touches fresh memory once (first-touching memory is most of a big load's system time here).
    The arrays are sized from `expect_rows` (an estimate; grown by half when it falls short) and
    handed out as views of their first n_rows rows (the untouched tail costs no RSS)."""

    def __init__(self, expect_rows: int = 0) -> None:
        self.strings = StringTable()
        self.codes = _CodeMap()
        self.parts: dict[str, dict[str, list]] = {t: {} for t in _STR_COLS}
        self.rows: dict[str, np.ndarray] = {}
        self.expect_rows = expect_rows
        self.arg_parts: dict[str, list] = {}
        self.metadata: list[tuple] = []
        self.warnings: list[str] = []
        self.n_rows = self.n_events = self.skipped = self.n_chunks = 0

    def _row_room(self, ch: ChunkColumns, n: int) -> None:
        """Room for n more rows in every row column (allocated on the first chunk, grown when short)."""
        need = self.n_rows + n
        cap = len(next(iter(self.rows.values()))) if self.rows else 0
        if self.rows and need <= cap and self.rows.keys() == ch.rows.keys() and \
                all(np.can_cast(col.dtype, self.rows[k].dtype) for k, col in ch.rows.items()):
            return
        new_cap = max(need, self.expect_rows, cap + cap // 2 if need > cap else cap)
        for name, col in ch.rows.items():
            old = self.rows.get(name)
            dtype = np.result_type(old.dtype, col.dtype) if old is not None else col.dtype
            if old is not None and len(old) >= need and old.dtype == dtype:
                continue
            arr = np.empty(new_cap, dtype=dtype)
            if old is not None:
                arr[:self.n_rows] = old[:self.n_rows]
            self.rows[name] = arr

    def add(self, ch: ChunkColumns) -> None:
        remap = self.strings.intern_many(ch.strings)
        n = len(ch.rows["ts"])
        self._row_room(ch, n)
        a, b = self.n_rows, self.n_rows + n
        for name, col in ch.rows.items():
            out = self.rows[name][a:b]
            if name in _STR_COLS["rows"]:
                np.take(remap, col, out=out)
            elif name in _CODE_COLS["rows"]:
                out[:] = self.codes(col, remap)
            else:
                out[:] = col
        for table in _STR_COLS:
            if table == "rows":
                continue
            for name, col in getattr(ch, table).items():
                if name in _STR_COLS[table]:
                    col = remap[col]
                elif name in _CODE_COLS[table]:
                    col = self.codes(col, remap)
                self.parts[table].setdefault(name, []).append(col)
        for name, (idx, vals) in ch.args.items():
            if name in STR_ARGS:
                vals = remap[vals]
            self.arg_parts.setdefault(name, []).append((self.n_rows, idx, vals))
        for name, pid, tid, arg_name, sort_index, labels in ch.metadata:
            pt = self.codes(np.array([pid, tid], dtype=np.int64), remap)
            self.metadata.append((name, int(pt[0]), int(pt[1]), arg_name, sort_index, labels))
        self.n_rows += len(ch.rows["ts"])
        self.n_events += ch.n_events
        self.skipped += ch.skipped
        self.warnings.extend(ch.warnings)
        self.n_chunks += 1

    def finish(self) -> Merged:
        tables = {}
        for table, cols in self.parts.items():  # each column's parts freed once it is concatenated
            tables[table] = {name: _concat(p, p[0].dtype) for name, p in _drain(cols)}
        tables["rows"] = {name: col[:self.n_rows] for name, col in self.rows.items()}
        self.parts = {}
        self.rows = {}
        args = {}
        for name, (dtype, _) in {**INT_ARGS, **FLOAT_ARGS}.items():
            args[name] = _arg_concat(name, self.arg_parts.pop(name, []), dtype, self.n_rows)
        for name in STR_ARGS:
            args[name] = _arg_concat(name, self.arg_parts.pop(name, []), np.int32, self.n_rows)
        args["src_offset"] = _arg_concat("src_offset", self.arg_parts.pop("src_offset", []), np.int64,
                                         self.n_rows)  # scanner only
        self.arg_parts = {}
        m = Merged(strings=self.strings, rows=tables["rows"], args=args, instants=tables["instants"],
                   memory=tables["memory"], flows=tables["flows"], counters=tables["counters"],
                   metadata=self.metadata, n_events=self.n_events, skipped=self.skipped, warnings=self.warnings)
        if not self.n_chunks:
            return _empty(m)
        if (m.rows["ph"] != PH_X).any():
            _pair_begin_end(m)
        return m


def _drain(cols: dict):
    """(name, parts) of `cols`, each entry removed before it is handed out (its parts die with the
    caller's use of them, not at the end of the whole loop)."""
    while cols:
        name = next(iter(cols))
        yield name, cols.pop(name)


def merge_chunks(chunks: list[ChunkColumns]) -> Merged:
    merger = Merger(sum(len(ch.rows["ts"]) for ch in chunks))
    for ch in chunks:
        merger.add(ch)
    return merger.finish()


class DenseParts:
    """A dense arg column still in its chunks' pieces (in row order). The build scatters each piece
    straight into sorted order (`dense`), so the column is never concatenated: on a with_stack trace
    the dense columns (python ids, offsets) are 24 bytes a row, and a concatenation would first-touch
    that much fresh memory only to be copied again and freed."""

    __slots__ = ("parts", "dtype")

    def __init__(self, parts: list[np.ndarray], dtype) -> None:
        self.parts = parts
        self.dtype = np.dtype(dtype)

    def __len__(self) -> int:
        return sum(len(p) for p in self.parts)

    def concat(self) -> np.ndarray:
        return _concat(self.parts, self.dtype).astype(self.dtype, copy=False)


def values(vals) -> np.ndarray:
    """The values of an arg column as one array (a DenseParts is concatenated)."""
    return vals.concat() if isinstance(vals, DenseParts) else vals


def _arg_concat(name: str, parts: list, dtype, n_rows: int) -> tuple[np.ndarray | None, np.ndarray | DenseParts]:
    """One arg column from the chunks' (first row, index, values) parts: dense pieces (no index
    column) when the chunks that ship it dense hold at least half the rows, else sparse pairs."""
    covered = sum(len(vals) for _, idx, vals in parts if idx is None)
    if parts and covered * 2 >= n_rows:
        return None, _densified(name, parts, dtype, n_rows)
    pairs = [(first, *as_sparse(name, (idx, vals))) for first, idx, vals in parts]
    parts.clear()
    if not pairs:
        return np.zeros(0, np.int64), np.zeros(0, dtype)
    return (_concat([idx.astype(np.int64) + first for first, idx, _ in pairs], np.int64),
            _concat([vals for _, _, vals in pairs], dtype).astype(dtype, copy=False))


def _densified(name: str, parts: list, dtype, n_rows: int) -> DenseParts:
    """Dense pieces over rows [0, n_rows) from (first row, index or None, values) parts in row order:
    a sparse part is spread over its chunk's rows (up to the next part's first row) with the arg's
    fill value, as the scanner writes a missing value in a dense chunk; rows before or after the
    parts get the fill too. A with_stack trace's python ids are dense in nearly every chunk; one
    chunk of CPU ops would otherwise turn the whole column into (index, value) pairs: twice its size,
    concatenated, then scattered into a filled column (10 GB trace: ~1.2 GB of fresh memory)."""
    fill = ARG_FILL[name]
    out: list[np.ndarray] = []
    ends = [first for first, _, _ in parts[1:]] + [n_rows]
    if parts[0][0] > 0:
        out.append(np.full(parts[0][0], fill, dtype=dtype))
    for (first, idx, vals), end in zip(parts, ends):
        if idx is None:
            out.append(vals)
            if first + len(vals) < end:
                out.append(np.full(end - first - len(vals), fill, dtype=dtype))
        else:
            piece = np.full(end - first, fill, dtype=dtype)
            piece[idx] = vals
            out.append(piece)
    parts.clear()
    return DenseParts(out, dtype)


def dense(arg: tuple, n: int, fill, positions: np.ndarray | None = None) -> np.ndarray:
    """Dense column of n rows from (row index, value) pairs or a dense (None, values) column;
    `positions` maps row -> output row."""
    idx, vals = arg
    if idx is None:
        if positions is None:
            return values(vals)
        out = np.empty(n, dtype=vals.dtype)
        if isinstance(vals, DenseParts):  # each piece straight to its sorted rows, freed as it goes
            a, parts, vals.parts = 0, vals.parts, []
            while parts:
                part = parts.pop(0)
                out[positions[a:a + len(part)]] = part
                a += len(part)
            return out
        out[positions] = vals
        return out
    # zeros come from calloc: pages a sparse column never writes are not touched (string-id args)
    out = np.zeros(n, dtype=vals.dtype) if fill == 0 else np.full(n, fill, dtype=vals.dtype)
    out[idx if positions is None else positions[idx]] = vals
    return out


def _empty(m: Merged) -> Merged:
    z64, z32 = np.zeros(0, np.int64), np.zeros(0, np.int32)
    m.rows = {"ph": np.zeros(0, np.int8), "ts": z64, "dur": z64, "name": z32, "cat": z32,
              "kind": np.zeros(0, np.int8), "pid": z64, "tid": z64}
    return m


def _pair_begin_end(m: Merged) -> None:
    """Turn B/E pairs into complete rows (per pid/tid stack, in time order); drop the E rows."""
    r = m.rows
    ph, ts = r["ph"], r["ts"]
    be = np.flatnonzero(ph != PH_X)
    order = be[np.lexsort(((ph[be] == PH_B).astype(np.int8), ts[be]))]  # at equal ts: E before B
    stacks: dict[tuple, list[int]] = {}
    dur = r["dur"]
    keep = ph == PH_X
    unmatched = 0
    pids, tids, phs = r["pid"], r["tid"], ph
    for i in order.tolist():
        key = (int(pids[i]), int(tids[i]))
        if phs[i] == PH_B:
            stacks.setdefault(key, []).append(i)
            continue
        st = stacks.get(key)
        if not st:
            unmatched += 1
            continue
        b = st.pop()
        dur[b] = min(max(0, int(ts[i]) - int(ts[b])), NS_HIGH)  # ns; an impossible ts stays impossible
        if r["name"][b] == 0:
            r["name"][b] = r["name"][i]
        keep[b] = True
    unmatched += sum(len(s) for s in stacks.values())
    if unmatched:
        m.warnings.append(f"{unmatched} begin/end events without a partner were dropped")
    idx = np.flatnonzero(keep)
    new_row = np.full(len(ph), -1, dtype=np.int64)
    new_row[idx] = np.arange(len(idx))
    m.rows = {k: v[idx] for k, v in r.items()}
    m.rows["ph"][:] = PH_X
    for k, (i, v) in m.args.items():
        if i is None:
            m.args[k] = (None, values(v)[idx])
            continue
        j = new_row[i]
        m.args[k] = (j[j >= 0], v[j >= 0])
