"""What-ifs: the shared edit helpers every rule's `WhatIf` (core/rules/base.py) builds its replay edit with
(core.analysis.critical_path), and the saving of an edit.

Each rule's own edit lives beside its detector (`@rule(..., what_if=WhatIf(edit, doc))`) and reads the
finding's `fix_rows` (never the rows the GUI highlights). `ptprof analyze --explain RULE` shows it.
Saving = replayed step - replayed step with the edit, per step; a finding carries the median over steps,
clipped to [0, step]. Numbers: resources/whatif.toml (each with its origin).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core import resource_files
from core.analysis.critical_path import Edit, Replay
from core.analysis.intervals import Intervals
from core.trace.model import Kind, TraceModel


def load_whatif_config() -> dict:
    return resource_files.load_toml("whatif.toml")


@dataclass(frozen=True, slots=True)
class Saving:
    saving_ns: int  # median over steps of the per-step saving
    saving_pct: float  # of the median effective step
    per_step_ns: np.ndarray
    estimate: str


def fix_rows(finding) -> np.ndarray:
    """The finding's edit input (`Finding.fix_rows`)."""
    return np.asarray(finding.fix_rows, np.int64)


def of_kind(model: TraceModel, rows: np.ndarray, *kinds: Kind) -> np.ndarray:
    return rows[np.isin(model.slices.kind[rows], np.asarray(kinds, np.int8))] if len(rows) else rows


def launched_inside(model: TraceModel, cuts: Intervals, rp: Replay) -> np.ndarray:
    """GPU rows of the replay whose launch call lies inside the cut CPU intervals."""
    if not len(cuts) or not len(rp.op_rows):
        return np.zeros(0, np.int64)
    return rp.op_rows[cuts.contains(rp.op_launch_ns)]


def remove_cpu(model: TraceModel, rows: np.ndarray, rp: Replay, label: str) -> Edit:
    """The rows' CPU time leaves the CPU path, and the GPU work launched inside it goes too."""
    s = model.slices
    cuts = Intervals.union_of(s.ts_ns[rows], s.ts_ns[rows] + s.dur_ns[rows])
    gone = launched_inside(model, cuts, rp)
    return Edit(label=label, scale_rows=gone, scale=np.zeros(len(gone)), cut_start_ns=cuts.start_ns,
                cut_end_ns=cuts.end_ns)


def remove_named_ops(model: TraceModel, finding, rp: Replay, names: tuple[str, ...], label: str,
                     extra_rows: np.ndarray | None = None) -> Edit:
    """The fix rows that are CPU ops named one of `names` (plus `extra_rows`) removed (`remove_cpu`)."""
    rows = of_kind(model, fix_rows(finding), Kind.CPU_OP)
    rows = rows[np.array([model.name(int(r)) in names for r in rows], bool)] if len(rows) else rows
    if extra_rows is not None:
        rows = np.concatenate([rows, extra_rows])
    return remove_cpu(model, rows, rp, label)


def unblock(model, finding, rp, cfg) -> Edit:
    """The fix's runtime calls no longer block (host_sync, sync_memcpy): the wait is dropped, the copy of the
    value still happens and data dependencies stay."""
    rows = of_kind(model, fix_rows(finding), Kind.RUNTIME)
    return Edit(label="syncs no longer block", unblock_rows=rows[np.isin(rows, rp.sync_rows)])


def saving_of(model: TraceModel, edit: Edit, inflation: float | None = None, *, loader_fix: bool = False,
              path: str | None = None) -> Saving:
    """Per-step saving of an edit: replayed step - replayed step with the edit, in unprofiled time when the
    bundle knows its recording inflation (> 1: both replays run the CPU side that much faster; the GPU side as
    recorded), both held at the DataLoader workers' period (core.analysis.unprofiled) - after the fix, at the
    period the fixed loader delivers (`loader_fix`, whatif_data.py). The finding carries the mean over the
    window (periodic stalls are the cost; a median over steps dropped them). A per-event overhead model (the
    profiler's cost per recorded op) was tried and matched the H200 pairs worse (README of tests/data/device)."""
    from core.analysis import unprofiled
    floor = unprofiled.data_period_ns(model)
    base = unprofiled.steps_ns(model, inflation, floor=floor)
    how = ""
    after_floor = floor
    if loader_fix:
        from core.rules.whatif_data import period_after_fix
        after_floor, how = period_after_fix(model, path)
    edited = unprofiled.steps_ns(model, inflation, edit, floor=after_floor)
    per_step = np.clip(base - edited, 0, base).astype(np.int64)
    # a loop the workers pace: the mean (its periodic stalls are the cost); else the median over steps (robust
    # to one odd step: the mean lost 0.5 ms of the measured 3.5 ms on the H200 CUDA-graphs pair)
    stat = np.mean if floor or loader_fix else np.median
    step = float(stat(base)) if len(base) else 0.0
    if stat is np.mean:  # the window's mean against the mean: the workers' period holds over a round, not per step
        mean = min(max(step - float(edited.mean()), 0.0), step) if len(edited) else 0.0
    else:
        mean = float(np.median(per_step)) if len(per_step) else 0.0
    pct = 100.0 * mean / step if step > 0 else 0.0
    total = int(per_step.sum())
    where = (f"unprofiled replay (CPU side / {inflation:.2f}: this run's recorded vs unprofiled steps)"
             if inflation and inflation > 1.0 else "replay")
    paced = f"; {how}" if how else ("; the DataLoader workers pace the loop (a batch every "
                                    f"{_ms(floor)})" if floor else "")
    stat_name = "mean" if stat is np.mean else "median"
    return Saving(int(mean), pct, per_step, f"{where} with {edit.label}: step {_ms(step)} -> {_ms(step - mean)} "
                                           f"({stat_name} of {len(per_step)} steps; {_ms(total)} over the window)"
                                           f"{paced}")


def unprofiled_step_ns(model: TraceModel, inflation: float | None) -> int | None:
    """The step the loop would take without the profiler (core.analysis.unprofiled): the mean replayed step
    with the CPU side 1 / inflation faster, held at the DataLoader workers' period. None without steps, or
    without a known inflation > 1 on a loop the workers do not pace."""
    from core.analysis import unprofiled
    return unprofiled.unprofiled_step_ns(model, inflation)


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.2f} ms"
