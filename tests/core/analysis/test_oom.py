"""core/analysis/oom.py + oom_findings.py + `ptprof analyze` on an OOM bundle (issue 32)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from core.analysis import oom
from core.analysis.oom_findings import bundle_findings

sys.path.insert(0, str(Path(__file__).resolve().parent))
import oom_bundle  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
MIB = 1 << 20


def test_report_of_a_synthetic_oom(tmp_path):
    (r,) = oom.oom_reports(oom_bundle.write(tmp_path / "b"))
    assert r.request_bytes == 256 * MIB and r.free_bytes == 10 * MIB and r.history
    assert r.groups[0].where == "/home/u/train.py:21 in forward" and r.groups[0].bytes == 6 * 64 * MIB
    assert r.groups[0].frames[0] == "/home/u/train.py:21 in forward"  # the user's frames first
    assert r.groups[0].kind == "activations" and r.groups[1].kind == "optimizer state"
    assert r.largest_free_block_bytes == 16 * MIB and r.unallocated_reserved_bytes == 96 * MIB
    assert not r.fragmented  # 96 MiB spare < the 256 MiB asked for
    (g,) = r.growth
    assert g.where == "/home/u/train.py:21 in forward"
    assert g.per_step_bytes == tuple(64 * MIB * k for k in range(1, 7))
    assert any(s.startswith("Growth:") and "train.py:21" in s for s in r.suggestions)


def test_fragmentation_suggests_expandable_segments():
    rec = {"device": 0, "size_bytes": 64 * MIB, "reserved_bytes": 512 * MIB, "allocated_bytes": 100 * MIB}
    snap_obj = oom_bundle.snapshot()
    from core.snapshot.load import from_dict
    r = oom.build_report(rec, from_dict(snap_obj, "x"), [])
    assert r.fragmented and "expandable_segments:True" in r.suggestions[0]


def test_findings_and_the_cli(tmp_path):
    root = oom_bundle.write(tmp_path / "b")
    rules = [f.rule for f in bundle_findings(root)]
    assert rules == ["oom", "memory_growth"]
    proc = subprocess.run([sys.executable, "-m", "core.cli", "analyze", str(root), "--json"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    f = doc["findings"][0]
    assert f["rule"] == "oom" and f["severity"] == "error" and "256.00 MiB" in f["title"]
    assert f["source"] == {"file": "/home/u/train.py", "line": 21, "function": "forward"}
    assert doc["findings"][1]["rule"] == "memory_growth" and "train.py:21" in doc["findings"][1]["title"]
    text = subprocess.run([sys.executable, "-m", "core.cli", "analyze", str(root)], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert text.returncode == 0 and "oom" in text.stdout and "Growth:" in text.stdout and "Traceback" not in text.stderr
