"""dataloader_bound: the step waits for the DataLoader.

`enumerate(DataLoader)#..._SingleProcessDataLoaderIter.__next__` (num_workers=0) or
`_MultiProcessingDataLoaderIter.__next__` taking more than min_pct of the step. Cost: the GPU idle time
spent inside `__next__` (GPU traces) or its CPU time (CPU-only traces).
"""
from __future__ import annotations

import numpy as np

from core.analysis.breakdown import step_breakdown
from core.analysis.critical_path import Edit
from core.rules import common, whatif
from core.rules.base import RuleContext, RuleOutput, WhatIf, rule
from core.trace import event_names
from core.trace.model import Kind
from core.units import fmt_pct


def _dataloader(model, finding, rp, cfg) -> Edit:
    s = model.slices
    rows = whatif.of_kind(model, whatif.fix_rows(finding), Kind.CPU_OP, Kind.ANNOTATION, Kind.OTHER, Kind.PYTHON)
    handoff = int(cfg["dataloader"]["handoff_ns"])
    t0 = s.ts_ns[rows] + np.minimum(s.dur_ns[rows], handoff)
    t1 = s.ts_ns[rows] + s.dur_ns[rows]
    return Edit(label="loading overlapped with the previous step", cut_start_ns=t0, cut_end_ns=t1)


@rule("dataloader_bound", "Data loading stalls the step",
      what_if=WhatIf(_dataloader, "DataLoader __next__ overlapped with the previous step (its CPU time leaves the "
                     "step, "
                     "[dataloader] handoff_ns stays per call)", loader_fix=True), doc="""
DataLoader `__next__` > 5 % of the step; `_SingleProcessDataLoaderIter` = num_workers=0""")
def dataloader_bound(ctx: RuleContext) -> RuleOutput:
    out = RuleOutput()
    min_pct = float(ctx.cfg("dataloader_bound")["min_pct"])
    kw = int(ctx.cfg("gpu_idle")["kernel_wait_max_ns"])
    for i, m in enumerate(ctx.models):
        b = step_breakdown(m, kw)
        steps = ctx.steps(i)
        cpu_dur = steps.t1_ns - steps.t0_ns
        total = max(int(cpu_dur.sum()), 1)
        cpu_ns = int(b.dataloader_cpu_ns.sum())
        if 100.0 * cpu_ns / total < min_pct:
            continue
        rows = common.rows_with_names(m, "dataloader-next",
                                 event_names.is_dataloader_next)
        rows = ctx.in_steps(i, rows)
        single = any("_SingleProcessDataLoaderIter" in m.name(int(r)) for r in rows[:5])
        impact = int(b.dataloader_ns.sum()) if b.has_gpu else cpu_ns
        mode = " (num_workers=0: loading runs in the training process)" if single else ""
        fix = ("Load in background workers: DataLoader(num_workers=4..8, persistent_workers=True, pin_memory=True, "
               "prefetch_factor=2); move per-sample Python work (decoding, augmentation) into the Dataset workers "
               "or onto the GPU; cache preprocessed data.") if single else (
               "The workers cannot keep up: raise num_workers / prefetch_factor, make __getitem__ cheaper "
               "(pre-decode, cache), and use pin_memory=True.")
        per_step = [round(100.0 * float(x) / max(float(d), 1), 1) for x, d in zip(b.dataloader_cpu_ns, cpu_dur)]
        ev = common.evidence(m, rows)
        out.findings.append(ctx.finding(
            "dataloader_bound", i,
            title=f"DataLoader takes {fmt_pct(100.0 * cpu_ns / total)} of step time{mode}",
            count=len(rows), impact_ns=impact, time_ranges=common.ranges_of(m, rows), evidence=ev,
            source=common.source_of(m, int(rows[0])) if len(rows) else None, fix=fix, evidence_rows=rows, fix_rows=rows,
            facts={"share_of_each_step_pct": per_step}))
    return out


RULES = (dataloader_bound,)
