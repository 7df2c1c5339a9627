"""comm_bound and rank_imbalance for multi-rank traces (one TraceModel per rank on one time base)."""
from __future__ import annotations

import numpy as np

from core.analysis.breakdown import step_breakdown
from core.analysis.intervals import Intervals
from core.rules import common
from core.rules.base import CheckNotRun, RuleContext, RuleOutput, rule
from core.trace.model import Kind
from core.units import fmt_pct


def _world_size(m) -> int:
    info = m.meta.distributed_info or {}
    try:
        return int(info.get("world_size", 1) or 1)
    except (TypeError, ValueError):
        return 1


def _multi_rank(ctx: RuleContext, rule_id: str, out: RuleOutput) -> bool:
    ranks = {m.rank for m in ctx.models}
    world = max(_world_size(m) for m in ctx.models)
    if len(ranks) > 1:
        return True
    if world > 1:
        out.not_run.append(CheckNotRun(rule_id, f"only {len(ranks)} of {world} ranks loaded (open the folder with "
                                                "all rank traces)"))
    return False


def one_per_collective(m, coll: np.ndarray) -> np.ndarray:
    """One row per collective call. A gloo/NCCL all-reduce appears as the c10d:: CPU op, the backend's
    record_function (gloo:all_reduce, kind COLLECTIVE) under it and its projection on a GPU stream
    (GPU_ANNOTATION); count the outermost CPU-side op, falling back to the backend's CPU rows, then
    the NCCL kernels when the CPU side is missing."""
    s = m.slices
    cpu = coll[np.isin(s.kind[coll], np.asarray([Kind.CPU_OP, Kind.COLLECTIVE], np.int8))]
    c10d = common.name_ids(m, "c10d-ops", lambda n: n.startswith("c10d::"))
    for cand in (cpu[np.isin(s.name[cpu], c10d)], cpu, coll[s.kind[coll] == Kind.KERNEL], coll):
        if len(cand):
            top = common.outermost_chain(m, cand, np.unique(s.name[cand]))
            return np.unique(np.where(top >= 0, top, cand))
    return coll


def _comm_fix(m, gpu_collectives: bool) -> str:
    """comm_bound's fix; "use NCCL" only where the collectives do not already run as NCCL kernels."""
    info = m.meta.distributed_info if isinstance(m.meta.distributed_info, dict) else {}
    backend = str(info.get("backend") or "")
    switch = ("" if gpu_collectives or "nccl" in backend.lower() else
              "use the NCCL backend for GPU tensors (gloo copies through the host), ")
    return ("Overlap gradient all-reduce with backward: " + switch + "tune DDP bucket_cap_mb, use gradient "
            "accumulation with no_sync(), or larger per-rank batches so compute hides communication.")


@rule("comm_bound", "Communication not overlapped with compute", doc="""
collectives not overlapped with compute (multi-rank)""")
def comm_bound(ctx: RuleContext) -> RuleOutput:
    out = RuleOutput()
    world = max([_world_size(m) for m in ctx.models] + [ctx.world_hint])
    if len({m.rank for m in ctx.models}) < 2 and world < 2:
        return out
    min_pct = float(ctx.cfg("comm_bound")["min_exposed_pct"])
    kw = int(ctx.cfg("gpu_idle")["kernel_wait_max_ns"])
    for i, m in enumerate(ctx.models):
        s = m.slices
        b = step_breakdown(m, kw)
        coll = common.rows_with_names(m, "collectives", lambda n: n.startswith(("gloo:", "nccl:", "c10d::"))
                                 or "all_reduce" in n or "AllReduce" in n or "nccl" in n.lower())
        if not len(coll):
            continue
        steps = ctx.steps(i)
        nccl_k = coll[s.kind[coll] == Kind.KERNEL]
        km = s.kind == Kind.KERNEL
        km[nccl_k] = False
        compute = Intervals.union_of(s.ts_ns[km], s.ts_ns[km] + s.dur_ns[km])
        comm = Intervals.union_of(s.ts_ns[nccl_k], s.ts_ns[nccl_k] + s.dur_ns[nccl_k])
        exposed_kernels = comm.subtract(compute)  # communication kernels no compute kernel overlaps
        exposed = int(b.comm_wait_ns.sum()) + int(exposed_kernels.covered(steps.t0_ns, steps.t1_ns).sum())
        pct = ctx.pct(i, exposed)
        if pct < min_pct:
            continue
        calls = ctx.in_steps(i, one_per_collective(m, coll))
        if not len(calls):
            calls = one_per_collective(m, coll)
        out.findings.append(ctx.finding(
            "comm_bound", i, title=f"Communication exposed for {fmt_pct(pct)} of step time (not overlapped with "
                                   "compute)",
            count=len(calls), impact_ns=exposed, time_ranges=common.ranges_of(m, calls), evidence=common.evidence(m, calls),
            source=None,
            fix=_comm_fix(m, len(nccl_k) > 0),
            evidence_rows=coll))
    return out


@rule("rank_imbalance", "Ranks run at different speeds", doc="""
ranks whose mean step time differs > 10 % (multi-rank)""")
def rank_imbalance(ctx: RuleContext) -> RuleOutput:
    out = RuleOutput()
    if not _multi_rank(ctx, "rank_imbalance", out):
        return out
    limit = float(ctx.cfg("rank_imbalance")["max_spread_pct"])
    durs: dict[int, list[np.ndarray]] = {}  # per rank: every profiled cycle's step durations
    first: dict[int, int] = {}
    for i, m in enumerate(ctx.models):
        st = ctx.steps(i)
        if st.synthetic:
            out.not_run.append(CheckNotRun("rank_imbalance", f"{ctx.label(i)}: no ProfilerStep ranges"))
            return out
        durs.setdefault(m.rank, []).append(st.t1_ns - st.t0_ns)
        first.setdefault(m.rank, i)
    ranks = sorted(durs)
    means = [float(np.concatenate(durs[r]).mean()) for r in ranks]
    means_a = np.asarray(means)
    spread = 100.0 * (means_a.max() - means_a.min()) / max(means_a.min(), 1.0)
    if spread < limit:
        return out
    slow = first[ranks[int(np.argmax(means_a))]]
    st = ctx.steps(slow)
    ev = [{"name": f"rank {r} mean step", "dur_ns": int(x), "rank": r} for r, x in zip(ranks, means)]
    out.findings.append(ctx.finding(
        "rank_imbalance", slow, title=f"slowest rank: {spread:.0f} % longer steps than the fastest rank "
                                      f"(rank {ranks[int(np.argmin(means_a))]})",
        count=len(ranks), impact_ns=int((means_a.max() - means_a.min()) * len(st.number)),
        time_ranges=list(zip(st.t0_ns.tolist(), st.t1_ns.tolist()))[:common.MAX_RANGES], evidence=ev, source=None,
        fix="Balance the work per rank: equal shard sizes (DistributedSampler, drop_last=True), the same sequence "
            "lengths per batch, no rank-0-only logging/checkpointing inside the step; check that the slow rank's GPU "
            "is not throttled or shared."))
    return out


RULES = (comm_bound, rank_imbalance)
