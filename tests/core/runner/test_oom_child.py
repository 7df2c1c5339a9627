"""The child's OOM path on CPU (issue 32): a script that raises torch.OutOfMemoryError with torch's own
message, after putting a fake allocator snapshot in place of torch.cuda.memory._snapshot (no GPU here).
The snapshot is written, run.json and events.jsonl hold the failing allocation, the status is `oom`,
and the exit code and the script's traceback are what they would have been."""
from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import oom_scripts  # tests/oom_scripts.py
import pytest
from helpers import finish, no_torch_skip  # noqa: E402

from core.gpu.backend import NoGpu
from core.runner import memhist
from core.runner.bundle import read_json
from core.runner.config import RunConfig, Schedule, validate
from core.runner.protocol import read_events
from core.runner.session import RunSession

REPO = Path(__file__).resolve().parents[3]
MESSAGE = oom_scripts.oom_message(2, 0, 1.5, 70, 6.5)
SCRIPT = oom_scripts.script("DEVICE, TOTAL = 0, 1 << 30", f'''def grow(step):
    if step == 4:
        raise torch.OutOfMemoryError({MESSAGE!r})
    return model(torch.randn(4 * step, 8)).sum()''', steps=10, call="grow")


def test_parse_oom_message():
    got = memhist.parse_oom_message(MESSAGE)
    gib = 1 << 30
    assert got["size_bytes"] == 2 * gib and got["device"] == 0
    assert got["free_bytes"] == int(1.5 * gib) and got["allocated_bytes"] == 70 * gib
    assert got["reserved_bytes"] == int(76.5 * gib)
    assert memhist.parse_oom_message("no numbers here") == {}


@no_torch_skip
@pytest.mark.needs_torch
def test_child_oom_path_with_a_fake_allocator_error(tmp_path):
    script = tmp_path / "oom_train.py"
    script.write_text(SCRIPT)
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    cfg = validate(RunConfig(script=str(script), schedule=Schedule(1, 1, 1, 1), out_dir=str(tmp_path / "bundle"),
                             nvml_hz=20))
    s = RunSession(cfg, backend=NoGpu("test")).start()
    finish(s, timeout_s=120)
    assert s.exit_code == plain.returncode == 1  # the script fails exactly as it would have
    run = read_json(s.bundle.run_json)
    assert run["status"] == "oom"
    (oom,) = run["oom"]
    assert oom["size_bytes"] == 2 << 30 and oom["free_bytes"] == int(1.5 * (1 << 30))
    assert oom["where"].endswith("in grow") and "oom_train.py:" in oom["where"]
    assert oom["snapshot"] == "oom.rank0.snapshot.pickle"
    snap = pickle.loads((s.bundle.root / oom["snapshot"]).read_bytes())
    assert snap["segments"][0]["total_size"] == 1 << 30
    events = read_events(str(s.bundle.events))
    assert [e["type"] for e in events].count("oom") == 1
    assert "OutOfMemoryError" in (s.bundle.root / "stderr.log").read_text() or "OutOfMemoryError" in run["exception"]


def test_write_private_never_follows_a_link(tmp_path):
    target = tmp_path / "precious.txt"
    target.write_text("keep")
    out = tmp_path / "memory.snapshot.pickle"
    out.symlink_to(target)
    memhist.write_private(str(out), b"data")
    assert target.read_text() == "keep" and out.read_bytes() == b"data" and not out.is_symlink()
