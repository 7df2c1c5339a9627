"""pageable_memcpy: host<->device copies through pageable host memory.

The direction and host memory kind are only in the GPU event's name (`Memcpy HtoD (Pageable -> Device)`).
A pageable copy is staged through a driver bounce buffer and is synchronous for the host; costed by the
union of the GPU copy time and the CPU time blocked in the copy's runtime calls (and, host->device, the
syncs of the same op; device->host syncs are host_sync's, e.g. `.cpu()`): they overlap, so not their sum.
"""
from __future__ import annotations

import numpy as np

from core.analysis import intervals
from core.rules import common as c
from core.rules import sync_sites
from core.rules.base import RuleContext, RuleOutput, rule
from core.trace import event_names
from core.trace.model import FlowKind, Kind


@rule("pageable_memcpy", "Copies through pageable host memory")
def pageable_memcpy(ctx: RuleContext) -> RuleOutput:
    out = RuleOutput()
    for i, m in enumerate(ctx.models):
        s = m.slices
        rows = c.rows_with_names(m, "memcpy-pageable", event_names.is_pageable_copy, [Kind.MEMCPY])
        if not len(rows):
            continue
        f = m.flows
        launch = f.kind == FlowKind.LAUNCH
        src_of = dict(zip(f.dst[launch].tolist(), f.src[launch].tolist()))
        src = np.array([src_of.get(int(r), -1) for r in rows], np.int64)  # few rows: memcpy events only
        t_cpu = np.where(src >= 0, s.ts_ns[np.maximum(src, 0)], s.ts_ns[rows])
        steps = ctx.steps(i)
        if not steps.synthetic:
            keep = steps.index_of(t_cpu) >= 0
            rows, src = rows[keep], src[keep]
        if not len(rows):
            continue
        aten = c.name_ids(m, "aten", lambda n: n.startswith("aten::"))
        op = c.outermost_chain(m, np.maximum(src, 0), aten)
        op = np.where(src >= 0, op, -1)
        syncs = c.rows_with_names(m, "sync", c.exact(*event_names.SYNC_CALLS), [Kind.RUNTIME])
        sync_op = c.outermost_chain(m, syncs, aten) if len(syncs) else np.zeros(0, np.int64)
        direction = np.array(["HtoD" if "HtoD" in m.name(int(r)) else "DtoH" for r in rows])
        for d in np.unique(direction).tolist():
            sel = direction == d
            g, gs, gop = rows[sel], src[sel], op[sel]
            ops = np.unique(gop[gop >= 0])
            # H2D: the op's syncs are the copy's (host_sync skips them); D2H syncs stay with host_sync
            g_sync = syncs[np.isin(sync_op, ops)] if len(ops) and d == "HtoD" else np.zeros(0, np.int64)
            # the time the step loses: the GPU copies and the CPU blocked in their calls and syncs overlap
            # (a pageable copy runs while the CPU waits in cudaMemcpyAsync), so the union, not the sum
            parts = np.concatenate([g, gs[gs >= 0], g_sync])
            us, ue = intervals.union(s.ts_ns[parts], s.ts_ns[parts] + s.dur_ns[parts])
            cost = int((ue - us).sum())
            nbytes = int(np.maximum(s.at("bytes", g), 0).sum())
            first = int(gop[gop >= 0][0]) if (gop >= 0).any() else int(gs[0])
            if d == "HtoD":
                title = f"Host→device copies from pageable memory ({len(g)}×, {nbytes / 2**20:.1f} MiB)"
                fix = ("Pin the host memory (DataLoader(pin_memory=True) or tensor.pin_memory()) and copy with "
                       ".to(device, non_blocking=True) so the copy overlaps compute.")
            else:
                title = f"Device→host copies into pageable memory ({len(g)}×, {nbytes / 2**20:.1f} MiB)"
                fix = ("Copy into a preallocated pinned buffer with non_blocking=True (and read it after an "
                       "event), or keep the data on the GPU.")
            ev = c.evidence(m, g, bytes=None)
            for e in ev:
                e["bytes"] = int(s.at("bytes", e["row"]))
            rows_all = np.concatenate([g, gs[gs >= 0], ops, g_sync])
            # `source`, not `src`: src holds the launch rows of every direction and the loop comes back to it
            source = c.source_of(m, first) if first >= 0 else None
            # the runner's recorded sync sites hold the exact call line; Python frames (with_stack) only the
            # enclosing function, so a matching site wins and stacks are the fallback
            site_src, site_ev = sync_sites.match(ctx, i, "copy_h2d" if d == "HtoD" else "copy_d2h")
            if site_src is not None or source is None:
                source = site_src if site_src is not None else source
                ev.extend(site_ev)
            out.findings.append(ctx.finding(
                "pageable_memcpy", i, title=title, count=len(g), impact_ns=cost,
                time_ranges=c.ranges_of(m, np.where(gop >= 0, gop, g)), evidence=ev,
                source=source, fix=fix, evidence_rows=rows_all))
    return out


RULES = (pageable_memcpy,)
