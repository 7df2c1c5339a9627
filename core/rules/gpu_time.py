"""launch_bound and gpu_idle: the GPU waits for the CPU.

launch_bound: runs of >= min_run consecutive short kernels on a stream, each preceded by a GPU idle gap at
least as long as itself (launch overhead dominates). Gaps are measured against all GPU activity of the
stream (kernels, copies, memsets); a copy or memset, a step boundary (by launch time), a host sync
between two launches or another record_function range around the launch ends a run. Costed by the GPU idle
inside the runs (not covered by other streams, not a sync drain, which host_sync owns) and named by the
record_function range or user frame that launched them.
gpu_idle: GPU idle share of the steps above max_idle_pct, split HTA-style (core.analysis.breakdown);
its cost is the host wait + kernel wait + other idle not already billed by launch_bound (idle inside its runs) or the
copy rules (idle while the CPU is inside a pageable / blocking copy call); DataLoader, compile, sync and
collective waits are their own rules' costs.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.analysis.breakdown import (
    SYNC_NAMES,
    idle_gaps,
    idle_pieces,
    launch_ts_of_gpu,
    step_breakdown,
    sync_drain_intervals,
)
from core.analysis.critical_path import Edit, replay_input
from core.analysis.intervals import Intervals
from core.analysis.steps import gpu_busy_union
from core.analysis.tree import ancestor_with_kind
from core.rules import common, whatif
from core.rules.base import CheckNotRun, RuleContext, RuleOutput, Severity, WhatIf, rule
from core.trace import event_names
from core.trace.model import GPU_KINDS, FlowKind, Kind, TrackKind
from core.units import fmt_ns, fmt_pct

MAX_KERNEL_EVIDENCE = 200  # kernels considered for the evidence list (the longest MAX_EVIDENCE are shown)


@dataclass(frozen=True, slots=True)
class LaunchRun:
    kernels: np.ndarray  # slice rows, in GPU order
    gap_start_ns: np.ndarray  # idle gaps before kernels[1:] on the stream
    gap_end_ns: np.ndarray
    label: str


def _group_runs(flag: np.ndarray, brk: np.ndarray, min_run: int) -> list[tuple[int, int]]:
    """[start, stop) index ranges of consecutive True flags, not crossing a break (brk[j]: j starts anew),
    at least min_run long."""
    if not len(flag):
        return []
    key = np.cumsum(brk | ~flag)
    flagged = np.flatnonzero(flag)
    if not len(flagged):
        return []
    run_key = key[flagged]
    new = np.ones(len(flagged), bool)
    new[1:] = run_key[1:] != run_key[:-1]
    starts = np.flatnonzero(new)
    stops = np.append(starts[1:], len(flagged))
    keep = stops - starts >= min_run
    return [(int(flagged[first]), int(flagged[stop - 1]) + 1) for first, stop in zip(starts[keep], stops[keep])]


def launch_runs(ctx: RuleContext, i: int) -> list[LaunchRun]:
    """The launch-bound runs of model i (memoised: gpu_idle subtracts their idle)."""
    return ctx.memoized(f"launch_runs:{i}", lambda: _launch_runs(ctx, i))


def _launch_runs(ctx: RuleContext, index: int) -> list[LaunchRun]:
    cfg = ctx.cfg("launch_bound")
    short_ns, min_run = int(cfg["short_kernel_ns"]), int(cfg["min_run"])
    model = ctx.models[index]
    s = model.slices
    src_of = _launch_call_of(model)
    launch_ts = launch_ts_of_gpu(model)
    steps = ctx.steps(index)
    sync = common.rows_with_names(model, "sync-calls", common.exact(*SYNC_NAMES), [Kind.RUNTIME])
    sync_end = np.sort(s.ts_ns[sync] + s.dur_ns[sync])
    gpu_kinds = np.asarray(GPU_KINDS, np.int8)
    runs: list[LaunchRun] = []
    for track in np.flatnonzero(model.tracks.kind == TrackKind.GPU_STREAM).tolist():
        track_rows = model.track_rows(track)
        rows = np.arange(track_rows.start, track_rows.stop)
        rows = rows[np.isin(s.kind[rows], gpu_kinds)]
        if len(rows) < min_run:
            continue
        rows = rows[np.argsort(s.ts_ns[rows], kind="stable")]
        ts, end = s.ts_ns[rows], s.ts_ns[rows] + s.dur_ns[rows]
        prev_end = np.concatenate([[ts[0]], np.maximum.accumulate(end)[:-1]])
        gap = np.maximum(ts - prev_end, 0)
        dur = s.dur_ns[rows]
        starved = (s.kind[rows] == Kind.KERNEL) & (dur < short_ns) & (gap >= dur)
        # where a run may not continue: a new step (by launch time) or a host sync between two launches
        launched_at = np.where(launch_ts[rows] >= 0, launch_ts[rows], ts)
        step = steps.index_of(launched_at) if not steps.synthetic else np.zeros(len(rows), np.int64)
        n_sync = np.searchsorted(sync_end, launched_at, side="right")
        # ... or a different user range (record_function) around the launch: a run is named by its range
        user_range = np.full(len(rows), -1, np.int64)
        has = src_of[rows] >= 0
        user_range[has] = ancestor_with_kind(model, src_of[rows][has], (Kind.ANNOTATION,))
        brk = np.zeros(len(rows), bool)
        brk[1:] = (step[1:] != step[:-1]) | (n_sync[1:] != n_sync[:-1]) | (user_range[1:] != user_range[:-1])
        for first, stop in _group_runs(starved & (step >= 0), brk, min_run):
            run = rows[first:stop]
            launches = src_of[run]
            ranges = ancestor_with_kind(model, launches[launches >= 0], (Kind.ANNOTATION,))
            label = ""
            if len(ranges) and (ranges >= 0).any():
                names, counts = np.unique(s.name[ranges[ranges >= 0]], return_counts=True)
                if counts.max() * 2 >= len(ranges):  # the range that launched most of the run
                    label = model.strings[int(names[np.argmax(counts)])]
            runs.append(LaunchRun(run, prev_end[first + 1:stop], ts[first + 1:stop], label))
    return runs


def run_idle_intervals(ctx: RuleContext, i: int, runs: list[LaunchRun] | None = None) -> Intervals:
    """GPU idle inside launch-bound runs: the gaps between their kernels, minus time another stream is busy
    and minus sync drains (host_sync's cost)."""
    def compute(selected: list[LaunchRun]) -> Intervals:
        model = ctx.models[i]
        if not selected:
            return Intervals.empty()
        gaps = Intervals.union_of(np.concatenate([run.gap_start_ns for run in selected]),
                                  np.concatenate([run.gap_end_ns for run in selected])).nonempty()
        idle = gaps.subtract(gpu_busy_union(model))
        drains = sync_drain_intervals(model)
        return idle.subtract(drains) if len(drains) else idle
    if runs is not None:
        return compute(runs)
    return ctx.memoized(f"launch_idle:{i}", lambda: compute(launch_runs(ctx, i)))


def _launch_bound_graph(model, finding, rp, cfg) -> Edit:
    """Each run (the finding's fix rows, grouped by run) fused or captured in a CUDA graph: one launch instead
    of one per kernel - the CPU time from the end of the run's first launch call to the end of its last
    leaves the CPU path - and the kernels back to back. Keeping every launch on the CPU path (kernels merely
    'back to back') cannot save anything in a launch-bound run: no kernel can start before its launch."""
    kernels = whatif.fix_rows(finding)
    run_of = np.asarray(finding.fix_groups, np.int64)
    if not len(kernels) or len(run_of) != len(kernels):
        return Edit()
    s = model.slices
    call_of = _launch_call_of(model)
    cut_s, cut_e = [], []
    for run in np.unique(run_of).tolist():
        calls = call_of[kernels[run_of == run]]
        calls = calls[calls >= 0]
        if len(calls) > 1:
            ends = s.ts_ns[calls] + s.dur_ns[calls]
            cut_s.append(int(ends.min()))
            cut_e.append(int(ends.max()))
    return Edit(label="run fused / one CUDA graph launch, kernels back to back", chain_rows=kernels,
                chain_group=run_of, cut_start_ns=np.asarray(cut_s, np.int64), cut_end_ns=np.asarray(cut_e, np.int64))


def _launch_call_of(model) -> np.ndarray:
    """Per slice row: the runtime call that launched it (LAUNCH flow), -1 for none."""
    s, f = model.slices, model.flows
    launch = f.kind == FlowKind.LAUNCH
    call_of = np.full(len(s), -1, np.int64)
    call_of[f.dst[launch]] = f.src[launch]
    return call_of


_HEAVY = ("gemm", "conv", "cutlass", "cublas", "xmma", "nvjet", "cudnn", "flash", "fmha", "attention", "sm80_",
          "sm90_", "sm100_", "reduce", "softmax", "norm", "nccl", "memcpy", "memset")


def _launch_bound_compiled(model, finding, rp, cfg) -> Edit:
    """torch.compile (default mode): Inductor fuses the pointwise kernels between two GEMM / conv / reduction
    kernels into one, but every kernel left is still launched on its own (H100: a launch-bound eager MLP kept
    ~80 short kernels a step compiled; the one-CUDA-graph figure predicted 2.81 ms for a measured 1.65 ms).
    Per run: kernels left = its heavy kernels + one per group of pointwise ones between them; the run's launch
    CPU time is cut but for one launch call (the run's median) per kernel left; kernels back to back."""
    graph = _launch_bound_graph(model, finding, rp, cfg)
    if not len(graph.chain_rows):
        return graph
    s = model.slices
    call_of = _launch_call_of(model)
    cut_s, cut_e, left_total = [], [], 0
    for run in np.unique(graph.chain_group).tolist():
        kernels = graph.chain_rows[graph.chain_group == run]
        heavy = np.array([any(w in model.name(int(k)).lower() for w in _HEAVY) for k in kernels], bool)
        pointwise_groups = int(((~heavy) & np.concatenate([[True], heavy[:-1]])).sum())
        left = int(heavy.sum()) + pointwise_groups
        calls = call_of[kernels]
        calls = calls[calls >= 0]
        if len(calls) < 2:
            continue
        ends = s.ts_ns[calls] + s.dur_ns[calls]
        per_launch = float(np.median(s.dur_ns[calls]))
        cut_from, cut_to = int(ends.min()), int(ends.max() - max(left - 1, 0) * per_launch)
        if cut_to > cut_from:
            cut_s.append(cut_from)
            cut_e.append(cut_to)
        left_total += left
    return Edit(label=f"torch.compile (default mode): pointwise kernels fused, {left_total} kernel launches left",
                chain_rows=graph.chain_rows, chain_group=graph.chain_group,
                cut_start_ns=np.asarray(cut_s, np.int64), cut_end_ns=np.asarray(cut_e, np.int64))


def _launch_bound_alternatives(model, finding, cfg, inflation, saving) -> tuple[str, tuple]:
    """Which fix the number is for: torch.compile (the finding's saving) and CUDA graphs apart."""
    graphs = whatif.saving_of(model, _launch_bound_graph(model, finding, replay_input(model), cfg),
                              inflation=inflation)
    estimate = (f"torch.compile (default mode): {saving.saving_ns / 1e6:.2f} ms; CUDA graphs (or "
                f"mode='reduce-overhead'): {graphs.saving_ns / 1e6:.2f} ms. {saving.estimate}")
    return estimate, (("compile", saving.saving_ns), ("cuda_graphs", graphs.saving_ns))


LAUNCH_BOUND_WHAT_IF = WhatIf(
    _launch_bound_compiled, "torch.compile (default): pointwise kernels fused between the heavy ones, each kernel "
    "left keeps one launch call; the CUDA-graph figure (one launch per run) in the estimate text",
    alternatives=_launch_bound_alternatives)


@rule("launch_bound", "Launch-bound kernel sequences", what_if=LAUNCH_BOUND_WHAT_IF, doc="""
runs of short kernels with the GPU idle between them (CPU launch time >= GPU time)""")
def launch_bound(ctx: RuleContext) -> RuleOutput:
    out = RuleOutput()
    for i, m in enumerate(ctx.models):
        s = m.slices
        src_of = _launch_call_of(m)
        groups: dict[str, list[LaunchRun]] = {}
        for run in launch_runs(ctx, i):
            groups.setdefault(run.label, []).append(run)
        steps = ctx.steps(i)
        for label, group in groups.items():
            kernels = np.concatenate([run.kernels for run in group])
            run_of = np.concatenate([np.full(len(run.kernels), j, np.int64) for j, run in enumerate(group)])
            launches = src_of[kernels]
            launches = launches[launches >= 0]
            run_idle = run_idle_intervals(ctx, i, group)
            idle = int(run_idle.covered(steps.t0_ns, steps.t1_ns).sum()) if not steps.synthetic \
                else run_idle.total_ns()
            gpu_ns, cpu_ns = int(s.dur_ns[kernels].sum()), int(s.dur_ns[launches].sum())
            where = f" in {label}" if label else ""
            src = common.source_of(m, int(launches[0])) if len(launches) else None
            ranges = [(int(s.ts_ns[run.kernels[0]]), int(s.ts_ns[run.kernels[-1]] + s.dur_ns[run.kernels[-1]]))
                      for run in group]
            ev = common.evidence(m, kernels[:MAX_KERNEL_EVIDENCE])
            facts = {"kernels": len(kernels), "gpu_kernel_ns": gpu_ns, "cpu_launch_ns": cpu_ns, "idle_ns": idle,
                     "runs": len(group)}
            out.findings.append(ctx.finding(
                "launch_bound", i,
                title=f"Launch-bound{where}: {len(kernels)} short kernels (mean {gpu_ns / len(kernels) / 1e3:.1f} µs) "
                      "with the "
                      f"GPU idle between them; CPU launch time {cpu_ns / 1e6:.2f} ms vs GPU time {gpu_ns / 1e6:.2f} ms",
                count=len(kernels), impact_ns=idle, time_ranges=ranges[:common.MAX_RANGES], evidence=ev, source=src,
                fix="Fuse the small ops: torch.compile the loop/function (or vectorise the Python loop into one "
                    "tensor op), or capture it with CUDA graphs (torch.cuda.graphs / mode='reduce-overhead'); "
                    "larger batches also amortise launch overhead.",
                evidence_rows=np.concatenate([kernels, launches]), fix_rows=kernels, fix_groups=run_of, facts=facts))
    return out


def copy_call_intervals(model) -> Intervals:
    """CPU intervals inside the runtime calls of pageable or blocking copies (their GPU idle is the copy
    rules' cost: pageable_memcpy / sync_memcpy)."""
    s, flows = model.slices, model.flows
    launch = flows.kind == FlowKind.LAUNCH
    pageable = common.name_ids(model, "memcpy-pageable-ids", event_names.is_pageable_copy)
    pageable_launch = launch & np.isin(s.name[flows.dst], pageable) & (s.kind[flows.dst] == Kind.MEMCPY)
    blocking = common.rows_with_names(model, "cudaMemcpy-blocking", event_names.is_blocking_memcpy, [Kind.RUNTIME])
    rows = np.unique(np.concatenate([flows.src[pageable_launch], blocking]))
    return Intervals.union_of(s.ts_ns[rows], s.ts_ns[rows] + s.dur_ns[rows])


# StepBreakdown idle field -> the class name gpu_idle's title and fix use
IDLE_CLASSES = (("host_wait_ns", "host wait"), ("kernel_wait_ns", "kernel wait"), ("other_idle_ns", "other"),
                ("sync_wait_ns", "sync wait"), ("dataloader_ns", "DataLoader"), ("compile_ns", "compile"),
                ("comm_wait_ns", "collectives"))
IDLE_FIX = {
    "host wait": "host wait ({share}): the CPU had not queued the next GPU work; look at the CPU ops between "
                 "kernels, cut Python and launch overhead with torch.compile / CUDA graphs or a larger batch, and "
                 "move logging, data preparation and syncs out of the step.",
    "kernel wait": "kernel wait ({share}): many short gaps (< {threshold}) between kernels that were already queued: the "
                   "step is a long chain of small kernels; fuse them with torch.compile or CUDA graphs and raise "
                   "the batch size.",
    "other": "other ({share}): long gaps (>= {threshold}) although the next work was already queued: the GPU waits on "
             "something the trace does not name (an event / stream wait, a dependency on another stream, a "
             "device-side copy); open the longest gaps in the timeline and check the stream waits and cross-stream "
             "dependencies before them (fusing small kernels will not help).",
    "sync wait": "sync wait ({share}): the queue drained after a host synchronisation; see the host_sync finding.",
    "DataLoader": "DataLoader ({share}): the GPU waits for the next batch; see the dataloader_bound finding.",
    "compile": "compile ({share}): torch.compile itself ran inside the window; see the graph_break / recompile findings.",
    "collectives": "collectives ({share}): the GPU waits while a CPU-side collective runs; see the "
                   "comm_bound finding.",
}


def idle_fix_text(parts: dict[str, int], dur_ns: int, kernel_wait_max_ns: int, min_share_pct: float = 10.0) -> str:
    """One sentence per idle class holding at least min_share_pct of the idle time, largest first."""
    idle = max(sum(parts.values()), 1)
    ranked = [(k, v) for k, v in sorted(parts.items(), key=lambda kv: -kv[1]) if v > 0]
    ranked = ranked[:1] + [(k, v) for k, v in ranked[1:] if 100.0 * v / idle >= min_share_pct]
    return " ".join(IDLE_FIX[k].format(share=fmt_pct(100 * v / max(dur_ns, 1)), threshold=fmt_ns(kernel_wait_max_ns))
                    for k, v in ranked)


@rule("gpu_idle", "GPU idle during steps", doc="""
GPU idle share of the steps, split HTA-style into host wait / kernel wait (queued, gap < 30 µs) / other (queued,
gap >= 30 µs) / sync / DataLoader / compile / collectives; the title names each class with its share and the fix
has one paragraph per class that holds >= 10 % of the idle (never above warning: a symptom)""")
def gpu_idle(ctx: RuleContext) -> RuleOutput:
    out = RuleOutput()
    cfg = ctx.cfg("gpu_idle")
    max_idle = float(cfg["max_idle_pct"])
    kw = int(cfg["kernel_wait_max_ns"])
    for i, m in enumerate(ctx.models):
        steps = step_breakdown(m, kw)
        if not steps.has_gpu:
            out.not_run.append(CheckNotRun("gpu_idle", f"no GPU activity in the trace ({common.no_gpu_words(m)})"))
            continue
        totals = steps.totals()
        dur = max(totals["dur_ns"], 1)
        idle = int(steps.idle_ns.sum())
        if 100.0 * idle / dur < max_idle:
            continue
        parts = {label: totals[field] for field, label in IDLE_CLASSES}
        split = ", ".join(f"{label} {fmt_pct(100 * ns / dur)}"
                          for label, ns in sorted(parts.items(), key=lambda kv: -kv[1]) if ns)
        unexplained = totals["host_wait_ns"] + totals["kernel_wait_ns"] + totals["other_idle_ns"]
        pieces = idle_pieces(m, kw)
        if pieces is not None:  # the idle other findings already bill: launch-bound runs, copy calls
            waits = pieces.host_wait.merge(pieces.kernel_wait).merge(pieces.other)
            billed_elsewhere = run_idle_intervals(ctx, i).merge(copy_call_intervals(m))
            if len(billed_elsewhere):
                waits = waits.subtract(billed_elsewhere)
            billed = unexplained
            unexplained = int(waits.covered(steps.ts_ns, steps.ts_ns + steps.dur_ns).sum())
            billed -= unexplained
        worst = int(np.argmax(steps.idle_ns))
        worst_gaps = idle_gaps(m, int(steps.ts_ns[worst]), int(steps.ts_ns[worst] + steps.dur_ns[worst]))
        gap_start_ns, gap_end_ns = worst_gaps.start_ns, worst_gaps.end_ns
        big = np.argsort(-(gap_end_ns - gap_start_ns))[:common.MAX_EVIDENCE]
        ev = [{"name": f"step {int(number)}", "ts_ns": int(ts), "dur_ns": int(step_dur), "idle_ns": int(step_idle),
               "rank": m.rank, "busy_pct": round(100.0 * busy / max(step_dur, 1), 1)}  # compute + comm + copies
              for number, ts, step_dur, step_idle, busy in zip(steps.number, steps.ts_ns, steps.dur_ns, steps.idle_ns,
                                                               steps.busy_ns)]
        facts = {"wait_billed_to_other_findings_ns": billed} if pieces is not None and billed > 0 else {}
        # the worst step's longest gaps, in the steps' shape: a gap is idle for all of it
        ev += [{"name": f"idle gap in step {int(steps.number[worst])}", "ts_ns": int(gap_start_ns[j]),
                "dur_ns": int(gap_end_ns[j] - gap_start_ns[j]), "idle_ns": int(gap_end_ns[j] - gap_start_ns[j]),
                "rank": m.rank, "busy_pct": 0.0} for j in big]
        fix = idle_fix_text(parts, dur, kw, float(cfg["fix_min_share_pct"]))
        cap = Severity.parse(str(cfg["max_severity"]))
        sev = min(ctx.severity(ctx.pct(i, unexplained), unexplained), cap)
        out.findings.append(ctx.finding(
            # the cost (Lost / step) is the idle no other finding bills: say so, or the two shares read as a mismatch
            "gpu_idle", i, severity=sev, title=f"GPU idle {fmt_pct(100 * idle / dur)} of step time ({split}); "
                                               f"{fmt_pct(ctx.pct(i, unexplained))} of the mean step not billed to "
                                               "another finding",
            count=len(steps), impact_ns=unexplained,
            time_ranges=[(int(start), int(end)) for start, end in zip(gap_start_ns[big], gap_end_ns[big])],
            evidence=ev, source=None, fix=fix, facts=facts))
    return out


RULES = (launch_bound, gpu_idle)
