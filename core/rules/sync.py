"""host_sync and sync_memcpy: the CPU waits for the GPU.

host_sync: cudaStreamSynchronize / cudaDeviceSynchronize / cudaEventSynchronize inside the steps, named
by the op that caused them (aten::item -> _local_scalar_dense, aten::nonzero, aten::copy_ ...) and costed
by the blocked CPU time plus the GPU idle gap that follows (the queue drained while the host waited).
Not counted: the profiler's own final cudaDeviceSynchronize (outside the steps / after the last one),
syncs inside torch.compile itself (autotuning), syncs of pageable H2D copies (pageable_memcpy owns them)
and syncs inside collectives (comm_bound owns them). On CPU-only traces the ops that would sync on a
GPU are reported as hints.
"""
from __future__ import annotations

import numpy as np

from core.rules import common, sync_sites, whatif
from core.rules.base import RuleContext, RuleOutput, WhatIf, rule
from core.trace import event_names
from core.trace.model import Kind

PRINTING = "printing a tensor (str/print/format)"
# Python frames of tensor printing: str(t) / print(t) / f"{t}" run torch/_tensor_str.py under Tensor.__repr__ /
# __format__, whose ops (item, is_nonzero, masked_select, to/copy_) are the syncs
_PRINT_FRAMES = ("torch/_tensor_str.py(",)
_PRINT_METHODS = (": __repr__", ": __format__", ": __str__")
SYNC_NAMES = event_names.SYNC_CALLS
WOULD_SYNC = event_names.WOULD_SYNC_OPS

_WHY = {
    "aten::item": (".item() / float(t) / bool(t) copies a scalar to the host and waits for the GPU",
                   "Keep the value on the GPU (accumulate metrics in a tensor) and call .item() once every N steps, "
                   "or log asynchronously; avoid Python `if tensor:` branches in the step."),
    "aten::is_nonzero": ("a Python branch on a tensor value (`if t:` / `if t.mean() > 0:`) waits for the GPU",
                         "Replace the data-dependent branch with torch.where / masking, or move it out of the "
                         "training step."),
    "aten::nonzero": ("nonzero / boolean-mask indexing must wait for the GPU to know the output size",
                      "Use a fixed-size alternative (torch.where, masked multiplication, nonzero_static) or do it "
                      "every N steps."),
    "aten::masked_select": ("masked_select / boolean indexing waits for the GPU to know the output size",
                            "Use torch.where or multiply by the mask instead of boolean indexing."),
    "aten::copy_": (".cpu() / .tolist() / .numpy() copies a tensor to the host and waits",
                    "Copy to pinned memory with non_blocking=True and read it later, or keep the data on the GPU."),
    "DistributedDataParallel.forward": (
        "DDP waits on CUDA events (buffer broadcast / gloo on CUDA tensors)",
        "Use the NCCL backend for CUDA tensors; pass broadcast_buffers=False when buffers do not change."),
    PRINTING: ("str() / print() / f-string formatting copies the tensor's values to the host and waits for the GPU",
               "Print or log tensors only every N steps (or after training); keep running metrics on the GPU "
               "and format them once, e.g. print(f\"{loss.item():.4f}\") every 100 steps instead of print(loss) "
               "every step."),
    "": ("explicit synchronisation (torch.cuda.synchronize(), event.synchronize())",
         "Remove explicit synchronize calls from the training loop; use CUDA events only for timing runs."),
}
_ALIASES = {"aten::_local_scalar_dense": "aten::item", "aten::to": "aten::copy_", "aten::_to_copy": "aten::copy_",
            "aten::cpu": "aten::copy_", "aten::index": "aten::nonzero", "aten::unique": "aten::nonzero",
            "aten::_unique2": "aten::nonzero"}


def _label(op: str) -> str:
    """How a finding names the op: aten::index only syncs for a boolean mask (an integer index does not)."""
    return "boolean-mask indexing (aten::index)" if op == "aten::index" else op


def _why(op: str) -> tuple[str, str]:
    return _WHY.get(_ALIASES.get(op, op), (f"{op} waits for the GPU", _WHY[""][1]))


def _sync_rows(ctx: RuleContext, i: int) -> np.ndarray:
    m = ctx.models[i]
    s = m.slices
    rows = common.rows_with_names(m, "sync", common.exact(*SYNC_NAMES), [Kind.RUNTIME])
    if not len(rows):
        return rows
    steps = ctx.steps(i)
    if not steps.synthetic:
        rows = rows[steps.index_of(s.ts_ns[rows]) >= 0]
    elif len(rows):
        # no steps: the profiler's own flush is the last root-level cudaDeviceSynchronize of the trace
        last = rows[-1] if m.name(int(rows[-1])) == event_names.DEVICE_SYNC else -1
        par = common.parents(m)
        if last >= 0 and par[last] < 0 and s.ts_ns[last] >= int(s.ts_ns[rows].max()):
            rows = rows[rows != last]
    rows = rows[~common.inside(m, rows, common.compile_windows(m))]
    coll = common.ancestor_matching(m, rows, common.name_ids(m, "collective-names", lambda n: "all_reduce" in n or
                                                 "nccl" in n.lower() or n.startswith(("gloo:", "c10d::"))))
    return rows[coll < 0]


@rule("host_sync", "CPU blocked waiting for the GPU",
      what_if=WhatIf(whatif.unblock, "the syncs no longer block (the copy of the value still happens; data "
                     "dependencies stay)"), doc="""
cudaStream/Device/EventSynchronize inside steps, named by the op that caused it (`.item()`, `nonzero`, `if
tensor:`, `.cpu()`, printing a tensor with `str`/`print`/f-string when stacks show `torch/_tensor_str.py`); cost
= blocked CPU time + GPU idle that follows. The profiler's own final sync is ignored. CPU-only traces: ops that
would sync on a GPU, as hints""")
def host_sync(ctx: RuleContext) -> RuleOutput:
    out = RuleOutput()
    for i, m in enumerate(ctx.models):
        if common.gpu_event_count(m) == 0 and not common.unknown_categories_of(m):  # unknown device: not CPU-only
            out.extend(_cpu_hints(ctx, i))
            continue
        rows = _sync_rows(ctx, i)
        if not len(rows):
            continue
        s = m.slices
        aten = common.name_ids(m, "aten", lambda n: n.startswith("aten::"))
        cause = common.outermost_chain(m, rows, aten)
        # syncs of pageable host->device copies belong to pageable_memcpy
        h2d = _h2d_pageable_ops(m, aten)
        keep = ~np.isin(cause, h2d) | (cause < 0)
        rows, cause = rows[keep], cause[keep]
        if not len(rows):
            continue
        steps = ctx.steps(i)
        end = s.ts_ns[rows] + s.dur_ns[rows]
        st = steps.index_of(s.ts_ns[rows])
        limit = np.where(st >= 0, steps.t1_ns[np.maximum(st, 0)], end)
        gap = _idle_caused(m, s.ts_ns[rows], end, limit)
        cost = s.dur_ns[rows] + gap
        cause_name = np.where(cause >= 0, s.name[np.maximum(cause, 0)], 0)
        calls = print_calls(m, np.where(cause >= 0, cause, rows))
        cause_name[calls >= 0] = -1
        for nid in np.unique(cause_name).tolist():
            sel = cause_name == nid
            op = m.strings[nid] if nid >= 0 else PRINTING
            group_rows, group_cause = rows[sel], cause[sel]
            first = int(group_cause[0]) if group_cause[0] >= 0 else int(group_rows[0])
            region = _enclosing_annotation(m, first)
            why, fix = _why(op or (region if region.startswith("DistributedDataParallel") else ""))
            label = _label(op) if op else m.name(int(group_rows[0]))
            where = f" in {region}" if region else ""
            ev_rows = np.concatenate([group_rows, group_cause[group_cause >= 0]])
            ev = common.evidence(m, group_rows, cause=label, annotation=region or "")
            ev_by_row = {e["row"]: e for e in ev}
            for r, gp in zip(group_rows.tolist(), gap[sel].tolist()):
                if r in ev_by_row:
                    ev_by_row[r]["gpu_idle_after_ns"] = int(gp)
            src = common.source_of(m, first)
            # the runner's recorded sync sites hold the exact call line; Python frames (with_stack) only the
            # enclosing function, so a matching site wins and stacks are the fallback
            site_src, site_facts = sync_sites.match(ctx, i, sync_sites.op_kind(op))
            if site_src is not None or src is None:
                src = site_src if site_src is not None else src
            else:
                site_facts = {}
            out.findings.append(ctx.finding(
                "host_sync", i,
                title=f"Host sync from {label}{where}: {why} ({_times(sel.sum(), calls[sel], 'syncs')})",
                count=_count(sel.sum(), calls[sel]), impact_ns=int(cost[sel].sum()),
                time_ranges=common.ranges_of(m, np.where(group_cause >= 0, group_cause, group_rows)), evidence=ev,
                source=src, fix=fix, evidence_rows=ev_rows, fix_rows=ev_rows, facts=site_facts))
    return out


def _count(n_rows, calls: np.ndarray) -> int:
    """Count of a finding: the printing calls for a printing group (one print runs many ops), else rows."""
    return int(len(np.unique(calls))) if len(calls) and calls[0] >= 0 else int(n_rows)


def _times(n_rows, calls: np.ndarray, unit: str = "ops") -> str:
    n = _count(n_rows, calls)
    return f"{n} prints, {int(n_rows)} {unit}" if len(calls) and calls[0] >= 0 else f"{n}×"


def print_calls(m, rows: np.ndarray) -> np.ndarray:
    """Per row: which tensor-printing call it ran inside (an id per outermost torch/_tensor_str.py or
    Tensor.__repr__/__format__ frame on the row's thread), -1 when none or without Python frames."""
    from core.analysis.intervals import Intervals
    from core.trace.model import TrackKind
    rows = np.asarray(rows, np.int64)
    out = np.full(len(rows), -1, np.int64)
    if not len(rows):
        return out
    fr = common.rows_with_names(m, "print-frames", lambda n: n.startswith(_PRINT_FRAMES) or (
        n.startswith("torch/_tensor.py(") and n.endswith(_PRINT_METHODS)), [Kind.PYTHON])
    if not len(fr):
        return out
    s, t = m.slices, m.tracks
    base = 0
    for tid in np.unique(t.tid[s.track[fr]]).tolist():
        f = fr[t.tid[s.track[fr]] == tid]
        frames = Intervals.union_of(s.ts_ns[f], s.ts_ns[f] + s.dur_ns[f])
        mine = (t.tid[s.track[rows]] == tid) & (t.kind[s.track[rows]] != TrackKind.PYTHON)
        hit = mine & common.inside(m, rows, frames)
        out[hit] = base + np.searchsorted(frames.start_ns, s.ts_ns[rows[hit]], side="right") - 1
        base += len(frames)
    return out


def _idle_caused(m, t0: np.ndarray, t1: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """GPU idle after each sync that the sync caused: only when the GPU was still working during the wait
    (the sync drained the queue), up to the next GPU activity, the next sync, the step end, and without
    the time torch.compile ran in between (compile owns that)."""
    busy = common.gpu_busy_union(m)
    if not len(busy):
        return np.zeros(len(t0), np.int64)
    drained = np.searchsorted(busy.end_ns, t1, side="right") > np.searchsorted(busy.end_ns, t0, side="right")
    order = np.argsort(t0, kind="stable")
    nxt = np.full(len(t0), np.iinfo(np.int64).max, np.int64)
    nxt[order[:-1]] = t0[order[1:]]
    gap = common.gpu_gap_after(m, t1, np.minimum(limit, nxt))
    compiling = common.compile_windows(m)
    if len(compiling):
        gap = np.maximum(gap - compiling.covered(t1, t1 + gap), 0)
    return np.where(drained, gap, 0)


def _enclosing_annotation(m, row: int) -> str:
    """Innermost record_function range (user annotation) around a row, '' if none."""
    from core.analysis.tree import ancestor_with_kind
    a = ancestor_with_kind(m, np.array([row]), (Kind.ANNOTATION,))
    return m.name(int(a[0])) if a[0] >= 0 else ""


def _h2d_pageable_ops(m, aten_ids: np.ndarray) -> np.ndarray:
    """Outermost aten ops that launched a pageable host->device copy."""
    from core.trace.model import FlowKind
    f = m.flows
    launch = f.kind == FlowKind.LAUNCH
    pageable = common.name_ids(m, "memcpy-h2d-pageable", event_names.is_pageable_h2d)
    if not len(pageable):
        return np.zeros(0, np.int64)
    sel = launch & np.isin(m.slices.name[f.dst], pageable)
    src = f.src[sel]
    top = common.outermost_chain(m, src, aten_ids)
    return np.unique(top[top >= 0])


def _cpu_hints(ctx: RuleContext, i: int) -> RuleOutput:
    out = RuleOutput()
    m = ctx.models[i]
    rows = common.rows_with_names(m, "would-sync", common.exact(*WOULD_SYNC), [Kind.CPU_OP])
    if not len(rows):
        return out
    aten = common.name_ids(m, "aten", lambda n: n.startswith("aten::"))
    top = common.outermost_chain(m, rows, aten)
    # name the op the user called: aten::item over _local_scalar_dense, aten::index over the nonzero of a
    # boolean mask; an unrelated outer op (aten::masked_fill ...) keeps the inner op's name
    named = common.name_ids(m, "would-sync-named", common.exact(*WOULD_SYNC, "aten::index"))
    ok = top >= 0
    ok[ok] = np.isin(m.slices.name[top[ok]], named)
    rows = np.unique(np.where(ok, top, rows))
    opt = common.ancestor_matching(m, rows, common.name_ids(m, "optimizer-ann", lambda n: n.startswith("Optimizer.")))
    rows = rows[opt < 0]
    rows = rows[~common.inside(m, rows, common.compile_windows(m))]
    steps = ctx.steps(i)
    if not steps.synthetic:
        rows = rows[steps.index_of(m.slices.ts_ns[rows]) >= 0]
    s = m.slices
    key = s.name[rows].astype(np.int64)
    calls = print_calls(m, rows)
    key[calls >= 0] = -1
    for nid in np.unique(key).tolist():
        g = rows[key == nid]
        op = m.strings[nid] if nid >= 0 else PRINTING
        why, fix = _why(op)
        op = _label(op)
        out.findings.append(ctx.finding(
            "host_sync", i, title=f"{op} would block on a GPU: {why} ({_times(len(g), calls[key == nid])}, "
                                  f"{common.no_gpu_words(m)})",
            count=_count(len(g), calls[key == nid]), impact_ns=int(s.dur_ns[g].sum()), time_ranges=common.ranges_of(m, g),
            evidence=common.evidence(m, g), source=common.source_of(m, int(g[0])), fix=fix, evidence_rows=g, hint=True))
    return out


@rule("sync_memcpy", "Blocking cudaMemcpy",
      what_if=WhatIf(whatif.unblock, "the blocking cudaMemcpy calls no longer block (async from pinned memory)"),
      doc="""
blocking `cudaMemcpy` calls""")
def sync_memcpy(ctx: RuleContext) -> RuleOutput:
    out = RuleOutput()
    for i, m in enumerate(ctx.models):
        rows = common.rows_with_names(m, "cudaMemcpy-blocking", event_names.is_blocking_memcpy, [Kind.RUNTIME])
        rows = ctx.in_steps(i, rows)
        if not len(rows):
            continue
        s = m.slices
        end = s.ts_ns[rows] + s.dur_ns[rows]
        cost = s.dur_ns[rows] + common.gpu_gap_after(m, end)
        out.findings.append(ctx.finding(
            "sync_memcpy", i, title=f"Blocking cudaMemcpy ({len(rows)}×): the CPU waits for each copy",
            count=len(rows), impact_ns=int(cost.sum()), time_ranges=common.ranges_of(m, rows),
            evidence=common.evidence(m, rows), source=common.source_of(m, int(rows[0])),
            fix="Use tensor.to(device, non_blocking=True) from pinned memory (cudaMemcpyAsync) and avoid "
                "synchronous copies inside the step.", evidence_rows=rows, fix_rows=rows))
    return out


RULES = (host_sync, sync_memcpy)
