"""`ptprof diff` and `ptprof analyze --baseline --fail-on-regression` end to end (in-process CLI)."""
from __future__ import annotations

import csv
import json

from core.cli import main
from helpers import REPO

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
    assert {r["run"] for r in steps} == {"a", "b"} and len(steps) == 10


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
