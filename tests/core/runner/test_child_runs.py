"""The child under real torch (CPU): traces, events, crash, stop, fallback, step-aside, syntax error."""
from __future__ import annotations

import time

import pytest

from core.runner.config import RunConfig, Schedule, validate
from core.runner.process import StopPlan
from core.runner.protocol import read_events
from core.runner.bundle import read_json
from core.runner.session import RunSession
from core.gpu.backend import FakeBackend, NoGpu
from core.trace.loader import load

from runner_scripts import COMPILED, INFERENCE, OWN_PROFILER, STUBBORN, SYNTAX_ERROR, TRAIN, write

pytest.importorskip("torch")
pytestmark = pytest.mark.needs_torch


def _run(tmp_path, script, args=(), schedule=Schedule(1, 1, 2, 1), backend=None, plan=StopPlan(), stop_after=None,
         timeout_s=90):
    cfg = validate(RunConfig(script=str(script), args=tuple(args), schedule=schedule,
                             out_dir=str(tmp_path / "bundle"), nvml_hz=20))
    s = RunSession(cfg, backend=backend or NoGpu("test"), plan=plan).start()
    events = []
    t0 = time.monotonic()
    while not s.finished:
        up = s.poll()
        events += up.events
        if stop_after is not None and not s.stopping_requested and stop_after(events):
            s.request_stop()
        assert time.monotonic() - t0 < timeout_s, "run did not finish"
        time.sleep(0.05)
    return s, events


def _types(events):
    return [e["type"] for e in events]


def test_training_run_writes_a_loadable_bundle(tmp_path):
    script = write(tmp_path, "train.py", TRAIN)
    s, events = _run(tmp_path, script, ["6"], backend=FakeBackend(1))
    assert s.exit_code == 0
    b = s.bundle
    assert [e["step"] for e in events if e["type"] == "step"] == [1, 2, 3, 4, 5, 6]
    assert _types(events)[0] == "start" and _types(events)[-1] == "end"
    assert [e["phase"] for e in events if e["type"] == "phase"][:3] == ["wait", "warmup", "active"]
    assert len(b.trace_files()) == 1 and b.trace_files()[0].name.startswith("rank0.")
    run = read_json(b.run_json)
    assert run["exit_code"] == 0 and run["status"] == "ok" and run["torch_version"].startswith("2.")
    assert run["steps"] == 6 and run["started_at"] < run["ended_at"]
    assert "finished 6" in b.stdout_log.read_text()
    ts = load(b.root, use_cache=False)
    steps = ts.primary.steps
    assert list(steps.number) == [2, 3]  # wait=1 warmup=1 active=2, counted from the first optimizer step
    assert all(d > 0 for d in steps.dur_ns)
    assert ts.bundle["exit_code"] == 0
    assert ts.primary.meta.extra["ptprof"]["step_source"] == "optimizer"
    assert "cudnn_benchmark" in ts.primary.meta.extra["ptprof"]
    # fake NVML samples were written and load as counter series on the trace's time base
    assert ts.nvml is not None and len(ts.nvml) > 0
    names = {ts.nvml_strings[int(i)] for i in set(ts.nvml.series.tolist())}
    assert "gpu0/util_pct" in names and "gpu0/mem_used_mb" in names


def test_crash_keeps_completed_cycles_and_flushes_the_current(tmp_path):
    script = write(tmp_path, "crash.py", TRAIN)
    # cycles of warmup 1 + active 1: cycle 1 = step #1, cycle 2 = #3, crash inside cycle 3 (#5)
    s, events = _run(tmp_path, script, ["20", "6"], schedule=Schedule(0, 1, 1, 4))
    assert s.exit_code == 1
    exc = [e for e in events if e["type"] == "exception"]
    assert exc and "boom at step 6" in exc[0]["message"] and "RuntimeError" in exc[0]["traceback"]
    assert events[-1]["type"] == "end" and events[-1]["exit_code"] == 1
    files = s.bundle.trace_files()
    assert len(files) == 3, files  # two complete cycles + the partial one
    run = read_json(s.bundle.run_json)
    assert run["exit_code"] == 1 and run["status"] == "failed" and "boom" in run["exception"]
    ts = load(s.bundle.root, use_cache=False)
    numbers = sorted(int(n) for m in ts.models for n in m.steps.number)
    assert numbers[:2] == [1, 3] and numbers[-1] == 5


def test_stop_flushes_the_window_in_progress(tmp_path):
    script = write(tmp_path, "forever.py", TRAIN)
    s, events = _run(tmp_path, script, ["-1"], schedule=Schedule(0, 1, 100000, 1),
                     stop_after=lambda ev: sum(e["type"] == "step" for e in ev) >= 5)
    assert s.exit_code == 130
    assert s.proc.signals_sent == ["SIGINT"]
    assert any(e["type"] == "notice" and e["code"] == "interrupted" for e in events)
    ts = load(s.bundle.root, use_cache=False)
    assert len(ts.primary.steps) >= 3
    assert read_json(s.bundle.run_json)["status"] == "stopped"


def test_script_ignoring_signals_is_killed_with_its_children(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    script = write(tmp_path, "stubborn.py", STUBBORN)
    s, _ = _run(tmp_path, script, [str(pid_file)], plan=StopPlan(sigint_grace_s=0.5, sigterm_grace_s=0.5),
                stop_after=lambda ev: pid_file.exists() and pid_file.read_text().strip() != "")
    assert s.proc.signals_sent == ["SIGINT", "SIGTERM", "SIGKILL"]
    assert s.exit_code == 137
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 3
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild)  # no orphan left


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for a reaper does not count)."""
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_syntax_error_is_reported(tmp_path):
    script = write(tmp_path, "bad.py", SYNTAX_ERROR)
    s, events = _run(tmp_path, script)
    assert s.exit_code == 1
    exc = [e for e in events if e["type"] == "exception"]
    assert exc and exc[0]["message"].startswith("SyntaxError")
    assert "SyntaxError" in s.bundle.stderr_log.read_text()


def test_script_with_its_own_profiler_is_left_alone(tmp_path):
    script = write(tmp_path, "own.py", OWN_PROFILER)
    s, events = _run(tmp_path, script)
    assert s.exit_code == 0
    notices = [e for e in events if e["type"] == "notice"]
    assert notices and notices[0]["code"] == "step_aside" and "torch.profiler" in notices[0]["message"]
    assert s.bundle.trace_files() == []
    assert sum(e["type"] == "step" for e in events) == 4  # steps are still reported
    assert "own profiler rows" in s.bundle.stdout_log.read_text()


def test_inference_script_gets_a_forward_window(tmp_path):
    script = write(tmp_path, "infer.py", INFERENCE)
    s, events = _run(tmp_path, script, schedule=Schedule(1, 1, 2, 1))
    assert s.exit_code == 0
    notices = [e for e in events if e["type"] == "notice"]
    assert notices[0]["code"] == "fallback" and "Sequential" in notices[0]["message"]
    assert all(e["source"] == "forward" for e in events if e["type"] == "step")
    ts = load(s.bundle.root, use_cache=False)
    assert len(ts.primary.steps) >= 3
    assert ts.primary.meta.extra["ptprof"]["step_source"] == "forward"


def test_events_file_reads_back(tmp_path):
    script = write(tmp_path, "train.py", TRAIN)
    s, events = _run(tmp_path, script, ["4"], schedule=Schedule(0, 1, 1, 1))
    assert read_events(str(s.bundle.events)) == events


def test_compile_graph_breaks_and_recompiles_land_in_compile_json(tmp_path):
    script = write(tmp_path, "comp.py", COMPILED)
    s, _ = _run(tmp_path, script)
    assert s.exit_code == 0
    info = read_json(s.bundle.compile_json)
    (brk,) = info["graph_breaks"]
    assert brk["reason"] == "Data-dependent branching" and brk["line"] == 10 and brk["file"] == str(script)
    assert [f["function"] for f in brk["user_frames"]] == ["<module>", "forward"]  # no torch/runner frames
    # only the batch-size change recompiles (forward, and the resume frame after the break when the
    # branch is taken): no guard failure comes from our hooks
    recs = info["recompiles"]
    assert recs and recs[0]["function"] == "forward", recs
    assert all("size mismatch" in r["reasons"][0] for r in recs), recs
    assert info["counters"]["frames"]["total"] >= 2
    assert "graph_break" not in s.bundle.stderr_log.read_text()  # kept off the user's stderr
    ts = load(s.bundle.root, use_cache=False)
    assert ts.compile_info["graph_breaks"][0]["line"] == 10


def test_torchrun_ranks_flush_on_stop_and_leave_no_orphans(tmp_path):
    script = write(tmp_path, "forever.py", TRAIN)
    cfg = validate(RunConfig(script=str(script), args=("-1",), schedule=Schedule(0, 1, 100000, 1),
                             out_dir=str(tmp_path / "bundle"), nproc=2))
    s = RunSession(cfg, backend=NoGpu("test")).start()
    events = []
    t0 = time.monotonic()
    while not s.finished:
        events += s.poll().events
        # warmup is optimizer step 1, so step 4 seen = ProfilerStep#1 and #2 complete on that rank
        ranks_stepping = {e["rank"] for e in events if e["type"] == "step" and e["step"] >= 4}
        if ranks_stepping == {0, 1} and not s.stopping_requested:
            s.request_stop()
        assert time.monotonic() - t0 < 120, "torchrun run did not finish"
        time.sleep(0.05)
    workers = {e["pid"] for e in events if e["type"] == "start"}
    assert len(workers) == 2 and s.proc.pid not in workers, events  # ranks are torchrun's children
    assert sorted(p.name for p in s.bundle.trace_files()) == ["rank0.cycle1.pt.trace.json.gz",
                                                               "rank1.cycle1.pt.trace.json.gz"], \
        (s.proc.signals_sent, [e for e in events if e["type"] != "step"])
    assert sorted(e["rank"] for e in events if e["type"] == "end") == [0, 1]
    assert s.exit_code != 0
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in workers), "a torchrun worker outlived the run"
    ts = load(s.bundle.root, use_cache=False)
    assert ts.ranks == [0, 1] and all(len(m.steps) >= 2 for m in ts.models)
