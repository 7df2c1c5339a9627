"""Per-rank OOM under torchrun (issue 32), on CPU: `ptprof record --nproc-per-node 2` of a gloo script whose
rank 1 raises torch.OutOfMemoryError (torch's own message, a fake allocator snapshot in place of
torch.cuda.memory._snapshot, as test_oom_child.py fakes it). The OOM lands in rank 1's records only (its
event, its snapshot file, run.json "oom" with rank 1), the bundle's status is `oom`, and `ptprof analyze`
and the OOM view's report name rank 1."""
from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import oom_scripts  # tests/oom_scripts.py
import pytest
from helpers import no_torch_skip  # noqa: E402

from core.runner.bundle import read_json
from core.runner.protocol import read_events

REPO = Path(__file__).resolve().parents[3]
MESSAGE = oom_scripts.oom_message(3, 1, 1.25, 71, 5.5)
SCRIPT = oom_scripts.script('''import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
DEVICE, TOTAL = rank, (5 + rank) << 30''', f'''def forward(step):
    if rank == 1 and step == 4:
        raise torch.OutOfMemoryError({MESSAGE!r})
    return model(torch.randn(4 * step, 8)).sum()''', steps=7)


@no_torch_skip
@pytest.mark.needs_torch
def test_torchrun_rank_oom_is_recorded_for_that_rank(tmp_path):
    try:
        import torch.distributed as dist
        if not dist.is_available() or not dist.is_gloo_available():
            pytest.skip("torch.distributed with gloo is not available")
    except ImportError:
        pytest.skip("no torch")
    script = tmp_path / "ranks_oom.py"
    script.write_text(SCRIPT)
    out = tmp_path / "bundle"
    proc = subprocess.run([sys.executable, "-m", "core.cli", "record", "--quiet", "--out", str(out), "--wait", "0",
                           "--warmup", "1", "--active", "1", "--nproc-per-node", "2", str(script)],
                          cwd=str(REPO), capture_output=True, text=True, timeout=240)
    assert proc.returncode != 0, proc.stderr[-2000:]  # the run failed, as torchrun fails
    run = read_json(out / "run.json")
    assert run["status"] == "oom", (run.get("status"), run.get("notices"))
    (oom,) = run["oom"]  # rank 0 did not run out of memory: one record, rank 1's
    assert oom["rank"] == 1 and oom["size_bytes"] == 3 << 30 and oom["device"] == 1
    assert oom["snapshot"] == "oom.rank1.snapshot.pickle"
    assert "ranks_oom.py:" in oom["where"] and oom["where"].endswith("in forward")
    snap = pickle.loads((out / oom["snapshot"]).read_bytes())
    assert snap["segments"][0]["total_size"] == 6 << 30  # rank 1's own allocator state
    assert not (out / "oom.rank0.snapshot.pickle").exists()
    events = read_events(str(out / "events.jsonl"))
    assert [e["rank"] for e in events if e["type"] == "oom"] == [1]
    assert {e["rank"] for e in events if e["type"] == "start"} == {0, 1}

    found = subprocess.run([sys.executable, "-m", "core.cli", "analyze", str(out), "--json", "--no-cache"],
                           cwd=str(REPO), capture_output=True, text=True, timeout=240)
    assert found.returncode == 0, found.stderr[-2000:]
    (f,) = [f for f in json.loads(found.stdout)["findings"] if f["rule"] == "oom"]
    assert "rank 1" in f["title"] and "3.00 GiB" in f["title"], f

    from core.analysis import oom as oom_analysis
    (report,) = oom_analysis.oom_reports(out)  # what the OOM view shows
    assert report.rank == 1 and report.device == 1 and report.headline().startswith("rank 1 ran out")
