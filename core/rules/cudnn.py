"""cudnn_benchmark_off: the run's convolutions ran with `torch.backends.cudnn.benchmark` off.

With benchmark off cuDNN picks each convolution's algorithm by heuristics; on, it times the candidates once
per input shape and keeps the fastest (PyTorch's performance tuning guide: "enable cuDNN auto-tuner" for
fixed input sizes). The flag is read from what the ptprof runner recorded (`ptprof` trace metadata, core/
runner/child.py `_flags`): a trace recorded elsewhere has no such record and gets no finding. No cost is
measured (the trace holds the heuristic's choice only), so the finding is a hint; `ptprof try RUN
--fix cudnn_benchmark` measures it.
"""
from __future__ import annotations

import numpy as np

from core.rules import common
from core.rules.base import RuleContext, RuleOutput, rule
from core.trace import event_names
from core.trace.model import Kind


def benchmark_flag(model) -> bool | None:
    """torch.backends.cudnn.benchmark as the runner recorded it (None: not recorded, or cuDNN disabled)."""
    recorded = model.meta.extra.get("ptprof")
    if not isinstance(recorded, dict) or not isinstance(recorded.get("cudnn_benchmark"), bool):
        return None
    if recorded.get("cudnn_enabled") is False:
        return None
    return recorded["cudnn_benchmark"]


@rule("cudnn_benchmark_off", "cuDNN autotuner off for convolutions", doc="""
hint: convolutions inside the steps while the run had `torch.backends.cudnn.benchmark = False` (as the
ptprof runner recorded it): cuDNN picks algorithms by heuristics instead of timing them once per input shape""")
def cudnn_benchmark_off(ctx: RuleContext) -> RuleOutput:
    out = RuleOutput()
    min_convs = int(ctx.cfg("cudnn_benchmark_off")["min_convolutions_per_step"])
    for index, model in enumerate(ctx.models):
        if benchmark_flag(model) is not False or not model.devices:
            continue
        conv_rows = common.rows_with_names(model, "conv-ops", event_names.is_convolution_op, [Kind.CPU_OP])
        conv_rows = ctx.in_steps(index, conv_rows)
        conv_rows = _outermost(model, conv_rows)
        steps = ctx.steps(index)
        per_step = len(conv_rows) / max(len(steps.number), 1)
        if not len(conv_rows) or per_step < min_convs:
            continue
        out.findings.append(ctx.finding(
            "cudnn_benchmark_off", index, hint=True,
            title=f"cuDNN autotuner is off: {len(conv_rows)} convolutions (~{per_step:.0f} per step) use "
                  "heuristic algorithms",
            count=len(conv_rows), impact_ns=0, time_ranges=common.ranges_of(model, conv_rows),
            evidence=common.evidence(model, conv_rows), source=common.source_of(model, int(conv_rows[0])),
            fix="If the input shapes are fixed, set torch.backends.cudnn.benchmark = True before the training "
                "loop: cuDNN then times the convolution algorithms once per shape and keeps the fastest "
                "(`ptprof try RUN --fix cudnn_benchmark` measures it). Leave it off when shapes vary every "
                "step (each new shape is benchmarked again).",
            evidence_rows=conv_rows))
    return out


def _outermost(model, conv_rows: np.ndarray) -> np.ndarray:
    """Each user convolution once: the convolution ops whose parent is not one (aten::convolution ->
    aten::_convolution -> aten::cudnn_convolution nest; backward: aten::convolution_backward)."""
    if not len(conv_rows):
        return conv_rows
    parent = common.parents(model)[conv_rows]
    conv_ids = common.name_ids(model, "conv-ops", event_names.is_convolution_op)
    nested = parent >= 0
    nested[nested] = np.isin(model.slices.name[parent[nested]], conv_ids)
    return conv_rows[~nested]


RULES = (cudnn_benchmark_off,)
