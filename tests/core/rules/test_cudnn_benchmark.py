"""cudnn_benchmark_off (added by docs/architecture.md's "add a rule" recipe): a hint when the runner recorded
cudnn.benchmark off and the steps ran convolutions; nothing when it was on, not recorded, or no convolution."""
from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

from core.rules import all_rules, analyze
from core.rules.base import Severity
from core.tryfix.fixes import switch_for_rule

DATA = Path(__file__).resolve().parents[2] / "data" / "device"
RULE = next(r for r in all_rules() if r.id == "cudnn_benchmark_off")


def _with_flag(ts, value):
    """The same trace set with the runner's recorded cudnn.benchmark set to `value` (None: not recorded)."""
    models = []
    for m in ts.models:
        extra = copy.deepcopy(m.meta.extra)
        if value is None:
            extra.pop("ptprof", None)
        else:
            extra["ptprof"] = dict(extra.get("ptprof") or {}, cudnn_benchmark=value)
        models.append(dataclasses.replace(m, meta=dataclasses.replace(m.meta, extra=extra)))
    return dataclasses.replace(ts, models=tuple(models))


def test_a_conv_net_recorded_with_benchmark_off_gets_one_hint(loaded):
    ts = loaded(DATA / "fresh" / "resnet_fp32")
    found = [f for f in analyze(ts, rules=[RULE]).findings if f.rule == "cudnn_benchmark_off"]
    assert len(found) == 1
    f = found[0]
    assert f.hint and f.severity == Severity.INFO and f.saving_ns is None
    assert f.count == 200 and "~40 per step" in f.title  # 5 steps x (forward + backward convolutions)
    names = {ts.models[0].name(r) for r in f.evidence_rows}
    assert names and all(n.startswith("aten::convolution") for n in names)  # each convolution once
    assert "torch.backends.cudnn.benchmark = True" in f.fix
    assert switch_for_rule("cudnn_benchmark_off") == "cudnn_benchmark"  # `ptprof try` can measure it


def test_no_hint_when_benchmark_on_or_not_recorded_or_no_convolution(loaded):
    ts = loaded(DATA / "fresh" / "resnet_fp32")
    for value in (True, None):
        assert not analyze(_with_flag(ts, value), rules=[RULE]).findings
    mlp = loaded(DATA / "pairs" / "mlp_fp32")  # recorded with benchmark off, no convolution
    assert not analyze(mlp, rules=[RULE]).findings
