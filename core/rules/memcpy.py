"""pageable_memcpy: host<->device copies through pageable host memory.

The direction and host memory kind are only in the GPU event's name (`Memcpy HtoD (Pageable -> Device)`).
A pageable copy is staged through a driver bounce buffer and is synchronous for the host; costed by the
union of the GPU copy time and the CPU time blocked in the copy's runtime calls (and, host->device, the
syncs of the same op; device->host syncs are host_sync's, e.g. `.cpu()`): they overlap, so not their sum.
"""
from __future__ import annotations

import numpy as np

from core.analysis.critical_path import Edit
from core.analysis.intervals import Intervals
from core.rules import common, sync_sites, whatif
from core.rules.base import RuleContext, RuleOutput, WhatIf, rule
from core.trace import event_names
from core.trace.model import FlowKind, Kind, TraceModel


def _pinned_bandwidth(model: TraceModel, direction: str, cfg: dict) -> tuple[float, str]:
    """Bytes per ns of pinned copies in that direction: the trace's own (median of copies >= 64 KiB),
    else resources/whatif.toml by GPU name."""
    s = model.slices
    ids = model.strings.ids_matching(lambda n: event_names.is_pinned_copy(n, direction))
    rows = s.present_rows("bytes")  # copies and sets carry bytes: no pass over every slice's bytes
    nbytes = s.at("bytes", rows)
    keep = np.isin(s.name[rows], ids) & (s.kind[rows] == Kind.MEMCPY) & (nbytes >= 65536) & (s.dur_ns[rows] > 0)
    if int(keep.sum()) >= 3:
        return float(np.median(nbytes[keep] / s.dur_ns[rows[keep]])), "this trace's pinned copies"
    names = [str(p.get("name", "")) for p in model.meta.device_properties]
    table = cfg["pinned_gbps"]
    for key, gbps in table.items():
        if key != "default" and any(key.lower() in n.lower() for n in names):
            return float(gbps), f"{key} pinned bandwidth (resources/whatif.toml)"
    return float(table["default"]), "default pinned bandwidth (resources/whatif.toml)"


def _pageable(model, finding, rp, cfg) -> Edit:
    s = model.slices
    rows = whatif.fix_rows(finding)
    copies = whatif.of_kind(model, rows, Kind.MEMCPY)
    scale = np.ones(len(copies))
    how = ""
    for direction in ("HtoD", "DtoH"):
        sel = np.array(["" if direction not in model.name(int(r)) else direction for r in copies]) == direction
        if not sel.any():
            continue
        bw, how = _pinned_bandwidth(model, direction, cfg)
        pinned_ns = np.maximum(s.at("bytes", copies[sel]), 0) / max(bw, 1e-9)
        scale[sel] = np.minimum(pinned_ns / np.maximum(s.dur_ns[copies[sel]], 1), 1.0)
    calls = whatif.of_kind(model, rows, Kind.RUNTIME)
    return Edit(label=f"copies at pinned bandwidth ({how}), async", scale_rows=copies, scale=scale,
                unblock_rows=calls[np.isin(calls, rp.sync_rows)])


@rule("pageable_memcpy", "Copies through pageable host memory",
      what_if=WhatIf(_pageable, "each copy priced at pinned bandwidth (the trace's own pinned copies of that "
                     "direction, "
                     "else resources/whatif.toml by GPU) and its call made async"), doc="""
`Memcpy HtoD (Pageable -> Device)` / `DtoH (Device -> Pageable)`: pin memory + `non_blocking`""")
def pageable_memcpy(ctx: RuleContext) -> RuleOutput:
    out = RuleOutput()
    for i, m in enumerate(ctx.models):
        s = m.slices
        rows = common.rows_with_names(m, "memcpy-pageable", event_names.is_pageable_copy, [Kind.MEMCPY])
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
        aten = common.name_ids(m, "aten", lambda n: n.startswith("aten::"))
        op = common.outermost_chain(m, np.maximum(src, 0), aten)
        op = np.where(src >= 0, op, -1)
        syncs = common.rows_with_names(m, "sync", common.exact(*event_names.SYNC_CALLS), [Kind.RUNTIME])
        sync_op = common.outermost_chain(m, syncs, aten) if len(syncs) else np.zeros(0, np.int64)
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
            cost = Intervals.union_of(s.ts_ns[parts], s.ts_ns[parts] + s.dur_ns[parts]).total_ns()
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
            ev = common.evidence(m, g, bytes=None)
            for e in ev:
                e["bytes"] = int(s.at("bytes", e["row"]))
            rows_all = np.concatenate([g, gs[gs >= 0], ops, g_sync])
            # `source`, not `src`: src holds the launch rows of every direction and the loop comes back to it
            source = common.source_of(m, first) if first >= 0 else None
            # the runner's recorded sync sites hold the exact call line; Python frames (with_stack) only the
            # enclosing function, so a matching site wins and stacks are the fallback
            site_src, site_facts = sync_sites.match(ctx, i, "copy_h2d" if d == "HtoD" else "copy_d2h")
            if site_src is not None or source is None:
                source = site_src if site_src is not None else source
            else:
                site_facts = {}
            out.findings.append(ctx.finding(
                "pageable_memcpy", i, title=title, count=len(g), impact_ns=cost,
                time_ranges=common.ranges_of(m, np.where(gop >= 0, gop, g)), evidence=ev,
                source=source, fix=fix, evidence_rows=rows_all, fix_rows=rows_all, facts=site_facts))
    return out


RULES = (pageable_memcpy,)
