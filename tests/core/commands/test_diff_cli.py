"""`ptprof diff` and `ptprof analyze --baseline --fail-on-regression` end to end (in-process CLI)."""
from __future__ import annotations

import csv
import json

from helpers import REPO

from core.cli import main

PAIRS = REPO / "tests" / "data" / "device" / "pairs"
SLOW, FAST = str(PAIRS / "copy_pageable"), str(PAIRS / "copy_pinned")


def test_diff_json(capsys):
    assert main(["diff", SLOW, FAST, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["step"]["significant"] is True and out["step"]["delta_ns"] < 0
    assert out["findings"]["fixed"][0]["rule"] == "pageable_memcpy"


def test_diff_text_and_markdown(capsys):
    assert main(["diff", SLOW, FAST]) == 0
    text = capsys.readouterr().out
    assert "faster" in text and "fixed    pageable_memcpy" in text and "- gone" in text
    assert main(["diff", SLOW, FAST, "--markdown"]) == 0
    md = capsys.readouterr().out
    assert md.startswith("### ptprof diff") and "| median step |" in md


def test_diff_csv(tmp_path, capsys):
    assert main(["diff", SLOW, FAST, "--csv", str(tmp_path / "d")]) == 0
    capsys.readouterr()
    with open(tmp_path / "d" / "kernels_diff.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert rows[0]["status"] in ("gone", "new") and float(rows[0]["delta_us"]) != 0
    with open(tmp_path / "d" / "steps_diff.csv", encoding="utf-8") as fh:
        steps = list(csv.DictReader(fh))
    assert {r["run"] for r in steps} == {"a", "b"} and len(steps) == 10 and {r["rank"] for r in steps} == {"all"}


def test_gate_fails_on_the_regression_and_passes_the_improvement(capsys):
    assert main(["analyze", SLOW, "--baseline", FAST, "--fail-on-regression", "5"]) == 1
    assert "**REGRESSION**" in capsys.readouterr().out
    assert main(["analyze", FAST, "--baseline", SLOW, "--fail-on-regression", "5"]) == 0
    assert "**ok**" in capsys.readouterr().out
    assert main(["analyze", FAST, "--baseline", FAST, "--fail-on-regression", "0"]) == 0
    capsys.readouterr()


def test_gate_memory_metric(capsys):
    rc = main(["analyze", FAST, "--baseline", SLOW, "--fail-on-regression", "1", "--metric", "memory_peak"])
    assert rc == 0 and "memory peak" in capsys.readouterr().out


def test_bad_input_is_one_line(tmp_path, capsys):
    assert main(["diff", str(tmp_path / "missing"), FAST]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "missing" in err
    assert main(["analyze", FAST, "--fail-on-regression", "3"]) == 2
    assert "--baseline" in capsys.readouterr().err


def test_diff_takes_every_input_kind(tmp_path, capsys):
    """Two files, two TensorBoard log dirs (a run folder per worker), two multi-rank dirs (per rank + aggregate)."""
    import shutil

    from helpers import shared_trace
    issues, clean = shared_trace("gpu_issues.pt.trace.json.gz"), shared_trace("gpu_clean.pt.trace.json.gz")
    assert main(["diff", str(issues), str(clean), "--json"]) == 0
    files = json.loads(capsys.readouterr().out)
    assert files["step"]["significant"] is True and files["step"]["delta_ns"] < 0
    assert files["per_rank"] == []
    assert {"pageable_memcpy", "launch_bound"} <= {f["rule"] for f in files["findings"]["fixed"]}
    for name, src in (("tb_a", issues), ("tb_b", clean)):
        (tmp_path / name / "run1").mkdir(parents=True)
        shutil.copy(src, tmp_path / name / "run1" / f"host_1.{len(name)}.pt.trace.json.gz")
    assert main(["diff", str(tmp_path / "tb_a"), str(tmp_path / "tb_b"), "--json"]) == 0
    tb = json.loads(capsys.readouterr().out)
    assert tb["step"] == files["step"] and tb["kernels"] == files["kernels"]
    ddp = str(shared_trace("gpu_ddp2"))
    assert main(["diff", ddp, ddp, "--json"]) == 0
    multi = json.loads(capsys.readouterr().out)
    assert multi["a"]["ranks"] == 2 and [r["rank"] for r in multi["per_rank"]] == [0, 1]
    assert all(r["step"]["delta_ns"] == 0 and r["step"]["significant"] is None for r in multi["per_rank"])
    assert not multi["findings"]["fixed"] and not multi["findings"]["new"]
    assert main(["diff", ddp, ddp]) == 0
    text = capsys.readouterr().out
    assert "per rank (median step A -> B):" in text and "  rank 1: " in text
    assert main(["diff", ddp, ddp, "--markdown"]) == 0
    assert "| rank 0 median step |" in capsys.readouterr().out
    assert main(["diff", ddp, ddp, "--csv", str(tmp_path / "csv")]) == 0
    capsys.readouterr()
    with open(tmp_path / "csv" / "steps_diff.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [sum(1 for r in rows if r["rank"] == k) for k in ("all", "0", "1")] == [6, 6, 6]  # 3 steps a side


def test_diff_matching_options(capsys):
    a, b = str(PAIRS / "mlp_fp32"), str(PAIRS / "mlp_bf16")
    assert main(["diff", a, b, "--json", "--normalize-templates"]) == 0
    norm = json.loads(capsys.readouterr().out)
    assert any("<>" in r["name"] and r["status"] == "same" for r in norm["kernels"])
    assert main(["diff", a, b, "--json", "--by-shape"]) == 0
    shaped = json.loads(capsys.readouterr().out)
    assert any(r["name"].startswith("aten::linear [[") for r in shaped["ops"])


def test_gate_with_too_few_steps_says_so(tmp_path, capsys):
    doc = {"schemaVersion": 1, "traceEvents": [
        {"ph": "X", "name": f"ProfilerStep#{i}", "cat": "user_annotation", "ts": i * 1000, "dur": 990, "pid": 1,
         "tid": 1} for i in range(2)]}
    (tmp_path / "two.json").write_text(json.dumps(doc))
    assert main(["analyze", FAST, "--baseline", str(tmp_path / "two.json"), "--fail-on-regression", "5"]) == 0
    assert "too few steps to test (A 2, B 5" in capsys.readouterr().out


def test_gate_on_runs_that_cannot_show_significance_says_so(capsys):
    """gpu_ddp2 has 3 steps (ptprof record's default --active 3): the gate passes and says why, never a silent ok."""
    from helpers import shared_trace
    ddp = str(shared_trace("gpu_ddp2"))
    assert main(["analyze", ddp, "--baseline", ddp, "--fail-on-regression", "5"]) == 0
    assert "3 vs 3 steps cannot show a significant change" in capsys.readouterr().out
