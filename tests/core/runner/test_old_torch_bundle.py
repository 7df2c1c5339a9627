"""A run recorded by the child under CPython 3.9 + torch 2.2.2 (CPU wheel from PyPI, this VM, issue 36:
`ptprof record --python /tmp/v39t/bin/python --wait 1 --warmup 1 --active 3 --repeat 2
resources/examples/train_small.py --steps 14`) opens and analyses like any bundle, and its run.json says
which ptprof feature that torch lacked."""
from __future__ import annotations

import json
from pathlib import Path

from core.cli import main
from core.trace.loader import load

BUNDLE = Path(__file__).resolve().parents[2] / "data" / "bundles" / "py39_torch222_cpu"


def test_bundle_from_python39_torch222_loads_with_its_features():
    run = json.loads((BUNDLE / "run.json").read_text())
    env = run["environment"]
    assert run["status"] == "ok" and run["steps"] == 14 and run["cycles"] == 2 and run["step_source"] == "optimizer"
    assert env["torch_version"] == "2.2.2+cu121" and env["python"].endswith("python")
    assert env["features"]["step_detection"]["on"] is True
    assert env["features"]["compile_aware_hooks"]["on"] is False  # torch.compiler.is_compiling came in 2.3
    assert any(n.startswith("compile aware hooks off - torch 2.2.2") for n in run["notices"])
    ts = load(str(BUNDLE), use_cache=False)
    assert len(ts.models) == 2 and sum(len(m.steps) for m in ts.models) == 6  # 3 active steps x 2 cycles
    assert ts.models[0].meta is not None


def test_bundle_from_python39_torch222_analyses(capsys):
    assert main(["analyze", str(BUNDLE), "--json", "--no-cache"]) in (0, 1)
    out = json.loads(capsys.readouterr().out)
    assert isinstance(out, dict) and "metrics" in out
