"""The window-end GPU sync (child._close_window_sync), in-process with CUDA calls faked: it runs once per
closing window, after ProfilerStep#N has ended, under ptprof::window_end_sync, and logs a gpu_lag event."""
from __future__ import annotations

import gzip
import json

import pytest

from core.runner import child
from core.runner.protocol import read_events

pytestmark = pytest.mark.needs_torch


@pytest.fixture
def torch():  # imported by the tests that use it, not while collecting (~2 s in every xdist worker)
    return pytest.importorskip("torch")


@pytest.mark.parametrize("steps, lag_step", [(7, 5), (4, 4)])  # the window closes at step 5 / at the exit flush
def test_window_end_sync_runs_outside_the_last_step(tmp_path, monkeypatch, torch, steps, lag_step):
    syncs = []
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: syncs.append(1))
    opts = child.parse_args(["--bundle", str(tmp_path), "--wait", "1", "--warmup", "1", "--active", "2", "x.py"])
    runner = child.ChildRunner(opts, torch, child._load_sibling("protocol"), None)
    runner.sources.source = "optimizer"
    model = torch.nn.Linear(4, 4)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # after the profiler decided its activities
    real_make = runner._make_profiler

    def cpu_profiler(*schedule):
        with monkeypatch.context() as m:
            m.setattr(torch.cuda, "is_available", lambda: False)
            return real_make(*schedule)
    runner._make_profiler = cpu_profiler
    for _ in range(steps):
        model(torch.randn(2, 4)).sum().backward()
        runner._on_step("optimizer")
    runner.finish(0)
    assert len(syncs) == 1  # one window closed (at its last step, or by the flush at exit)
    events = read_events(str(tmp_path / "events.jsonl"))
    (lag,) = [e for e in events if e["type"] == "gpu_lag"]
    assert lag["step"] == lag_step and lag["cycle"] == 1 and lag["lag_ns"] >= 0 and lag["source"] == "optimizer"
    (trace,) = (tmp_path / "traces").glob("*.gz")
    evs = json.loads(gzip.decompress(trace.read_bytes()))["traceEvents"]
    steps = [e for e in evs if e.get("name", "").startswith("ProfilerStep#")]
    (sync,) = [e for e in evs if e.get("name") == "ptprof::window_end_sync"]
    # ProfilerStep#2 and #3 (at the exit flush #3 is the partial step in progress, ended before the sync)
    assert len(steps) == 2 and all(sync["ts"] >= s["ts"] + s["dur"] for s in steps)
