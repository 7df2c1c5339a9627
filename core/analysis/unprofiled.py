"""Steps as the loop runs without the profiler (issue 28): one seam for the unprofiled step estimate, the
what-if savings and `diff` / the CI gate.

- **CPU side / recording inflation**: the replay (core.analysis.critical_path) with the CPU timeline run
  1 / inflation faster, the GPU work as recorded (the profiler slows the CPU side: record_function, shapes,
  CUPTI callbacks).
- **Data floor**: a loop that waits for DataLoader workers cannot run faster than they produce batches, and
  recording does not slow the workers. Steps that waited in `__next__` of a multi-process loader are paced by
  the workers: their period is the mean recorded step over the window (periodic stalls included: a starved
  loader stalls once per round of its workers, so a median over steps drops exactly the cost). A replayed
  step, edited or not, never beats that period unless the edit is the loader's own fix.
- **Mean over the window** of a loop the workers pace, not the median: the stalls are the cost
  (pytorch/examples imagenet `-j 4`: one recorded step of 301 ms among fast ones, "saving 0.0 ms" by the
  median); other loops keep the median (robust to one odd step).
"""
from __future__ import annotations

import numpy as np

from core.analysis.critical_path import Edit, replay_input, simulate
from core.analysis.intervals import Intervals
from core.analysis.loader_facts import bundle_loader_facts
from core.analysis.rows import named_rows_matching
from core.trace import event_names
from core.trace.model import Kind, TraceModel

# a step whose CPU span waited this share in a worker-fed DataLoader's __next__ is paced by the workers
DATA_WAIT_SHARE = 0.10


def data_period_ns(model: TraceModel) -> float | None:
    """Cached per model: see _data_period_ns."""
    from core.analysis.derived import cached
    return cached(model, "unprofiled:data_period", lambda: _data_period_ns(model))


def _data_period_ns(model: TraceModel) -> float | None:
    """The period at which the DataLoader workers delivered batches over the window (mean recorded step),
    when the loop waited for them (worker-fed loader, its __next__ >= DATA_WAIT_SHARE of the CPU steps);
    else None."""
    rp = replay_input(model)
    t = rp.times
    if not len(t) or t.synthetic:
        return None
    s = model.slices
    rows = named_rows_matching(model, event_names.is_worker_dataloader_next,
                               [Kind.CPU_OP, Kind.ANNOTATION, Kind.OTHER, Kind.PYTHON])
    if not len(rows):
        return None
    wait = Intervals.union_of(s.ts_ns[rows], s.ts_ns[rows] + s.dur_ns[rows]).covered(t.cpu_t0_ns, t.cpu_t1_ns)
    if wait.sum() < DATA_WAIT_SHARE * max(int(t.cpu_ns.sum()), 1):
        return None
    eff = t.effective_ns.astype(np.float64)
    workers, _ = bundle_loader_facts(getattr(model, "path", None))
    stall = wait * 2 > t.cpu_ns
    if workers and workers > 1 and stall.any() and (~stall).any():
        # W workers fed in step deliver a round of W batches together: one stall, then W - 1 steps served
        # at once. A window of a part of a round (3 steps of 2 workers: 4.8, 465.8, 5.0 ms) averages to the
        # wrong period; a round's does not (H100 loader_starved: 235 ms, measured 234)
        return float((eff[stall].mean() + (workers - 1) * eff[~stall].mean()) / workers)
    return float(np.mean(eff))


def steps_ns(model: TraceModel, inflation: float | None, edit: Edit | None = None, *,
             floor: float | None = None) -> np.ndarray:
    """Per-step replayed effective step (float ns) with the CPU side / inflation (when > 1) and the edit,
    never below `floor` (the data period: pass None for the loader's own fix)."""
    rp = replay_input(model)
    scale = 1.0 / inflation if inflation and inflation > 1.0 else 1.0
    eff = simulate(rp, edit, cpu_scale=scale).effective_ns.astype(np.float64)
    if floor:
        # the workers pace the loop over a round, not per step: the window's mean is held at the period
        mean = float(eff.mean()) if len(eff) else 0.0
        if 0 < mean < floor:
            eff = eff * (floor / mean)
    return eff


def unprofiled_step_ns(model: TraceModel, inflation: float | None) -> int | None:
    """What the loop takes per step without the profiler: the mean over the window of the replayed steps
    with the CPU side / inflation, held at the DataLoader workers' period. None without steps, or without
    a known inflation > 1 on a loop the workers do not pace."""
    rp = replay_input(model)
    if not len(rp.times) or rp.times.synthetic:
        return None
    floor = data_period_ns(model)
    if (not inflation or inflation <= 1.0) and floor is None:
        return None
    eff = steps_ns(model, inflation, floor=floor)
    if not len(eff):
        return None
    return int(eff.mean() if floor else np.median(eff))  # paced: the stalls count; else robust to one odd step


def run_inflation(ts) -> float | None:
    try:
        from core.analysis.health import recording_inflation
    except ImportError:
        return None
    return recording_inflation(ts)


def run_steps_ns(ts, inflation: float | None) -> np.ndarray | None:
    """A run's steps in unprofiled time (per (cycle, step number): the slowest rank, as diff's recorded
    steps), or None when a model's replay does not give one value per step."""
    per_step: dict[tuple[int, int], float] = {}
    cycles: dict[int, int] = {}
    for model in ts.models:
        cycle = cycles.get(model.rank, 0)
        cycles[model.rank] = cycle + 1
        t = replay_input(model).times
        if t.synthetic or not len(t):
            continue
        floor = data_period_ns(model)
        vals = steps_ns(model, inflation, floor=floor)
        if len(vals) != len(t.number):
            return None
        if floor:  # paced by the workers: every step of a round costs the round's mean (the period)
            vals = np.full(len(vals), float(vals.mean()))
        for number, v in zip(t.number.tolist(), vals.tolist()):
            key = (cycle, number)
            per_step[key] = max(per_step.get(key, 0.0), v)
    return np.asarray([per_step[k] for k in sorted(per_step)], np.int64)
