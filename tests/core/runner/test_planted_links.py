"""Issue 37: `ptprof record --out OLD_BUNDLE` into a bundle that holds a symlink at one of the runner's
temporary names (the trace's `.part`, the exported JSON's `.json.tmp`, `compile.json.tmp`) never writes
through it: the runner's temp files are created exclusively under unique names."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import no_torch_skip
from runner_scripts import COMPILED, write

from core.runner import bundle as bl

pytestmark = [pytest.mark.needs_torch, no_torch_skip]
REPO = Path(__file__).resolve().parents[3]
TEMP_NAMES = ("traces/rank0.cycle1.pt.trace.json.gz.part", "traces/.rank0.cycle1.pt.trace.json.gz.json.tmp",
              "compile.json.tmp", "traces/rank0.cycle1.pt.trace.json.gz.tmp", "run.json.tmp", "nvml.csv.tmp")


def test_record_into_an_old_bundle_never_writes_through_a_planted_link(tmp_path):
    old = tmp_path / "old"
    (old / "traces").mkdir(parents=True)
    (old / "run.json").write_text(json.dumps({"format": bl.FORMAT, "status": "ok"}))
    victims = {}
    for i, name in enumerate(TEMP_NAMES):
        victim = tmp_path / f"victim{i}.rc"  # a shell rc in the reproduction
        victim.write_text("export PATH=precious\n")
        (old / name).symlink_to(victim)
        victims[name] = victim
    script = write(tmp_path, "comp.py", COMPILED)  # compiles: compile.json is written too
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["PYTHONPATH"] = str(REPO)
    r = subprocess.run([sys.executable, "-m", "core.cli", "record", "--quiet", "--out", str(old), "--wait", "0",
                        "--warmup", "1", "--active", "2", str(script)], cwd=str(REPO), env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    for name, victim in victims.items():
        assert victim.read_text() == "export PATH=precious\n", f"written through {name}"
    run = json.loads((old / "run.json").read_text())
    assert run["status"] == "ok" and run["traces"] == ["traces/rank0.cycle1.pt.trace.json.gz"], run
    assert (old / "traces" / "rank0.cycle1.pt.trace.json.gz").stat().st_size > 1000
    assert json.loads((old / "compile.json").read_text())["graph_breaks"]
    leftovers = [p.name for p in (old / "traces").iterdir() if p.name.endswith((".tmp", ".part"))
                 and not p.is_symlink()]
    assert not leftovers
