"""Per-step facts of each finding, after pricing: how many profiled steps its model has (what "Lost / step"
divides by) and whether its cost is one-off.

One-off: a recompile always (compile time is paid once, not per step), and any finding whose time ranges
account for its cost (they cover 50-150 % of it) and put at least 80 % of it in one or few steps (at most a
quarter of the window's steps, and at most 3, not evenly spaced: that is every N steps) of a window of 3 or
more steps: a first-step compile, a cold start, a single cudaMalloc after warm-up (not gpu_idle, whose ranges
are the worst step's gaps by design). Such a cost is shown as "one-off: 3.84 s at step 4"
(core/analysis/vocab.py), not as a cost of every step.
"""
from __future__ import annotations

import dataclasses
import logging

import numpy as np

from core.analysis.intervals import Intervals
from core.rules.base import Finding, RuleContext

log = logging.getLogger(__name__)

ONE_OFF_RULES = frozenset({"recompile"})
# rules whose time ranges are examples from one step by construction (gpu_idle: the worst step's largest gaps)
EXAMPLE_RANGES = frozenset({"gpu_idle"})
MIN_STEPS = 3
SHARE = 0.8  # of the cost, in the few steps
MAX_STEPS = 3
COVERAGE = (0.5, 1.5)  # ranges / impact: below, the ranges are only examples (the top N), above, not the cost
MIN_COST_NS = 1_000


def annotate(ctx: RuleContext, findings: list[Finding]) -> list[Finding]:
    out = []
    steps: dict[tuple[int, bool], int] = {}
    for f in findings:
        try:
            key = (f.model_index, f.saving_ns is not None)
            if key not in steps and 0 <= f.model_index < len(ctx.models):
                steps[key] = mean_step_ns(ctx, f.model_index, saving=key[1])
            f = dataclasses.replace(f, mean_step_ns=steps.get(key, 0))
            out.append(_annotate(ctx, f))
        except Exception:  # noqa: BLE001 - a label must never lose the finding
            log.exception("per-step facts of %s failed", f.rule)
            out.append(f)
    return out


def _annotate(ctx: RuleContext, f: Finding) -> Finding:
    if not 0 <= f.model_index < len(ctx.models):
        return f
    st = ctx.steps(f.model_index)
    n = 0 if st.synthetic else len(st.number)
    steps = one_off_steps(st, f) if n >= MIN_STEPS else None
    one_off = steps is not None or (f.rule in ONE_OFF_RULES and f.impact_ns >= MIN_COST_NS)
    if one_off and steps is None and n:  # a recompile spread over the window: the steps that hold most of it
        steps = _top_steps(st, f, MAX_STEPS)
    return dataclasses.replace(f, steps=n, one_off=one_off, one_off_steps=tuple(steps or ()))


def mean_step_ns(ctx: RuleContext, index: int, saving: bool) -> int:
    """The mean step a finding's per-step numbers are shares of: the mean effective step of its model (what
    impact_pct divides by, per step); for a saving in unprofiled time (a bundle that knows its recording
    inflation, or a loop the DataLoader workers pace: core/rules/whatif.py), the unprofiled step the status
    line shows next to it."""
    from core.analysis.step_times import step_times
    st = ctx.steps(index)
    n = 1 if st.synthetic else max(len(st.number), 1)
    total = st.total_ns if st.synthetic else int(step_times(ctx.models[index], ctx.config).effective_ns.sum())
    recorded = int(round(total / n))  # impact_pct's denominator, per step (ctx.pct)
    if not saving:
        return recorded
    from core.analysis.health import recording_inflation
    from core.rules.whatif import unprofiled_step_ns
    unprofiled = ctx.memoized(f"unprofiled_step:{index}",
                              lambda: unprofiled_step_ns(ctx.models[index], recording_inflation(ctx.trace_set)))
    return int(unprofiled or recorded)


def _per_step(st, f: Finding) -> np.ndarray:
    """Time of the finding's ranges inside each step (the ranges merged first: overlaps count once)."""
    if not f.time_ranges:
        return np.zeros(len(st.number))
    ranges = np.asarray(f.time_ranges, np.int64).reshape(-1, 2)
    return Intervals.union_of(ranges[:, 0], ranges[:, 1]).covered(st.t0_ns, st.t1_ns).astype(np.float64)


def one_off_steps(st, f: Finding) -> tuple[int, ...] | None:
    """The ProfilerStep numbers holding a one-off cost, or None when the cost is spread over the steps (or the
    ranges do not tell: they are examples, not the cost)."""
    if f.impact_ns < MIN_COST_NS or f.hint or f.rule in EXAMPLE_RANGES:
        return None
    per = _per_step(st, f)
    total = float(per.sum())
    if not total or not COVERAGE[0] <= total / f.impact_ns <= COVERAGE[1]:
        return None
    few = min(MAX_STEPS, max(1, len(per) // 4))
    order = np.argsort(-per, kind="stable")
    k = int(np.searchsorted(np.cumsum(per[order]) / total, SHARE - 1e-9) + 1)
    if k > few:
        return None
    steps = tuple(sorted(int(st.number[i]) for i in order[:k]))
    if periodic(steps):  # every N steps (a .item() in a log_metrics every 10 steps): recurring, not one-off
        return None
    return steps


def periodic(steps: tuple[int, ...]) -> bool:
    """Three or more steps evenly spaced: a cost that comes back every N steps."""
    return len(steps) >= 3 and len({b - a for a, b in zip(steps, steps[1:])}) == 1


def _top_steps(st, f: Finding, most: int) -> tuple[int, ...]:
    per = _per_step(st, f)
    if not per.sum():
        return ()
    order = np.argsort(-per, kind="stable")
    k = int(np.searchsorted(np.cumsum(per[order]) / per.sum(), SHARE - 1e-9) + 1)
    return tuple(sorted(int(st.number[i]) for i in order[:min(k, most)] if per[i] > 0))
