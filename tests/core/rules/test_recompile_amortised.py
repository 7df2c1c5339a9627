"""Recompiles are priced amortised over the run (issue 28): compile.json's recompiles x the mean compile time
(compile_times, the whole run's) / run.json's steps, and severity follows that saving - not a median over the
window's steps (0 when the recompile is in one step of eight)."""
from __future__ import annotations

import json
import shutil

from helpers import REPO

from core.rules import analyze
from core.trace.loader import load

C1 = REPO / "tests" / "data" / "bundles" / "c1"


def _bundle(tmp_path, compile_times):
    b = tmp_path / "c1"
    shutil.copytree(C1, b)
    info = json.loads((b / "compile.json").read_text())
    info["compile_times"] = compile_times
    (b / "compile.json").write_text(json.dumps(info))
    return b


def test_recompiles_before_the_window_are_priced_over_the_run(tmp_path):
    # 4 compiles of 0.9 s in all; 2 recompiles over the run's 12 steps -> 2 x 0.225 s / 12 = 37.5 ms a step
    b = _bundle(tmp_path, {"_compile.compile_inner": {"count": 4, "total_s": 0.9, "max_s": 0.4}})
    a = analyze(load(b, use_cache=False))
    rec = [f for f in a.findings if f.rule == "recompile"]
    assert rec and all(f.saving_ns == 37_500_000 for f in rec)
    assert all(f.severity.label == "error" and f.saving_pct > 80 for f in rec)  # ~10x the 3.75 ms step
    assert "2 recompiles over the run's 12 steps" in rec[0].estimate


def test_without_compile_times_nothing_is_invented(tmp_path):
    b = _bundle(tmp_path, {})
    a = analyze(load(b, use_cache=False))
    rec = [f for f in a.findings if f.rule == "recompile"]
    assert rec and all(f.saving_ns is None and f.severity.label == "info" for f in rec)
