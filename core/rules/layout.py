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
import logging

import numpy as np

from core.analysis.critical_path import Edit
from core.analysis.stats import device_time_per_row
from core.rules import common, layout_fix, layout_info, whatif
from core.rules.base import RuleContext, RuleOutput, Severity, WhatIf, rule
from core.trace.model import Kind

log = logging.getLogger(__name__)

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


def _layout_copies(model, finding, rp, cfg) -> Edit:
    """The copy ops (their CPU time and the GPU work they launch) removed: the copies, not the ops that asked."""
    return whatif.remove_named_ops(model, finding, rp, ("aten::clone", "aten::contiguous", "aten::copy_"),
                                   "layout copies removed")


@rule("non_contiguous_input", "Copies of non-contiguous inputs",
      what_if=WhatIf(_layout_copies, "the copy ops (their CPU time and the GPU work they launch) removed"), doc="""
copies made because an input was not in the layout an op needs (`contiguous`/`reshape` -> `clone`), by the op
that asked and its user frame; conv weights converted to channels_last because the input is NHWC in memory get
their own finding (conv input + permute as evidence); backward copies point at the forward op/transpose
(fwd->bwd flow); the user's own `.contiguous()` is not counted""")
def non_contiguous_input(ctx: RuleContext) -> RuleOutput:
    out = RuleOutput()
    for i, m in enumerate(ctx.models):
        s = m.slices
        clones = common.rows_with_names(m, "aten::clone", common.exact("aten::clone"), [Kind.CPU_OP])
        if not len(clones):
            continue
        par = common.parents(m)
        p = par[clones]
        ok = p >= 0
        ok[ok] = np.isin(s.name[p[ok]], common.name_ids(m, "copy-parents", common.exact(*COPY_PARENTS)))
        clones, p = clones[ok], p[ok]
        steps = ctx.steps(i)
        if len(clones) and not steps.synthetic:
            keep = steps.index_of(s.ts_ns[clones]) >= 0
            clones, p = clones[keep], p[keep]
        if len(clones) and common.has_shapes(m):
            uniq, inv = np.unique(s.at("input_strides", clones), return_inverse=True)
            expanded = _has_zero_stride(m, uniq)[inv]
            clones, p = clones[~expanded], p[~expanded]
        if not len(clones):
            continue
        gp = par[p]
        # the op that asked for the copy: the grand-parent (an aten op or an autograd node), else Python
        direct = gp < 0
        direct[~direct] = s.kind[gp[~direct]] != Kind.CPU_OP
        asker = np.where(direct, p, gp)
        # who wrote a direct call: a user's own .contiguous() is the deliberate fix this rule recommends
        # (not counted); library code (nn.MultiheadAttention's packed projection ...) is named
        owner = np.full(len(clones), "", object)
        for k in np.flatnonzero(direct).tolist():
            owner[k] = layout_info.direct_call_owner(m, int(p[k])) or ""
        explicit = direct & np.isin(s.name[p], common.name_ids(m, "aten::contiguous", common.exact("aten::contiguous")))
        explicit &= (owner == "user") | (owner == "")
        if explicit.any():
            log.debug("non_contiguous_input: %d explicit .contiguous() calls not counted", int(explicit.sum()))
            clones, p, asker, owner, direct = (x[~explicit] for x in (clones, p, asker, owner, direct))
        if not len(clones):
            continue
        convert = layout_info.format_conversions(m, clones, asker)
        node = layout_info.backward_nodes(m, clones)
        _, dev_incl = device_time_per_row(m)
        cost = s.dur_ns[p] + dev_incl[p]
        keys = [("convert", convert[k]) if convert[k] else
                ("lib", owner[k], int(s.name[p[k]])) if direct[k] and owner[k] not in ("", "user") else
                ("op", int(s.name[asker[k]]), int(s.name[p[k]])) for k in range(len(clones))]
        groups = []
        for key in dict.fromkeys(keys):
            sel = np.array([k == key for k in keys])
            g = dict(kind=key[0], p=p[sel], c=clones[sel], a=asker[sel], n=int(sel.sum()), cost=int(cost[sel].sum()),
                     copy_op=m.name(int(p[sel][0])), op=m.name(int(asker[sel][0])), node=node[sel])
            if key[0] == "convert":
                g.update(fmt=key[1], what=f"conv weights converted to {key[1]}")
            elif key[0] == "lib":
                g.update(op=key[1], what=f"{g['copy_op']} in {key[1]}")
            elif g["op"] == g["copy_op"]:
                g.update(what=f"{g['copy_op']} called from Python")
            else:
                g.update(what=f"{g['copy_op']} inside {g['op']}")
            groups.append(g)
        groups.sort(key=lambda g: -g["cost"])
        # one finding per op context that costs a real share of the step; the small ones are folded into
        # one finding so that a model with many cheap layout copies is not a wall of near-identical rows.
        # A memory-format conversion always gets its own finding: its cause and fix are of another kind.
        fold_ns = ctx.cfg("non_contiguous_input")["fold_below_pct"] / 100.0 * max(steps.total_ns, 1)
        is_big = [g["cost"] >= fold_ns or g["kind"] == "convert" for g in groups]
        big = [g for g, b in zip(groups, is_big) if b]
        small = [g for g, b in zip(groups, is_big) if not b]
        if len(small) == 1:
            big, small = big + small, []
        for g in big:
            if g["kind"] == "convert":
                out.findings.append(layout_fix.conversion_finding(ctx, m, i, g))
            else:
                out.findings.append(_layout_finding(ctx, m, i, [g], f"Layout copies: {g['what']} ({g['n']}×)"
                                                    + _backward_words(m, g)))
        if small:
            n = sum(g["n"] for g in small)
            parts = ", ".join(f"{g['what']} {g['n']}×" for g in small[:3]) + (", …" if len(small) > 3 else "")
            # each context is cheap and needs its own fix: the fold stays informational
            out.findings.append(_layout_finding(
                ctx, m, i, small, f"Layout copies in {len(small)} op contexts ({n}×): {parts}",
                severity=Severity.INFO))
    return out


def _backward_words(m, g: dict) -> str:
    """", in backward: the gradient of <forward op> is not contiguous" for copies under an autograd node."""
    nodes = g["node"][g["node"] >= 0]
    if not len(nodes):
        return ""
    fwd = layout_info.forward_op(m, int(nodes[0]))
    return f", in backward: the gradient of the forward {m.name(fwd)} is not contiguous" if fwd >= 0 else \
        ", in backward"


def _layout_finding(ctx: RuleContext, m, i: int, groups: list[dict], title: str, severity=None):
    """One non_contiguous_input finding for one or more (copy op, asking op) groups, costliest first."""
    s = m.slices
    g_p = np.concatenate([g["p"] for g in groups])
    g_c = np.concatenate([g["c"] for g in groups])
    ev = []
    for g in groups:
        part = common.evidence(m, g["p"], asked_by=g["op"])
        for e in part:
            e["input_dims"] = m.strings[int(s.at("input_dims", e["row"]))]
            e["input_strides"] = m.strings[int(s.at("input_strides", e["row"]))]
        ev.extend(part if len(groups) == 1 else part[:2])
    first = groups[0]
    a0 = int(first["a"][0])
    src = common.source_of(m, a0) or common.forward_source(m, a0)
    fix, extra, fsrc = layout_fix.fix_for(m, first, int(ctx.cfg("non_contiguous_input")["transpose_window"]))
    ev = common.one_shape(extra + ev, keys_from=ev)  # the copies' columns for the events that explain them
    return ctx.finding(
        "non_contiguous_input", i, title=title, count=int(sum(g["n"] for g in groups)),
        impact_ns=int(sum(g["cost"] for g in groups)), time_ranges=common.ranges_of(m, g_p), evidence=ev,
        source=fsrc or src, fix=fix, evidence_rows=np.concatenate([g_p, g_c]), severity=severity,
        fix_rows=np.concatenate([g_p, g_c]))


def _channels_last(model, finding, rp, cfg) -> Edit:
    """The conversion kernels removed, except each step's first NCHW -> NHWC conversion: the batch itself
    still has to be converted once (`x.to(memory_format=torch.channels_last)`, a copy of the same size).
    Without that, the H200 two-conv loop (tests/data/device/fresh h2d_pinned) was promised 1.75 ms for a
    measured 0.97 ms: its input conversion is most of the conversion time."""
    rows = whatif.of_kind(model, whatif.fix_rows(finding), Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET)
    keep = np.zeros(len(rows), bool)
    if len(rows) and len(rp.op_rows):
        order = np.argsort(rp.op_rows)
        pos = np.searchsorted(rp.op_rows, rows, sorter=order)
        pos = np.minimum(pos, len(order) - 1)
        known = rp.op_rows[order[pos]] == rows
        step = np.where(known, rp.op_step[order[pos]], -1)
        to_nhwc = np.array(["nchwtonhwc" in model.name(int(r)).lower() for r in rows], bool)
        ts = model.slices.ts_ns[rows]
        for st in np.unique(step[known & to_nhwc]):
            cand = np.flatnonzero(known & to_nhwc & (step == st))
            keep[cand[np.argmin(ts[cand])]] = True
    rows = rows[~keep]
    label = "conversion kernels removed (the input's first conversion kept)" if keep.any() else \
        "conversion kernels removed"
    return Edit(label=label, scale_rows=rows, scale=np.zeros(len(rows)))


@rule("channels_last", "NCHW <-> NHWC conversions around convolutions",
      what_if=WhatIf(_channels_last, "the conversion kernels removed, but for each step's first NCHW -> NHWC one "
                     "(the batch)"), doc="""
cuDNN `nchwToNhwc` / `nhwcToNchw` conversions around convolutions""")
def channels_last(ctx: RuleContext) -> RuleOutput:
    out = RuleOutput()
    markers = tuple(ctx.cfg("channels_last")["markers"])
    for i, m in enumerate(ctx.models):
        rows = common.rows_with_names(m, "layout-kernels", lambda n: any(k in n for k in markers), [Kind.KERNEL])
        rows = ctx.in_steps(i, rows)
        if not len(rows):
            continue
        s = m.slices
        out.findings.append(ctx.finding(
            "channels_last", i,
            title=f"cuDNN converts tensors between NCHW and NHWC around convolutions ({len(rows)} kernels)",
            count=len(rows), impact_ns=int(s.dur_ns[rows].sum()), time_ranges=common.ranges_of(m, rows),
            evidence=common.evidence(m, rows), source=common.kernel_source(m, int(rows[np.argmax(s.dur_ns[rows])])),
            fix="Use channels_last end to end: model.to(memory_format=torch.channels_last) and "
                "x = x.to(memory_format=torch.channels_last) (with bf16/fp16 autocast cuDNN runs NHWC natively).",
            evidence_rows=rows, fix_rows=rows))
    return out


RULES = (non_contiguous_input, channels_last)
