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

    def __len__(self) -> int:
        return len(self.last)


def match(models: list[TraceModel], indexes: list[int]) -> Matched:
    """Match the collectives of the models `indexes` (one per rank, same cycle, one time base)."""
    per_model = []
    for i in indexes:
        m = models[i]
        rows = backend_rows(m)
        rows = rows[np.argsort(m.slices.ts_ns[rows], kind="stable")]
        names = m.slices.name[rows]
        per_model.append((m, rows, names))
    warnings: list[str] = []
    keys: list[str] = []
    picked: list[np.ndarray] = []  # per name: [k, ranks] rows
    common = None
    for m, _rows, names in per_model:
        texts = {m.strings[int(n)] for n in np.unique(names)}
        common = texts if common is None else common & texts
    for text in sorted(common or ()):
        columns = []
        for m, rows, names in per_model:
            ids = m.strings.ids_matching(lambda n, t=text: n == t)
            columns.append(rows[np.isin(names, ids)])
        k = min(len(c) for c in columns)
        if k == 0:
            continue
        if len({len(c) for c in columns}) > 1:
            warnings.append(f"{text}: ranks ran {', '.join(str(len(c)) for c in columns)} operations; "
                            f"the first {k} are matched")
        grid = np.stack([c[:k] for c in columns], axis=1)
        ok = _overlapping(per_model, grid)
        if not ok.all():
            bad = int(np.flatnonzero(~ok)[0])
            warnings.append(f"{text}: operation {bad + 1} does not overlap across ranks; matching stops there")
            grid = grid[:bad]
        if len(grid):
            keys.extend([text] * len(grid))
            picked.append(grid)
    if not picked:
        z = np.zeros((0, len(indexes)), np.int64)
        return Matched(np.zeros(0, object), tuple(indexes), z, z, z, z, np.zeros(0, np.int64), tuple(warnings))
    rows = np.concatenate(picked)
    arrival = np.stack([per_model[c][0].slices.ts_ns[rows[:, c]] for c in range(len(indexes))], axis=1)
    dur = np.stack([per_model[c][0].slices.dur_ns[rows[:, c]] for c in range(len(indexes))], axis=1)
    end = arrival + dur
    last_arrival = arrival.max(axis=1, keepdims=True)
    wait = np.minimum(last_arrival - arrival, dur)
    order = np.argsort(arrival.min(axis=1), kind="stable")
    return Matched(np.asarray(keys, object)[order], tuple(indexes), rows[order], arrival[order], end[order],
                   wait[order], arrival[order].argmax(axis=1), tuple(warnings))


def _overlapping(per_model, grid: np.ndarray) -> np.ndarray:
    starts = np.stack([per_model[c][0].slices.ts_ns[grid[:, c]] for c in range(grid.shape[1])], axis=1)
    ends = starts + np.stack([per_model[c][0].slices.dur_ns[grid[:, c]] for c in range(grid.shape[1])], axis=1)
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
