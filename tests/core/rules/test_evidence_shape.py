"""Issue 35 item 6: every finding's evidence rows have one shape (the same keys), and what used to be a summary
row of its own shape is `Finding.facts`, a dict of plain values: on every trace of tests/data (run bundles,
multi-rank folders, single files, OOM bundles), as `ptprof analyze` computes them, and through their JSON
(`--json`, the findings cache)."""
from __future__ import annotations

import json

import equivalence as eq
import pytest

from core.ranks import findings_cache
from core.ranks.summary import finding_from_json, finding_json
from core.rules.base import Finding, Severity, Source, plain_facts
from core.trace.loader import load
from core.trace.model import TraceParseError

SCALARS = (str, int, float, bool, type(None))


def _findings(unit):
    try:
        ts = load(unit, use_cache=False)
    except TraceParseError:  # an OOM bundle that died before its first trace: its bundle findings only
        from core.rules.oom_findings import bundle_findings
        return bundle_findings(str(unit))
    return list(eq.analysis_of(ts, unit).findings)


def _plain(value) -> bool:
    if isinstance(value, list):
        return all(isinstance(v, SCALARS) for v in value)
    return isinstance(value, SCALARS)


@pytest.fixture(scope="module")
def every_finding() -> list[tuple[str, Finding]]:
    return [(eq.key_of(u, eq.DATA), f) for u in eq.units(eq.DATA) for f in _findings(u)]


def test_every_finding_has_evidence_of_one_shape_and_plain_facts(every_finding):
    assert len(every_finding) > 200
    bad = []
    for key, f in every_finding:
        shapes = {tuple(sorted(row)) for row in f.evidence}
        if len(shapes) > 1:
            bad.append(f"{key} {f.rule}: {len(shapes)} row shapes {sorted(shapes)}")
        if not isinstance(f.facts, dict) or not all(isinstance(k, str) and _plain(v) for k, v in f.facts.items()):
            bad.append(f"{key} {f.rule}: facts not plain: {f.facts!r}")
        doc = f.to_json()
        assert json.loads(json.dumps(doc))["facts"] == f.facts  # `analyze --json` carries them as they are
        assert {tuple(sorted(row)) for row in doc["evidence"]} == shapes
    assert not bad, "\n".join(bad[:20])


def test_the_summaries_that_were_evidence_rows_are_facts(every_finding):
    """The rules that put a summary row first (launch_bound, dataloader_bound, gpu_idle, recompile, straggler,
    oom, the sync sites of host_sync / pageable_memcpy) now state it as facts, with its numbers."""
    facts_by_rule: dict[str, set[str]] = {}
    for _key, f in every_finding:
        facts_by_rule.setdefault(f.rule, set()).update(f.facts)
    assert {"kernels", "gpu_kernel_ns", "cpu_launch_ns", "idle_ns", "runs"} <= facts_by_rule["launch_bound"]
    assert "share_of_each_step_pct" in facts_by_rule["dataloader_bound"]
    assert "wait_billed_to_other_findings_ns" in facts_by_rule["gpu_idle"]
    assert {"first_compiles", "first_compile_ids", "first_compile_time_not_billed_ns"} <= facts_by_rule["recompile"]
    assert {"waiting_ranks", "waited_ns"} <= facts_by_rule["straggler"]
    assert {"request_bytes", "free_bytes", "where"} <= facts_by_rule["oom"]
    assert {"sync_sites", "sync_sites_matched"} <= facts_by_rule["host_sync"] & facts_by_rule["pageable_memcpy"]
    assert "break_reasons" in facts_by_rule["graph_break"] and "guards_failed" in facts_by_rule["recompile"]
    for _key, f in every_finding:
        if f.rule == "launch_bound":  # the facts hold the numbers the title states
            assert f.facts["kernels"] == f.count and f.facts["idle_ns"] == f.impact_ns
            assert all(row["name"] != "summary" for row in f.evidence)


def test_facts_survive_the_findings_cache_and_the_rank_summary(every_finding):
    for _key, f in every_finding:
        assert findings_cache.valid_finding(f.to_json()), f.rule
        again = finding_from_json(json.loads(json.dumps(finding_json(f))))
        assert again.facts == f.facts and again.evidence == tuple(json.loads(json.dumps(f.to_json()))["evidence"])


def test_facts_are_plain_values_or_refused():
    import numpy as np

    facts = plain_facts({"n": np.int64(3), "ns": (np.int32(1), 2), "pct": np.float32(0.5), "at": Source("a.py", 3, "f"),
                         "none": None, "ok": True})
    assert facts == {"n": 3, "ns": [1, 2], "pct": 0.5, "at": "a.py:3 (f)", "none": None, "ok": True}
    assert type(facts["n"]) is int and type(facts["pct"]) is float
    with pytest.raises(TypeError):
        plain_facts({"nested": {"a": 1}})
    with pytest.raises(TypeError):
        Finding(rule="r", severity=Severity.INFO, title="t", count=1, impact_ns=0, impact_pct=0.0, time_ranges=(),
                evidence=(), source=None, fix="", facts={"rows": [[1, 2]]})
    # a cached finding whose facts are not plain is a miss, not a crash later
    doc = Finding(rule="r", severity=Severity.INFO, title="t", count=1, impact_ns=0, impact_pct=0.0, time_ranges=(),
                  evidence=(), source=None, fix="", facts={"n": 1}).to_json()
    assert findings_cache.valid_finding(doc)
    assert not findings_cache.valid_finding(dict(doc, facts={"n": {"deep": 1}}))
    assert not findings_cache.valid_finding({k: v for k, v in doc.items() if k != "facts"})  # format 1: re-computed
