"""Collectives matched across ranks: who arrived last, and how long every other rank waited.

A collective cannot finish on any rank before the last rank has joined it, so for each matched
collective the *arrival* of a rank is when its backend began the operation (the NCCL kernel's start
on its GPU, or the gloo worker's `gloo:<op>` range on the CPU) and a rank that arrived earlier than
the last one waited `last_arrival - its_arrival` (at most as long as its own operation lasted).

Matching: ranks issue the collectives of a process group in the same order (a requirement of
torch.distributed), so the k-th operation of a name on one rank is the k-th on every other rank of
the same profiler cycle. A match is kept only when the ranks' operations overlap in time (the
collective ends at about the same moment everywhere); the first mismatch stops the matching for that
name, with a warning. Numpy on the columns; one Python iteration per collective name.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from core.trace.model import Kind, TraceModel


def backend_rows(model: TraceModel) -> np.ndarray:
    """The rows that execute collectives: NCCL kernels when the trace has some, else gloo ranges."""
    s = model.slices
    names = model.strings
    nccl_ids = names.ids_matching(lambda n: "nccl" in n.lower() and ("kernel" in n.lower() or n.startswith("nccl")))
    rows = np.flatnonzero((s.kind == Kind.KERNEL) & np.isin(s.name, nccl_ids)) if len(nccl_ids) else np.zeros(0, np.int64)
    if len(rows):
        return rows
    gloo_ids = names.ids_matching(lambda n: n.startswith("gloo:"))
    if not len(gloo_ids):
        return np.zeros(0, np.int64)
    cpu_kinds = np.asarray([Kind.CPU_OP, Kind.COLLECTIVE, Kind.ANNOTATION], np.int8)
    return np.flatnonzero(np.isin(s.kind, cpu_kinds) & np.isin(s.name, gloo_ids))


@dataclass(frozen=True, slots=True)
class CollRows:
    """One rank's backend operations in time order: all that matching needs (a rank's map summary carries
    it: core/ranks). `pg` / `seq`: Kineto's "Process Group Name" and "Seq" of each operation where the
    trace records them ("" / -1 elsewhere); when every rank has them for every operation, operations are
    matched by (process group, sequence number) instead of by name and order."""

    names: np.ndarray  # str per operation
    ts_ns: np.ndarray  # int64
    dur_ns: np.ndarray  # int64
    rows: np.ndarray  # int64: slice row in its model
    pg: np.ndarray | None = None  # str per operation, "" unknown
    seq: np.ndarray | None = None  # int64 per operation, -1 unknown

    def __len__(self) -> int:
        return len(self.ts_ns)

    def keyed(self) -> bool:
        return self.seq is not None and len(self.seq) > 0 and bool((self.seq >= 0).all())

    def shifted(self, delta_ns: int) -> CollRows:
        return CollRows(self.names, self.ts_ns + np.int64(delta_ns), self.dur_ns, self.rows, self.pg, self.seq)


def coll_rows(model: TraceModel, pg: np.ndarray | None = None, seq: np.ndarray | None = None) -> CollRows:
    """The model's backend operations (`backend_rows`) in time order."""
    rows = backend_rows(model)
    order = np.argsort(model.slices.ts_ns[rows], kind="stable")
    rows = rows[order]
    names = np.asarray([model.strings[int(n)] for n in model.slices.name[rows]], dtype=str) if len(rows) else \
        np.zeros(0, dtype=str)
    return CollRows(names, np.asarray(model.slices.ts_ns[rows], np.int64), np.asarray(model.slices.dur_ns[rows],
                    np.int64), rows.astype(np.int64), None if pg is None else pg[order],
                    None if seq is None else seq[order])


@dataclass(frozen=True, slots=True)
class Matched:
    """One row per matched collective (columns), one column per model taking part."""

    name: np.ndarray  # object: collective name (as on the first model)
    models: tuple[int, ...]  # model indexes (ranks of one cycle), column order of the 2-D arrays
    rows: np.ndarray  # int64 [n, ranks]: slice row of the operation on each model
    arrival_ns: np.ndarray  # int64 [n, ranks]
    end_ns: np.ndarray  # int64 [n, ranks]
    wait_ns: np.ndarray  # int64 [n, ranks]: time each rank waited for the last one
    last: np.ndarray  # int64 [n]: column of the rank that arrived last
    warnings: tuple[str, ...] = field(default=())
    by_seq: bool = False  # matched by (process group, sequence number)

    def __len__(self) -> int:
        return len(self.last)


def match(models: list[TraceModel], indexes: list[int]) -> Matched:
    """Match the collectives of the models `indexes` (one per rank, same cycle, one time base)."""
    return match_rows([coll_rows(models[i]) for i in indexes], indexes)


def match_rows(per_rank: list[CollRows], indexes: list[int]) -> Matched:
    """Match operations across ranks given each rank's `CollRows` (one time base)."""
    warnings: list[str] = []
    if per_rank and all(c.keyed() for c in per_rank):
        picked_cols, keys = _by_seq(per_rank, warnings)
        by_seq = True
    else:
        picked_cols, keys = _by_name(per_rank, warnings)
        by_seq = False
    if not len(keys):
        z = np.zeros((0, len(indexes)), np.int64)
        return Matched(np.zeros(0, object), tuple(indexes), z, z, z, z, np.zeros(0, np.int64), tuple(warnings), by_seq)
    pos = picked_cols  # [n, ranks] positions into each rank's CollRows
    rows = np.stack([per_rank[c].rows[pos[:, c]] for c in range(len(per_rank))], axis=1)
    arrival = np.stack([per_rank[c].ts_ns[pos[:, c]] for c in range(len(per_rank))], axis=1)
    dur = np.stack([per_rank[c].dur_ns[pos[:, c]] for c in range(len(per_rank))], axis=1)
    end = arrival + dur
    last_arrival = arrival.max(axis=1, keepdims=True)
    wait = np.minimum(last_arrival - arrival, dur)
    order = np.argsort(arrival.min(axis=1), kind="stable")
    return Matched(np.asarray(keys, object)[order], tuple(indexes), rows[order], arrival[order], end[order],
                   wait[order], arrival[order].argmax(axis=1), tuple(warnings), by_seq)


def _by_name(per_rank: list[CollRows], warnings: list[str]) -> tuple[np.ndarray, list[str]]:
    """The k-th operation of a name on one rank is the k-th on every rank; the first pair that does not
    overlap in time stops the matching for that name."""
    keys: list[str] = []
    picked: list[np.ndarray] = []
    common = None
    for c in per_rank:
        texts = set(np.unique(c.names).tolist())
        common = texts if common is None else common & texts
    for text in sorted(common or ()):
        columns = [np.flatnonzero(c.names == text) for c in per_rank]
        k = min(len(col) for col in columns)
        if k == 0:
            continue
        if len({len(col) for col in columns}) > 1:
            warnings.append(f"{text}: ranks ran {', '.join(str(len(col)) for col in columns)} operations; "
                            f"the first {k} are matched")
        grid = np.stack([col[:k] for col in columns], axis=1)
        ok = _overlapping(per_rank, grid)
        if not ok.all():
            bad = int(np.flatnonzero(~ok)[0])
            warnings.append(f"{text}: operation {bad + 1} does not overlap across ranks; matching stops there")
            grid = grid[:bad]
        if len(grid):
            keys.extend([text] * len(grid))
            picked.append(grid)
    return (np.concatenate(picked) if picked else np.zeros((0, len(per_rank)), np.int64)), keys


def _by_seq(per_rank: list[CollRows], warnings: list[str]) -> tuple[np.ndarray, list[str]]:
    """Operations with the same (process group, sequence number) on every rank are one collective; keys
    missing on some rank and pairs that do not overlap in time are left out, with a warning."""
    index = []
    for c in per_rank:
        pg = c.pg if c.pg is not None else np.full(len(c), "", dtype=str)
        index.append({(str(g), int(q)): i for i, (g, q) in enumerate(zip(pg.tolist(), c.seq.tolist()))})
    common = set(index[0])
    for d in index[1:]:
        common &= set(d)
    missing = max(len(d) for d in index) - len(common)
    if missing:
        warnings.append(f"{missing} collective(s) are not on every rank (process group + sequence number): "
                        "left out")
    ordered = sorted(common)
    grid = np.asarray([[d[k] for d in index] for k in ordered], np.int64).reshape(len(ordered), len(per_rank))
    if len(grid):
        ok = _overlapping(per_rank, grid)
        if not ok.all():
            warnings.append(f"{int((~ok).sum())} collective(s) with the same sequence number do not overlap "
                            "across ranks: left out")
            grid = grid[ok]
    keys = [str(per_rank[0].names[i]) for i in grid[:, 0]] if len(grid) else []
    return grid, keys


def _overlapping(per_rank: list[CollRows], grid: np.ndarray) -> np.ndarray:
    starts = np.stack([per_rank[c].ts_ns[grid[:, c]] for c in range(grid.shape[1])], axis=1)
    ends = starts + np.stack([per_rank[c].dur_ns[grid[:, c]] for c in range(grid.shape[1])], axis=1)
    return starts.max(axis=1) <= ends.min(axis=1)


def rank_groups(models: list[TraceModel]) -> list[list[int]]:
    """Model indexes grouped by profiler cycle: the n-th model of each rank belongs to group n."""
    seen: dict[int, int] = {}
    groups: dict[int, list[int]] = {}
    for i, m in enumerate(models):
        cycle = seen.get(m.rank, 0)
        seen[m.rank] = cycle + 1
        groups.setdefault(cycle, []).append(i)
    return [g for _, g in sorted(groups.items()) if len({models[i].rank for i in g}) > 1]
