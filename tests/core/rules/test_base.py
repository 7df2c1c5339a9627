"""Finding / Severity / RuleContext basics, and a failing rule becoming a 'check not run'."""
from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import shared_trace

from core.rules import RULE_IDS, Severity, all_rules, analyze
from core.rules.base import RuleContext, RuleOutput, Source, rule
from core.rules.config import load_config


def test_registry_matches_the_documented_ids():
    ids = [r.id for r in all_rules()]
    assert sorted(ids) == sorted(RULE_IDS) and len(ids) == len(set(ids))


def test_every_rule_has_a_config_section():
    cfg = load_config()
    assert {"error_pct", "warning_pct"} <= set(cfg["severity"])
    for rid in RULE_IDS:
        assert rid in cfg, f"resources/rules.toml lacks [{rid}]"


def test_severity_by_cost(loaded):
    ctx = RuleContext(loaded(shared_trace("gpu_minimal_opts.pt.trace.json.gz")), load_config())
    assert ctx.severity(25.0, 1) == Severity.ERROR
    assert ctx.severity(5.0, 1) == Severity.WARNING
    assert ctx.severity(0.5, 1) == Severity.INFO
    assert ctx.severity(99.0, 1, hint=True) == Severity.INFO
    assert Severity.parse("Warning") == Severity.WARNING
    with pytest.raises(ValueError):
        Severity.parse("fatal")
    steps = ctx.steps(0)
    assert steps.total_ns > 0 and len(steps.number) == 3
    inside = steps.index_of(np.array([steps.t0_ns[1] + 1, steps.t1_ns[-1] + 10]))
    assert inside.tolist() == [1, -1]
    f = ctx.finding("host_sync", 0, title="t", count=2, impact_ns=steps.total_ns // 2, time_ranges=[(1, 2)],
                    evidence=[{"name": "x", "dur_ns": np.int64(5)}], source=Source("a.py", 3, "f"), fix="do",
                    evidence_rows=np.array([1, 2]))
    doc = json.loads(json.dumps(f.to_json()))
    assert doc["impact_pct"] == pytest.approx(50.0, abs=0.01) and doc["severity"] == "error"
    assert doc["source"] == {"file": "a.py", "line": 3, "function": "f"} and doc["evidence"][0]["dur_ns"] == 5


def test_failing_rule_is_reported_not_raised(loaded):
    @rule("host_sync", "broken on purpose")
    def broken(ctx):
        raise KeyError("boom")

    @rule("fp32_gemm", "empty")
    def empty(ctx):
        return RuleOutput()

    result = analyze(loaded(shared_trace("gpu_minimal_opts.pt.trace.json.gz")), rules=[broken, empty])
    assert not result.findings
    assert any(n.rule == "host_sync" and "KeyError" in n.reason for n in result.not_run)
