"""zero_grad_not_none and single_tensor_optimizer: optimizer overheads visible as per-parameter ops."""
from __future__ import annotations

import numpy as np

from core.analysis.critical_path import Edit
from core.analysis.stats import device_time_per_row
from core.rules import common, whatif
from core.rules.base import RuleContext, RuleOutput, WhatIf, rule
from core.trace.model import FlowKind, Kind, TraceModel


def _accumulate_adds(model: TraceModel) -> np.ndarray:
    """aten::add_ ops directly under torch::autograd::AccumulateGrad (backward adding into an existing .grad)."""
    from core.rules import common
    adds = common.rows_with_names(model, "aten::add_", common.exact("aten::add_"), [Kind.CPU_OP])
    if not len(adds):
        return adds
    par = common.parents(model)[adds]
    acc = common.name_ids(model, "accumulate-grad", common.exact("torch::autograd::AccumulateGrad"))
    ok = par >= 0
    ok[ok] = np.isin(model.slices.name[par[ok]], acc)
    return adds[ok]


def _fused_optimizer(model, finding, rp, cfg) -> Edit:
    """Fused / multi-tensor step: the per-parameter Python loop leaves the CPU path - each optimizer step's
    CPU time but the share a fused step keeps ([optimizer] fused_cpu_share) - and the optimizer's kernels
    run back to back. Cutting only the launch calls (the first what-if) predicted 5.8 ms for a measured
    27.1 ms (H100, Adam foreach=False -> fused, 300 parameter tensors): the loop's own CPU time stayed."""
    s = model.slices
    rows = whatif.fix_rows(finding)
    kern = whatif.of_kind(model, rows, Kind.KERNEL)
    ann = whatif.of_kind(model, rows, Kind.ANNOTATION)
    keep = float(cfg["optimizer"]["fused_cpu_share"])
    a0, a1 = s.ts_ns[ann], s.ts_ns[ann] + s.dur_ns[ann]
    cut_s = a0 + (keep * (a1 - a0)).astype(np.int64)
    a_step = np.searchsorted(a0, s.ts_ns[kern], side="right") - 1 if len(ann) else np.zeros(len(kern), np.int64)
    return Edit(label=f"fused optimizer step: the per-parameter loop's CPU time out (a fused step keeps "
                      f"{100 * keep:.0f} %), kernels back to back", cut_start_ns=cut_s, cut_end_ns=a1,
                chain_rows=kern, chain_group=np.maximum(a_step, 0).astype(np.int64))


def _zero_grad(model, finding, rp, cfg) -> Edit:
    """The zero-fills removed (set_to_none). With the gradients None, backward's AccumulateGrad takes the new
    gradient instead of adding it into the zeroed one: its aten::add_ goes too (H100 zero_none: 96 adds a
    step, most of the saving)."""
    return whatif.remove_named_ops(model, finding, rp, ("aten::zero_", "aten::_foreach_zero_"),
                                   "zero-fills removed (set_to_none)", _accumulate_adds(model))


@rule("zero_grad_not_none", "zero_grad fills gradients with zeros",
      what_if=WhatIf(_zero_grad, "the aten::zero_ ops removed (set_to_none), and backward's AccumulateGrad adds with "
                     "them"), doc="""
`aten::zero_` per parameter inside `Optimizer.zero_grad` (set_to_none=False)""")
def zero_grad_not_none(ctx: RuleContext) -> RuleOutput:
    out = RuleOutput()
    min_per_step = int(ctx.cfg("zero_grad_not_none")["min_per_step"])
    for i, m in enumerate(ctx.models):
        zg = common.name_ids(m, "zero-grad-ann", lambda n: n.startswith("Optimizer.zero_grad"))
        if not len(zg):
            continue
        rows = common.rows_with_names(m, "aten::zero_", common.exact("aten::zero_"), [Kind.CPU_OP])
        anc = common.ancestor_matching(m, rows, zg)
        rows, anc = rows[anc >= 0], anc[anc >= 0]
        # torch >= 2.x zeroes the gradients of one device/dtype with one aten::_foreach_zero_ (H100 pairs2
        # zero_none: 3 per step, no aten::zero_): the rule used to miss it
        fe = common.rows_with_names(m, "aten::_foreach_zero_", common.exact("aten::_foreach_zero_"), [Kind.CPU_OP])
        fe_anc = common.ancestor_matching(m, fe, zg)
        fe, fe_anc = fe[fe_anc >= 0], fe_anc[fe_anc >= 0]
        steps = ctx.steps(i)
        n_steps = max(len(steps.number), 1) if not steps.synthetic else max(len(np.unique(np.concatenate(
            [anc, fe_anc]))), 1)
        if len(rows) < min_per_step * n_steps and not len(fe):
            continue
        rows, anc = np.concatenate([rows, fe]), np.concatenate([anc, fe_anc])
        order = np.argsort(m.slices.ts_ns[anc], kind="stable")
        rows, anc = rows[order], anc[order]
        s = m.slices
        _, dev = device_time_per_row(m)
        cost = int(s.dur_ns[rows].sum() + dev[rows].sum())
        first = int(anc[0])
        out.findings.append(ctx.finding(
            "zero_grad_not_none", i,
            title=(f"optimizer.zero_grad() writes zeros into every gradient ({len(rows)} aten::zero_, "
                   f"~{len(rows) // n_steps} per step)" if not len(fe) else
                   f"optimizer.zero_grad() writes zeros into every gradient ({len(fe)} aten::_foreach_zero_, "
                   f"~{max(len(fe) // n_steps, 1)} per step), and backward then adds into them"),
            count=len(rows), impact_ns=cost, time_ranges=common.ranges_of(m, np.unique(anc)),
            evidence=common.evidence(m, rows), source=common.source_of(m, first),
            fix="Use optimizer.zero_grad(set_to_none=True) (the default since PyTorch 2.0) or model.zero_grad("
                "set_to_none=True): gradients are then allocated by the backward pass instead of being zero-filled.",
            evidence_rows=np.concatenate([rows, np.unique(anc)]), fix_rows=np.concatenate([rows, np.unique(anc)])))
    return out


# torch.optim classes with a multi-tensor implementation, and the argument that selects it. LBFGS (a closure
# optimizer: its step runs the model's forward and backward) and SparseAdam have none, nor do user classes:
# advising `foreach=True` there would name an argument that does not exist.
MULTI_TENSOR = {
    "SGD": "foreach=True, or fused=True (parameters on CUDA)",
    "Adam": "foreach=True, or fused=True (parameters on CUDA)",
    "AdamW": "foreach=True, or fused=True (parameters on CUDA)",
    **{n: "foreach=True" for n in ("Adagrad", "Adadelta", "Adamax", "ASGD", "NAdam", "RAdam", "RMSprop", "Rprop")},
}


@rule("single_tensor_optimizer", "Optimizer launches kernels per parameter",
      what_if=WhatIf(_fused_optimizer, "fused estimate: the optimizer step's CPU time but the share a fused step "
                     "keeps removed "
                     "(the per-parameter loop), the optimizer's kernels back to back"), doc="""
optimizer steps launching per-parameter kernels with no multi-tensor/fused kernel""")
def single_tensor_optimizer(ctx: RuleContext) -> RuleOutput:
    out = RuleOutput()
    min_kernels = int(ctx.cfg("single_tensor_optimizer")["min_kernels"])
    for i, m in enumerate(ctx.models):
        step_ids = common.name_ids(m, "opt-step-ann", lambda n: n.startswith("Optimizer.step#"))
        if not len(step_ids):
            continue
        s = m.slices
        ann = np.flatnonzero(np.isin(s.name, step_ids) & (s.kind == Kind.ANNOTATION))
        if not len(ann):
            continue
        f = m.flows
        launch = f.kind == FlowKind.LAUNCH
        src, dst = f.src[launch], f.dst[launch]
        owner = common.ancestor_matching(m, src, step_ids)
        mine = owner >= 0
        kern = dst[mine & (s.kind[dst] == Kind.KERNEL)]
        if not len(kern):
            continue
        fused = common.name_ids(m, "foreach-kernels", lambda n: "multi_tensor_apply" in n or "fused_adam" in n.lower()
                           or "FusedAdam" in n or "fused_sgd" in n.lower() or "_fused_" in n)
        if np.isin(s.name[kern], fused).any():
            continue
        per_step = len(kern) / len(ann)
        if per_step < min_kernels:
            continue
        name = m.name(int(ann[0])).split("#")[-1].split(".")[0]
        if name not in MULTI_TENSOR:
            continue
        out.findings.append(ctx.finding(
            "single_tensor_optimizer", i,
            title=f"{name} runs per parameter: {per_step:.0f} kernels per optimizer step, none multi-tensor",
            count=len(kern), impact_ns=int(s.dur_ns[ann].sum()), time_ranges=common.ranges_of(m, ann),
            evidence=common.evidence(m, ann), source=common.source_of(m, int(ann[0])),
            fix=f"Use the multi-tensor implementation: torch.optim.{name}(..., {MULTI_TENSOR[name]}), which "
                "launches a handful of kernels for all parameters.",
            evidence_rows=np.concatenate([ann, kern]), fix_rows=np.concatenate([ann, kern])))
    return out


RULES = (zero_grad_not_none, single_tensor_optimizer)
