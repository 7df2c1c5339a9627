"""core/analysis/oom.py + oom_findings.py + `ptprof analyze` on an OOM bundle (issue 32)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from core.analysis import oom
from core.rules.oom_findings import bundle_findings

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


DEVICE = REPO / "tests" / "data" / "bundles"


def _analyze(name):
    proc = subprocess.run([sys.executable, "-m", "core.cli", "analyze", str(DEVICE / name), "--json", "--no-cache"],
                          cwd=REPO, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["findings"]


def test_device_bundle_growing_batch():
    """H100, bench/device_oom/a_batch_doubles.py: the batch doubles every step, OOM at step 7 under a
    3 GiB cap. The cause named is the growing batch at the forward line, not a leak."""
    found = _analyze("oom_a_batch_doubles")
    (f,) = [f for f in found if f["rule"] == "oom"]
    assert "256.00 MiB" in f["title"] and "under the 3.00 GiB cap" in f["title"]
    assert f["fix"].startswith("Growing batch") and "a_batch_doubles.py:12" in f["fix"]
    assert not [f for f in found if f["rule"] == "memory_growth" and "a_batch_doubles.py" in f["title"]]


def test_device_bundle_kept_loss_graphs():
    """H100, bench/device_oom/b_losses_kept.py: `losses.append(loss)` keeps each step's graph, OOM at step 15."""
    found = _analyze("oom_b_losses_kept")
    (f,) = [f for f in found if f["rule"] == "oom"]
    assert f["fix"].startswith("Growth") and "b_losses_kept.py:12" in f["fix"]
    growth = [f for f in found if f["rule"] == "memory_growth" and "b_losses_kept.py:12" in f["title"]]
    assert growth and "+128.00 MiB per step" in growth[0]["title"]


def test_device_bundle_that_survived():
    found = _analyze("oom_d_near_capacity")
    assert not [f for f in found if f["rule"] in ("oom",) or (f["rule"] == "memory_growth" and "allocator" in f["title"])]
