"""`import ptprof` used as a notebook would, on real traces: its numbers are `ptprof analyze --json`'s and
`ptprof diff --json`'s (the same code, not a second path)."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from helpers import REPO, shared_trace

import ptprof


def _cli_json(*argv) -> dict:
    out = subprocess.run([sys.executable, "-m", "core.cli", *argv, "--json"], capture_output=True, text=True,
                         cwd=REPO, timeout=200, check=True)
    return json.loads(out.stdout)


def _without_timing(doc: dict) -> dict:
    doc = json.loads(json.dumps(doc))
    doc["summary"].pop("analysis_s", None)
    return doc


@pytest.mark.parametrize("name", ["gpu_issues.pt.trace.json.gz", "gpu_dataloader.pt.trace.json.gz",
                                  "cpu_train.pt.trace.json.gz", "gpu_ddp2", "gpu_gpt_big.pt.trace.json.gz"])
def test_analyze_equals_the_cli(name):
    path = str(shared_trace(name))
    run = ptprof.load(path)
    res = ptprof.analyze(run)
    assert _without_timing(res.to_json()) == _without_timing(_cli_json("analyze", path))
    assert [f.rule for f in res.findings] == [f["rule"] for f in res.to_json()["findings"]]
    assert res.summary["steps"] == len({(r, s) for r, s in zip(run.steps["rank"], run.steps["step"])}) or \
        res.summary["steps"] <= len(run.steps)


def test_notebook_session():
    path = str(shared_trace("gpu_issues.pt.trace.json.gz"))
    run = ptprof.load(path)
    assert run.ranks == [0] and run.devices == [0]
    steps = run.steps
    assert len(steps) == 5 and isinstance(steps["dur_us"], np.ndarray) and (steps["dur_us"] > 0).all()
    kernels = run.kernels()
    is_kernel = np.asarray(kernels["kind"]) == "kernel"
    kernel_total = kernels["total_us"][is_kernel]
    assert is_kernel[0] and (np.diff(kernel_total) <= 0).all()  # kernels first, by total time (the Kernels tab)
    ops = run.ops()
    shaped = run.ops(by_shape=True)
    assert len(shaped) >= len(ops) and "input_dims" in shaped
    frame = kernels.to_pandas()
    assert list(frame.columns) == list(kernels.columns) and len(frame) == len(kernels)
    assert run.memory()[0].peak_allocated_bytes > 0
    res = run.analyze()
    assert run.analyze() is res  # memoised on the run
    launch = next(f for f in res.findings if f.rule == "launch_bound")
    assert launch.saving_ns > 0 and launch.source is not None
    with pytest.raises(ValueError, match="unknown rule"):
        run.analyze(rules=["no_such_rule"])
    only = run.analyze(rules=["host_sync"])
    assert {f.rule for f in only.findings} == {"host_sync"}


def test_diff_equals_the_cli():
    a = str(shared_trace("gpu_issues.pt.trace.json.gz"))
    b = str(shared_trace("gpu_clean.pt.trace.json.gz"))
    d = ptprof.diff(a, b)
    assert d.to_json() == _cli_json("diff", a, b)
    assert d.step.delta_ns < 0  # the clean run is faster


def test_bad_input_is_one_line(tmp_path):
    with pytest.raises(ptprof.TraceParseError) as err:
        ptprof.load(tmp_path / "missing.pt.trace.json")
    assert "\n" not in str(err.value.reason)
