"""What `core.analysis.diff.compare` reads of one model, as small plain data (`ModelFacts`).

`compare` works on these, never on the models' columns, so a multi-rank run can be compared from facts its
ranks' workers computed one rank at a time (core/ranks/views.py: memory O(workers x rank)) with the same result
as from a loaded set. Facts do not depend on the set's time base (durations, totals, peaks only).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from core.analysis.breakdown import PARTS, step_breakdown
from core.analysis.memory import memory_series
from core.analysis.stats import kernel_table, op_table
from core.analysis.steps import step_stats
from core.trace.model import GPU_KINDS, TraceModel


@dataclass(slots=True)
class ModelFacts:
    rank: int
    path: str
    step_number: np.ndarray  # int64; empty when the trace has no ProfilerStep
    step_ns: np.ndarray  # effective step ns, per step
    bounds: list[str] | None  # step_stats' bound per step (None: synthetic steps)
    data_period_ns: float | None  # a GPU trace whose DataLoader workers pace it (core.analysis.unprofiled)
    bd_steps: int  # step_breakdown: steps, per-part sums, GPU busy and step durations summed
    bd_sums: dict[str, float]
    bd_has_gpu: bool
    bd_dur_ns: float
    bd_busy_ns: float
    kernels: list[tuple[str, int, int]]  # (name, calls, total ns): kernel / memcpy / memset rows
    ops: list[tuple[str, str, int, int]]  # (name, input dims or "", calls, host total ns)
    by_shape: bool
    mem_peaks: list[int]  # peak allocated bytes per GPU (memory_series)
    unprofiled: tuple | None = field(default=None)  # (synthetic, numbers, values, floor) once asked for


def model_facts(model: TraceModel, by_shape: bool = False) -> ModelFacts:
    from core.analysis.unprofiled import data_period_ns
    st = step_stats(model)
    if st.synthetic:
        numbers, values = np.zeros(0, np.int64), np.zeros(0, np.int64)
    else:
        effective = getattr(st, "effective_ns", None)
        numbers = np.asarray(st.number, np.int64)
        values = np.asarray(st.dur_ns if effective is None else effective, np.int64)
    bounds = None if st.synthetic or st.bound is None else [str(b) for b in st.bound.tolist()]
    bd = step_breakdown(model)
    n_bd = len(bd)
    sums = {p: float(v.sum()) for p, v in bd.parts().items()} if n_bd else {p: 0.0 for p in PARTS}
    strings = model.strings
    kt = kernel_table(model, kinds=tuple(GPU_KINDS))  # memcpy / memset rows too
    kernels = [(strings[int(n)], int(c), int(t)) for n, c, t in zip(kt.name, kt.calls.tolist(), kt.total_ns.tolist())]
    ot = op_table(model, by_shapes=by_shape)
    ops = [(strings[int(n)], strings[int(d)] if by_shape and int(d) else "", int(c), int(t))
           for n, d, c, t in zip(ot.name, ot.input_dims, ot.calls.tolist(), ot.host_total_ns.tolist())]
    return ModelFacts(
        rank=int(model.rank), path=str(model.path), step_number=numbers, step_ns=values, bounds=bounds,
        data_period_ns=data_period_ns(model) if model.devices else None,
        bd_steps=n_bd, bd_sums=sums, bd_has_gpu=bool(n_bd and bd.has_gpu),
        bd_dur_ns=float(bd.dur_ns.sum()) if n_bd else 0.0, bd_busy_ns=float(bd.busy_ns.sum()) if n_bd else 0.0,
        kernels=kernels, ops=ops, by_shape=by_shape,
        mem_peaks=[int(s.peak_allocated_bytes) for s in memory_series(model)])


def unprofiled_facts(model: TraceModel, inflation: float | None) -> tuple:
    """(synthetic, step numbers, unprofiled step ns, data period) of one model (core.analysis.unprofiled)."""
    from core.analysis.critical_path import replay_input
    from core.analysis.unprofiled import data_period_ns, steps_ns
    t = replay_input(model).times
    if t.synthetic or not len(t):
        return True, np.zeros(0, np.int64), np.zeros(0), None
    floor = data_period_ns(model)
    return False, np.asarray(t.number, np.int64), np.asarray(steps_ns(model, inflation, floor=floor), np.float64), floor
