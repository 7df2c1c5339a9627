"""straggler: the rank that arrives last at the collectives, what it was doing, and what the others lost.

core.analysis.collectives matches the collectives across ranks; a rank is the straggler when it is the
last to arrive at most of them and the others wait for it by more than `min_wait_pct` of the step on
average. The cause is what the straggler's CPU threads ran in the window between the first rank's arrival
and its own: the top-level op / record_function / DataLoader range that covers most of that window.
"""
from __future__ import annotations

import numpy as np

from core.analysis import collectives
from core.analysis.intervals import Intervals
from core.rules import common
from core.rules.base import CheckNotRun, RuleContext, RuleOutput, rule
from core.trace.model import Kind, TrackKind
from core.units import fmt_ns

CAUSE_KINDS = np.asarray([Kind.CPU_OP, Kind.ANNOTATION, Kind.PYTHON], np.int8)


def cause_of_lateness(model, t0: np.ndarray, t1: np.ndarray) -> tuple[str, int, np.ndarray]:
    """(name, ns covered, rows) of the shallow CPU range that covers the most of the windows [t0, t1)."""
    s = model.slices
    cpu_track = model.tracks.kind[s.track] == TrackKind.CPU_THREAD
    shallow = np.flatnonzero(cpu_track & np.isin(s.kind, CAUSE_KINDS) & (s.depth <= 1) & (s.dur_ns > 0))
    if not len(shallow) or not len(t0):
        return "", 0, np.zeros(0, np.int64)
    late = Intervals.union_of(t0, t1)
    covered = late.covered(s.ts_ns[shallow], s.ts_ns[shallow] + s.dur_ns[shallow])
    hit = covered > 0
    if not hit.any():
        return "", 0, np.zeros(0, np.int64)
    rows, cov = shallow[hit], covered[hit]
    names, inv = np.unique(s.name[rows], return_inverse=True)
    per_name = np.bincount(inv, weights=cov)
    # prefer the deepest meaningful level: depth 1 ranges (record_function inside the step) over depth 0
    depth_bonus = np.bincount(inv, weights=(s.depth[rows] == 1) * cov) * 1e-6
    best = int(np.argmax(per_name + depth_bonus))
    return model.strings[int(names[best])], int(per_name[best]), rows[inv == best]


@rule("straggler", "One rank makes the others wait at the collectives", doc="""
multi-rank: the rank that arrives last at the collectives (matched across ranks by name and order; arrival = the
NCCL kernel's start or the gloo range's), how long every other rank waited for it, and what it was doing
meanwhile (the top-level op / `record_function` / DataLoader range covering most of that time)""")
def straggler(ctx: RuleContext) -> RuleOutput:
    models = list(ctx.models)

    def cause(index: int, t0: np.ndarray, t1: np.ndarray) -> tuple[str, int, list[dict], tuple[int, ...]]:
        model = models[index]
        name, ns, rows = cause_of_lateness(model, t0, t1)
        ev = common.evidence(model, rows, role="what the straggler was doing") if name else []
        return name, ns, ev, tuple(int(r) for r in rows[:common.MAX_EVIDENCE])

    return straggler_findings(ctx, lambda i: collectives.coll_rows(models[i]), cause)


def straggler_findings(ctx: RuleContext, coll_of, cause_of) -> RuleOutput:
    """The rule on any source of per-rank collectives: `coll_of(index)` -> CollRows of that model (on the set's
    time base); `cause_of(index, t0, t1)` -> (name, ns covered, evidence, evidence rows) of what the straggler
    ran in the windows [t0, t1) - asked of the straggler only (core/ranks asks that rank's map)."""
    out = RuleOutput()
    models = list(ctx.models)
    if len({m.rank for m in models}) < 2:
        return out
    cfg = ctx.cfg("straggler")
    min_share = float(cfg["min_last_share"])
    min_wait_pct = float(cfg["min_wait_pct"])
    for group in collectives.rank_groups(models):
        matched = collectives.match_rows([coll_of(i) for i in group], group)
        if len(matched) == 0:
            continue
        counts = np.bincount(matched.last, minlength=len(group))
        column = int(np.argmax(counts))
        if counts[column] < max(1, min_share * len(matched)):
            continue
        late = matched.last == column
        others = [k for k in range(len(group)) if k != column]
        lost_ns = matched.wait_ns[late][:, others].sum(axis=0)  # per other rank, summed over the collectives
        index = group[column]
        steps = ctx.steps(index)
        n_steps = 1 if steps.synthetic else max(1, len(steps.number))
        per_step_lost = float(lost_ns.mean()) / n_steps
        step_ns = float(np.median(steps.t1_ns - steps.t0_ns)) if len(steps.number) else 0.0
        if step_ns <= 0 or 100.0 * per_step_lost / step_ns < min_wait_pct:
            continue
        first_arrival = matched.arrival_ns[late].min(axis=1)
        own_arrival = matched.arrival_ns[late][:, column]
        cause, cause_ns, cause_ev, cause_rows = cause_of(index, first_arrival, own_arrival)
        window_ns = int((own_arrival - first_arrival).sum())
        rank = models[index].rank
        doing = f" (it was in {cause}: {100.0 * cause_ns / max(window_ns, 1):.0f} % of that time)" if cause else ""
        # how long each other rank waited for it, summed over the collectives (the summary line); the evidence
        # is what the straggler ran meanwhile
        facts = {"waiting_ranks": [models[group[k]].rank for k in others], "waited_ns": lost_ns.tolist()}
        ev = list(cause_ev) if cause else []
        out.findings.append(ctx.finding(
            "straggler", index,
            title=f"rank {rank} is the straggler: last at {int(counts[column])} of {len(matched)} collectives; "
                  f"the other ranks wait {fmt_ns(per_step_lost)} per step{doing}",
            count=int(counts[column]), impact_ns=int(lost_ns.mean()),
            time_ranges=list(zip(first_arrival.tolist(), own_arrival.tolist()))[:common.MAX_RANGES], evidence=ev,
            source=None, evidence_rows=cause_rows, facts=facts,
            fix=f"Give rank {rank} less work or make it faster before the collective"
                + (f": '{cause}' runs longer there than on the other ranks" if cause else "")
                + ". Typical causes: uneven shards or sequence lengths (DistributedSampler, drop_last=True, "
                  "length-bucketed batches), data loading on one slow node (more DataLoader workers), "
                  "rank-0-only logging / evaluation / checkpointing inside the step, a throttled or shared GPU."))
        out.not_run.extend(CheckNotRun("straggler", w) for w in matched.warnings)
    return out


RULES = (straggler,)
