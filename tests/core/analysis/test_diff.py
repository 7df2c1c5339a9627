"""core.analysis.diff / significance on real H200 before/after pairs (tests/data/device/pairs)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import REPO, shared_trace

from core.analysis import diff, significance
from core.rules import analyze
from core.trace.loader import load

PAIRS = REPO / "tests" / "data" / "device" / "pairs"


def _load(name: str):
    return load(PAIRS / name)


def _compare(a: str, b: str):
    ts_a, ts_b = _load(a), _load(b)
    return diff.compare(ts_a, ts_b, findings_a=analyze(ts_a).to_json()["findings"],
                        findings_b=analyze(ts_b).to_json()["findings"])


def test_significance_needs_a_real_shift():
    rng = np.random.default_rng(1)
    a = rng.normal(10e6, 0.2e6, 12)
    shifted = significance.compare(a, a * 0.8)
    assert shifted.significant is True and shifted.delta_pct < -15
    same = significance.compare(a, rng.permutation(a))
    assert same.significant is False and same.delta_ns == 0
    noisy = significance.compare(a, rng.normal(10.05e6, 0.2e6, 12))
    assert noisy.significant is False


def test_too_few_steps_says_so_instead_of_guessing():
    res = significance.compare(np.array([1e6, 1.1e6]), np.array([2e6, 2.1e6, 2.2e6]))
    assert res.significant is None and res.p_value is None
    assert "too few steps" in res.method and "A 2" in res.method


def test_step_counts_that_cannot_reach_significance_say_so():
    """3 vs 3 fully separated is p = 0.08: "no significant change" would pass any gate whatever happened."""
    res = significance.compare(np.array([1e6, 1.1e6, 1.2e6]), np.array([2e6, 2.1e6, 2.2e6]))
    assert res.significant is None and res.p_value is None and "best p = 0.081" in res.method
    assert "--active" in res.method
    four = significance.compare(np.array([1e6, 1.1e6, 1.2e6, 1.3e6]), np.array([2e6, 2.1e6, 2.2e6, 2.3e6]))
    assert four.significant is True and four.p_value == pytest.approx(significance.min_p_value(4, 4))
    assert significance.min_p_value(3, 5) < significance.ALPHA <= significance.min_p_value(3, 4)


def test_mann_whitney_matches_the_textbook_value():
    # all of B above all of A, 5 vs 5: U = 0; normal approximation with continuity correction
    p = significance.mann_whitney_p(np.arange(5), np.arange(5) + 10)
    assert p == pytest.approx(0.0122, abs=1e-3)


def test_a_trace_compared_with_itself_shows_zero_deltas():
    ts = _load("gemm_bf16")
    d = diff.compare(ts, ts, findings_a=[], findings_b=[])
    assert d.step.delta_ns == 0 and d.step.significant is False
    assert all(r.delta_ns == 0 and r.status == "same" for r in d.kernels + d.ops)
    assert all(a == b for a, b in d.breakdown.values())
    assert d.warnings == ()


def test_pinned_copies_fix_names_the_change():
    d = _compare("copy_pageable", "copy_pinned")
    assert d.step.significant is True and d.step.delta_ns < 0
    assert [f["rule"] for f in d.findings["fixed"]] == ["pageable_memcpy"]
    assert not d.findings["new"]
    top = {r.name: r.status for r in d.kernels[:2]}
    assert top == {"Memcpy HtoD (Pageable -> Device)": "gone", "Memcpy HtoD (Pinned -> Device)": "new"}
    ops = {r.name: r for r in d.ops[:3]}
    assert "aten::copy_" in ops and ops["aten::copy_"].delta_ns < 0


def test_more_dataloader_workers_fix_the_loader_finding():
    d = _compare("loader_nw0", "loader_nw4")
    assert d.step.significant is True and d.step.delta_pct < -50
    assert "dataloader_bound" in [f["rule"] for f in d.findings["fixed"]]


def test_json_has_the_documented_keys():
    j = _compare("mlp_fp32", "mlp_bf16").to_json()
    assert set(j) >= {"a", "b", "step", "breakdown", "kernels", "ops", "findings", "memory", "warnings"}
    assert set(j["a"]) >= {"trace", "steps", "median_ns", "p10_ns", "p90_ns", "device", "torch_version", "bound"}
    assert j["a"]["bound"] == j["b"]["bound"] == "gpu"
    assert j["a"]["device"] == "NVIDIA H200" and j["a"]["torch_version"].startswith("2.11")
    assert set(j["step"]) >= {"delta_ns", "delta_pct", "significant", "method"}
    assert {"category", "a_ns", "b_ns", "delta_ns"} <= set(j["breakdown"][0])
    assert {"name", "a_calls", "b_calls", "a_total_ns", "b_total_ns", "delta_ns", "status"} <= set(j["kernels"][0])
    assert set(j["findings"]) == {"fixed", "new", "changed"}
    assert "fp32_gemm" in [f["rule"] for f in j["findings"]["fixed"]]
    # the fp32 GEMM kernels are gone and dominate the kernel change
    assert j["kernels"][0]["status"] == "gone" and j["kernels"][0]["delta_ns"] < 0


def test_different_gpus_and_torch_versions_warn_never_refuse(tmp_path):
    """B: the gemm_bf16 bundle said to come from another GPU (its trace's deviceProperties) and torch build
    (run.json): the diff is computed and says both."""
    import gzip
    import json
    import shutil
    run = tmp_path / "gemm_other"
    shutil.copytree(PAIRS / "gemm_bf16", run)
    meta = json.loads((run / "run.json").read_text())
    meta["torch_version"] = "2.12.0+rocm7.0"
    (run / "run.json").write_text(json.dumps(meta))
    for trace in (run / "traces").glob("*.pt.trace.json*"):
        opener = gzip.open if trace.suffix == ".gz" else open
        with opener(trace, "rt", encoding="utf-8") as fh:
            doc = json.load(fh)
        for props in doc.get("deviceProperties", []):
            props["name"] = "AMD Instinct MI300X"
        with opener(trace, "wt", encoding="utf-8") as fh:
            json.dump(doc, fh)
    a, b = _load("gemm_bf16"), load(run)
    d = diff.compare(a, b)
    assert (d.a.device, d.b.device) == ("NVIDIA H200", "AMD Instinct MI300X")
    assert d.a.torch_version.startswith("2.11") and d.b.torch_version == "2.12.0+rocm7.0"
    assert any("different GPUs: A ran on NVIDIA H200, B on AMD Instinct MI300X" == w for w in d.warnings)
    assert any(w.startswith("different torch versions: A 2.11") for w in d.warnings)
    assert d.step.delta_ns == 0 and all(r.delta_ns == 0 for r in d.kernels)  # same work, compared all the same


def test_multi_rank_runs_aggregate_by_slowest_rank():
    ts = load(shared_trace("gpu_ddp2"))
    steps = diff.run_steps_ns(ts)
    per_rank = [diff.step_samples_ns(m)[1] for m in ts.models]
    assert len(steps) == len(per_rank[0])
    assert np.array_equal(steps, np.maximum(*per_rank))


def test_multi_rank_runs_compare_each_rank_too():
    ts = load(shared_trace("gpu_ddp2"))
    same = diff.compare(ts, ts)
    assert [r.rank for r in same.per_rank] == [0, 1]
    for r in same.per_rank:  # 3 steps a side: no change could be significant, and it says so
        assert r.step.delta_ns == 0 and r.step.significant is None and len(r.a_steps_ns) == 3
        assert "3 vs 3 steps cannot show a significant change" in r.step.method
        assert all(a == b for a, b in r.breakdown.values())
    j = same.to_json()["per_rank"][1]
    assert j["rank"] == 1 and j["a"]["steps"] == 3 and j["a"]["median_ns"] == j["b"]["median_ns"]
    assert {"category", "a_ns", "b_ns", "delta_ns"} <= set(j["breakdown"][0]) and set(j["gpu_busy_pct"]) == {"a", "b"}
    # the aggregate's step is the slowest rank's: its median is the larger of the per-rank ones or between them
    assert same.a.median_ns >= min(np.median(r.a_steps_ns) for r in same.per_rank)
    one = _load("gemm_bf16")
    assert diff.compare(one, one).per_rank == ()  # single rank: the aggregate is the rank
    # a rank only one side has: compared as "too few steps", never dropped
    mixed = diff.compare(one, ts)
    assert [r.rank for r in mixed.per_rank] == [0, 1]
    assert mixed.per_rank[1].step.significant is None and len(mixed.per_rank[1].a_steps_ns) == 0


def test_findings_of_each_rank_are_kept_apart():
    """`[rank 0]` and `[rank 1]` titles differ only by a number: masking it used to merge them and drop one."""
    def f(rank, pct, rule="gpu_idle"):
        return {"rule": rule, "severity": "warning", "title": f"[rank {rank}] GPU idle {pct} % of step time",
                "impact_ns": 1000 * rank + 10, "source": None}
    m = diff.match_findings([f(0, 90.1), f(1, 91.2)], [f(1, 50.0)])
    assert [x["title"] for x in m["fixed"]] == ["[rank 0] GPU idle 90.1 % of step time"]
    assert [(c["title_a"], c["title_b"]) for c in m["changed"]] == [
        ("[rank 1] GPU idle 91.2 % of step time", "[rank 1] GPU idle 50.0 % of step time")]
    both = diff.match_findings([f(0, 90.1), f(1, 91.2)], [])
    assert len(both["fixed"]) == 2


def test_matching_survives_template_and_recompile_changes():
    a = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int)"
    b = ("void at::native::vectorized_elementwise_kernel<8, at::native::FillFunctor<c10::BFloat16>, "
         "at::detail::Array<char*, 1> >(int)")
    assert diff.kernel_key(a, False) != diff.kernel_key(b, False)
    assert diff.kernel_key(a, True) == diff.kernel_key(b, True)
    assert diff.op_key("Torch-Compiled Region: 0/0") == diff.op_key("Torch-Compiled Region: 0/1")
    assert diff.op_key("Torch-Compiled Region: 0/0") != diff.op_key("Torch-Compiled Region: 1/0")


def test_findings_match_by_rule_source_and_title_shape():
    a = [{"rule": "host_sync", "severity": "warning", "title": "3 host syncs (1.2 ms)", "impact_ns": 1000,
          "source": {"file": "t.py", "line": 3}},
         {"rule": "fp32_gemm", "severity": "error", "title": "GEMMs in fp32", "impact_ns": 5000, "source": None}]
    b = [{"rule": "host_sync", "severity": "info", "title": "1 host syncs (0.2 ms)", "impact_ns": 200,
          "source": {"file": "t.py", "line": 3}},
         {"rule": "gpu_idle", "severity": "info", "title": "GPU idle", "impact_ns": 100, "source": None}]
    m = diff.match_findings(a, b)
    assert [f["rule"] for f in m["fixed"]] == ["fp32_gemm"]
    assert [f["rule"] for f in m["new"]] == ["gpu_idle"]
    assert [(c["rule"], c["delta_ns"]) for c in m["changed"]] == [("host_sync", -800)]


def test_ops_by_shape_split_rows():
    ts = _load("gemm_bf16")
    by_name = diff.compare(ts, ts).ops
    by_shape = diff.compare(ts, ts, by_shape=True).ops
    assert len(by_shape) >= len(by_name)
    assert any("[" in r.name for r in by_shape)


def test_pairs_folder_is_what_the_readme_says():
    names = {p.name for p in Path(PAIRS).iterdir() if p.is_dir()}
    assert {"copy_pageable", "copy_pinned", "gemm_bf16", "mlp_fp32", "mlp_bf16", "loader_nw0", "loader_nw4"} <= names


def test_findings_are_cached_beside_the_columns_and_never_stale(tmp_path, monkeypatch):
    import shutil

    from core.ranks import findings_cache
    run = tmp_path / "copy_pageable"
    shutil.copytree(PAIRS / "copy_pageable", run)
    ts = load(run)  # fills the column cache
    first = findings_cache.findings_of(ts)
    assert findings_cache.load(ts) == first and first  # stored beside the trace's cache entry
    calls = []
    import core.rules
    monkeypatch.setattr(core.rules, "analyze", lambda *a, **k: calls.append(1) or None)
    assert findings_cache.findings_of(load(run)) == first and not calls  # served from the cache
    monkeypatch.undo()
    # a changed side file (compile.json / run.json / events.jsonl) is a different input: a miss
    events = run / "events.jsonl"
    events.write_text(events.read_text() + "\n")
    assert findings_cache.load(load(run)) is None
    # --no-cache neither reads nor writes it
    assert findings_cache.findings_of(load(run, use_cache=False), use_cache=False) == first


@pytest.mark.parametrize("name", ["gpu_compile_small", "gpu_issues", "gpu_clean"])
def test_every_finding_the_rules_write_is_one_the_cache_accepts(name):
    """Finding.to_json grew keys (savings_by_fix, steps, one_off): a cache that refused them missed silently
    on every launch-bound or one-off finding, and `diff` re-analysed both sides every time."""
    from core.ranks import findings_cache
    ts = load(REPO / "tests" / "data" / "traces" / f"{name}.pt.trace.json.gz")
    found = [f.to_json() for f in analyze(ts).findings]
    assert found and all(map(findings_cache.valid_finding, found))
    extra = dict(found[0], surprise=1)
    assert not findings_cache.valid_finding(extra)
