"""memory_near_capacity, memory_growth, allocator_churn: from `[memory]` events and cudaMalloc/cudaFree.

The first two need profile_memory=True (`[memory]` instant events with Total Allocated / Total Reserved);
without them they say so instead of guessing. allocator_churn reads the runtime calls and always runs.
"""
from __future__ import annotations

import numpy as np

from core.rules import common
from core.rules.base import CheckNotRun, RuleContext, RuleOutput, Severity, rule
from core.trace.model import Kind
from core.units import fmt_bytes

NO_MEMORY = "no [memory] events (profile_memory=False)"


def _cuda_memory(m):
    mem = m.memory
    if not len(mem):
        return None
    cuda = mem.device_type != 0
    return cuda if cuda.any() else None


@rule("memory_near_capacity", "GPU memory close to capacity", doc="""
reserved memory > 90 % of the device""")
def memory_near_capacity(ctx: RuleContext) -> RuleOutput:
    out = RuleOutput()
    limit = float(ctx.cfg("memory_near_capacity")["max_reserved_pct"])
    for i, m in enumerate(ctx.models):
        if common.gpu_event_count(m) == 0:
            continue
        cuda = _cuda_memory(m)
        if cuda is None:
            out.not_run.append(CheckNotRun("memory_near_capacity", NO_MEMORY))
            continue
        mem = m.memory
        for dev in np.unique(mem.device[cuda]).tolist():
            total = m.meta.device_total_memory(int(dev))
            if not total:
                out.not_run.append(CheckNotRun("memory_near_capacity", f"device {dev}: total memory unknown "
                                               "(no deviceProperties in the trace, none in run.json)"))
                continue
            sel = np.flatnonzero(cuda & (mem.device == dev))
            k = sel[int(np.argmax(mem.total_reserved[sel]))]
            peak = int(mem.total_reserved[k])
            pct = 100.0 * peak / total
            if pct < limit:
                continue
            t = int(mem.ts_ns[k])
            out.findings.append(ctx.finding(
                "memory_near_capacity", i,
                title=f"GPU {dev} reserved memory peaks at {pct:.0f} % of {fmt_bytes(total)} ({fmt_bytes(peak)})",
                count=1, impact_ns=0, time_ranges=[(t - 1_000_000, t + 1_000_000)],
                evidence=[{"name": "peak reserved", "ts_ns": t, "bytes": peak, "total_bytes": int(total),
                           "allocated_bytes": int(mem.total_allocated[k]), "rank": m.rank}], source=None,
                fix="Leave headroom: lower the batch size or use activation checkpointing, bf16 autocast, "
                    "set_to_none gradients; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True reduces fragmentation.",
                severity=Severity.ERROR if pct >= 98 else Severity.WARNING))
    return out


@rule("memory_growth", "Allocated memory grows step over step", doc="""
allocated memory at step end rising step over step""")
def memory_growth(ctx: RuleContext) -> RuleOutput:
    out = RuleOutput()
    cfg = ctx.cfg("memory_growth")
    min_frac = float(cfg["min_rising_fraction"])
    min_bytes = int(cfg["min_growth_bytes"])
    for i, m in enumerate(ctx.models):
        cuda = _cuda_memory(m)
        if cuda is None:
            if common.gpu_event_count(m) or not len(m.memory):
                out.not_run.append(CheckNotRun("memory_growth", NO_MEMORY))
            cuda = (m.memory.device_type == 0) if len(m.memory) else None
            if cuda is None or not cuda.any():
                continue
        steps = ctx.steps(i)
        if steps.synthetic or len(steps.number) < 3:
            out.not_run.append(CheckNotRun("memory_growth", "needs at least 3 profiled steps"))
            continue
        mem = m.memory
        ts, alloc = mem.ts_ns[cuda], mem.total_allocated[cuda]
        j = np.searchsorted(ts, steps.t1_ns, side="right") - 1
        ok = j >= 0
        if ok.sum() < 3:
            continue
        at_end = alloc[j[ok]]
        d = np.diff(at_end)
        rising = float((d > 0).mean())
        growth = int(at_end[-1] - at_end[0])
        if rising < min_frac or growth < min_bytes:
            continue
        per_step = growth / max(len(at_end) - 1, 1)
        ev = [{"name": f"step {int(n)} end", "ts_ns": int(t), "allocated_bytes": int(a), "rank": m.rank}
              for n, t, a in zip(steps.number[ok], steps.t1_ns[ok], at_end)]
        out.findings.append(ctx.finding(
            "memory_growth", i,
            title=f"Allocated memory grows every step: +{fmt_bytes(per_step)} per step "
                  f"({fmt_bytes(at_end[0])} → {fmt_bytes(at_end[-1])})",
            count=len(at_end), impact_ns=0, time_ranges=[(int(steps.t0_ns[0]), int(steps.t1_ns[-1]))],
            evidence=ev, source=None,
            fix="Something keeps tensors alive across steps: accumulate losses/metrics with .item() or .detach() "
                "(not the graph-holding tensor), do not append outputs/logits to a Python list, and clear caches; "
                "torch.cuda.memory._record_memory_history + a snapshot shows the allocation stack.",
            severity=Severity.WARNING))
    return out


@rule("allocator_churn", "cudaMalloc / cudaFree inside the steps", doc="""
cudaMalloc / cudaFree after the first step""")
def allocator_churn(ctx: RuleContext) -> RuleOutput:
    out = RuleOutput()
    min_calls = int(ctx.cfg("allocator_churn")["min_calls"])
    for i, m in enumerate(ctx.models):
        rows = common.rows_with_names(m, "cuda-malloc", common.exact("cudaMalloc", "cudaFree", "cudaMallocAsync",
                                                           "cudaFreeAsync", "cudaMallocHost", "cudaFreeHost"),
                                 [Kind.RUNTIME])
        steps = ctx.steps(i)
        if not len(rows) or steps.synthetic or len(steps.number) < 2:
            continue
        st = steps.index_of(m.slices.ts_ns[rows])
        rows = rows[st >= 1]  # after the first profiled step the caching allocator should be warm
        if len(rows) < min_calls:
            continue
        s = m.slices
        out.findings.append(ctx.finding(
            "allocator_churn", i,
            title=f"{len(rows)} cudaMalloc/cudaFree calls after the first step (the caching allocator keeps growing "
                  "or is being emptied)",
            count=len(rows), impact_ns=int(s.dur_ns[rows].sum()), time_ranges=common.ranges_of(m, rows),
            evidence=common.evidence(m, rows), source=common.source_of(m, int(rows[0])),
            fix="Avoid torch.cuda.empty_cache() in the loop and shape changes every step (pad to fixed shapes); "
                "if memory grows, fix the leak (see memory_growth); "
                "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True reduces new segments.",
            evidence_rows=rows))
    return out


RULES = (memory_near_capacity, memory_growth, allocator_churn)
