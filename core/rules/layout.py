"""non_contiguous_input and channels_last: copies made because a tensor was not in the layout an op needs.

A copy happened exactly when `aten::contiguous` (or a `reshape` that could not be a view) has an
`aten::clone` child: `contiguous()` on a tensor already in the requested format returns it unchanged.
So the signal is the clone under contiguous/reshape, attributed to the op that asked for it (the
clone's grand-parent: cudnn_convolution, matmul, ... or Python when called directly). Inputs with a
zero stride (broadcast / expanded tensors) are not flagged; nn.Linear's transposed weight never shows a
clone (addmm takes it as is). Needs record_shapes only for the stride evidence; the structure is enough.
"""
from __future__ import annotations

import json

import numpy as np

from core.analysis.stats import device_time_per_row
from core.rules import common as c
from core.rules.base import RuleContext, RuleOutput, rule
from core.trace.model import Kind

COPY_PARENTS = ("aten::contiguous", "aten::reshape", "aten::_reshape_alias", "aten::flatten")


def _has_zero_stride(m, ids: np.ndarray) -> np.ndarray:
    """Per string id of an "Input Strides" text: does the first tensor have a 0 stride (expanded)?"""
    out = np.zeros(len(ids), bool)
    for k, sid in enumerate(ids.tolist()):
        text = m.strings[sid]
        if not text:
            continue
        try:
            first = json.loads(text)[0]
        except (ValueError, IndexError, TypeError):
            continue
        out[k] = isinstance(first, list) and 0 in first
    return out


@rule("non_contiguous_input", "Copies of non-contiguous inputs")
def non_contiguous_input(ctx: RuleContext) -> RuleOutput:
    out = RuleOutput()
    for i, m in enumerate(ctx.models):
        s = m.slices
        clones = c.rows_with_names(m, "aten::clone", c.exact("aten::clone"), [Kind.CPU_OP])
        if not len(clones):
            continue
        par = c.parents(m)
        p = par[clones]
        ok = p >= 0
        ok[ok] = np.isin(s.name[p[ok]], c.name_ids(m, "copy-parents", c.exact(*COPY_PARENTS)))
        clones, p = clones[ok], p[ok]
        steps = ctx.steps(i)
        if len(clones) and not steps.synthetic:
            keep = steps.index_of(s.ts_ns[clones]) >= 0
            clones, p = clones[keep], p[keep]
        if len(clones) and c.has_shapes(m):
            uniq, inv = np.unique(s.input_strides[clones], return_inverse=True)
            expanded = _has_zero_stride(m, uniq)[inv]
            clones, p = clones[~expanded], p[~expanded]
        if not len(clones):
            continue
        gp = par[p]
        # the op that asked for the copy: the grand-parent (an aten op or an autograd node), else Python
        asker = np.where(gp >= 0, gp, p)
        _, dev_incl = device_time_per_row(m)
        cost = s.dur_ns[p] + dev_incl[p]
        for nid in np.unique(s.name[asker]).tolist():
            sel = s.name[asker] == nid
            g_p, g_c, g_a = p[sel], clones[sel], asker[sel]
            op = m.strings[nid]
            copy_op = m.name(int(g_p[0]))
            what = f"{copy_op} inside {op}" if op != copy_op else f"{copy_op} called from Python"
            ev = c.evidence(m, g_p, asked_by=op)
            for e in ev:
                e["input_dims"] = m.strings[int(s.input_dims[e["row"]])]
                e["input_strides"] = m.strings[int(s.input_strides[e["row"]])]
            fix = ("Produce the tensor in the layout the op wants once, outside the hot loop: e.g. call "
                   ".contiguous() (or .to(memory_format=torch.channels_last) for convolutions) when the data is "
                   "created instead of feeding a permuted/transposed view; for convolutions keep input and model "
                   "in the same memory format (model.to(memory_format=torch.channels_last)).")
            if "reshape" in copy_op:
                fix = ("reshape() had to copy because its input was a non-contiguous view (after permute/transpose); "
                       "reorder the ops so the view comes first, or make the tensor contiguous once where it is "
                       "created.")
            out.findings.append(ctx.finding(
                "non_contiguous_input", i, title=f"Layout copies: {what} ({int(sel.sum())}×)",
                count=int(sel.sum()), impact_ns=int(cost[sel].sum()), time_ranges=c.ranges_of(m, g_p), evidence=ev,
                source=c.source_of(m, int(g_a[0])) or c.forward_source(m, int(g_a[0])), fix=fix,
                evidence_rows=np.concatenate([g_p, g_c])))
    return out


@rule("channels_last", "NCHW <-> NHWC conversions around convolutions")
def channels_last(ctx: RuleContext) -> RuleOutput:
    out = RuleOutput()
    markers = tuple(ctx.cfg("channels_last").get("markers", ["nchwToNhwc", "nhwcToNchw"]))
    for i, m in enumerate(ctx.models):
        rows = c.rows_with_names(m, "layout-kernels", lambda n: any(k in n for k in markers), [Kind.KERNEL])
        rows = ctx.in_steps(i, rows)
        if not len(rows):
            continue
        s = m.slices
        out.findings.append(ctx.finding(
            "channels_last", i,
            title=f"cuDNN converts tensors between NCHW and NHWC around convolutions ({len(rows)} kernels)",
            count=len(rows), impact_ns=int(s.dur_ns[rows].sum()), time_ranges=c.ranges_of(m, rows),
            evidence=c.evidence(m, rows), source=None,
            fix="Use channels_last end to end: model.to(memory_format=torch.channels_last) and "
                "x = x.to(memory_format=torch.channels_last) (with bf16/fp16 autocast cuDNN runs NHWC natively).",
            evidence_rows=rows))
    return out


RULES = (non_contiguous_input, channels_last)
