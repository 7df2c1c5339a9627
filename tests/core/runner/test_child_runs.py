"""The child under real torch (CPU): traces, events, crash, stop, fallback, step-aside, syntax error."""
from __future__ import annotations

import time

import pytest
from runner_scripts import COMPILED, OWN_PROFILER, STUBBORN, SYNTAX_ERROR, TRAIN, write

from core.gpu.backend import FakeBackend, NoGpu
from core.runner.bundle import read_json
from core.runner.config import RunConfig, Schedule, validate
from core.runner.process import StopPlan
from core.runner.protocol import read_events
from core.runner.session import RunSession
from core.trace.loader import load

REPO = __import__("pathlib").Path(__file__).resolve().parents[3]

from helpers import finish, no_torch_skip  # noqa: E402

pytestmark = [pytest.mark.needs_torch, no_torch_skip]


def _run(tmp_path, script, args=(), schedule=Schedule(1, 1, 2, 1), backend=None, plan=StopPlan(), stop_after=None,
         timeout_s=90):
    cfg = validate(RunConfig(script=str(script), args=tuple(args), schedule=schedule,
                             out_dir=str(tmp_path / "bundle"), nvml_hz=20))
    s = RunSession(cfg, backend=backend or NoGpu("test"), plan=plan).start()
    return s, finish(s, timeout_s, stop_when=stop_after)


def _types(events):
    return [e["type"] for e in events]


def test_training_run_writes_a_loadable_bundle(tmp_path):
    script = write(tmp_path, "train.py", TRAIN)
    s, events = _run(tmp_path, script, ["6"], backend=FakeBackend(1))
    assert s.exit_code == 0
    b = s.bundle
    assert [e["step"] for e in events if e["type"] == "step"] == [1, 2, 3, 4, 5, 6]
    assert _types(events)[:2] == ["launch", "start"] and _types(events)[-1] == "end"
    assert [e["phase"] for e in events if e["type"] == "phase"][:3] == ["wait", "warmup", "active"]
    assert len(b.trace_files()) == 1 and b.trace_files()[0].name.startswith("rank0.")
    run = read_json(b.run_json)
    assert run["exit_code"] == 0 and run["status"] == "ok" and run["torch_version"].startswith("2.")
    assert run["steps"] == 6 and run["started_at"] < run["ended_at"]
    assert "finished 6" in b.stdout_log.read_text()
    assert read_events(str(b.events)) == events  # the events file reads back as the run streamed it
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
    assert "gpu0/gpu_util" in names and "gpu0/mem_used_mb" in names  # util_pct read as the standard name


def test_crash_keeps_completed_cycles_and_flushes_the_current(tmp_path):
    script = write(tmp_path, "crash.py", TRAIN)
    # cycles of warmup 1 + active 1: cycle 1 = step #1, cycle 2 = #3, crash inside cycle 3 (#5)
    s, events = _run(tmp_path, script, ["20", "6"], schedule=Schedule(0, 1, 1, 4))
    assert s.exit_code == 1
    exc = [e for e in events if e["type"] == "exception"]
    assert exc and "boom at step 6" in exc[0]["message"] and "RuntimeError" in exc[0]["traceback"]
    # the user's frames only, as with `python crash.py`: no runner or runpy frames
    assert "crash.py" in exc[0]["traceback"] and "child.py" not in exc[0]["traceback"]
    assert "runpy" not in exc[0]["traceback"]
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
    assert s.exit_code == 2  # bad input, found before any hook is installed
    exc = [e for e in events if e["type"] == "exception"]
    assert exc and exc[0]["message"].startswith("SyntaxError") and "bad.py, line" in exc[0]["message"]
    err = s.bundle.stderr_log.read_text()
    assert "SyntaxError" in err and "Traceback" not in err and "child.py" not in err


def test_script_with_its_own_profiler_is_left_alone(tmp_path):
    script = write(tmp_path, "own.py", OWN_PROFILER)
    s, events = _run(tmp_path, script)
    assert s.exit_code == 0
    notices = [e for e in events if e["type"] == "notice"]
    assert notices and notices[0]["code"] == "step_aside" and "torch.profiler" in notices[0]["message"]
    assert s.bundle.trace_files() == []
    assert sum(e["type"] == "step" for e in events) == 4  # steps are still reported
    assert "own profiler rows" in s.bundle.stdout_log.read_text()


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
    assert s.exit_code == 130  # like one process (torchrun's agent itself exits 1 on SIGINT)
    assert read_json(s.bundle.run_json)["status"] == "stopped"
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in workers), "a torchrun worker outlived the run"
    ts = load(s.bundle.root, use_cache=False)
    assert ts.ranks == [0, 1] and all(len(m.steps) >= 2 for m in ts.models)


def _record_cli(tmp_path, script, *args):
    import subprocess
    import sys
    return subprocess.Popen([sys.executable, "-m", "core.cli", "record", "--quiet", "--out", str(tmp_path / "b"),
                             # the window opens at the first step: with the default wait (5 steps) a run
                             # stopped after 3 steps under load had no window in progress to flush
                             "--wait", "0", "--warmup", "1", "--active", "100000", str(script), *args], cwd=str(REPO),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _wait_steps(tmp_path, n, timeout_s=90):
    events_file = tmp_path / "b" / "events.jsonl"
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        if events_file.exists():
            evs = read_events(str(events_file))
            if sum(1 for e in evs if e["type"] == "step") >= n:
                return evs
        time.sleep(0.1)
    raise AssertionError("no steps")


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_killed_launcher_leaves_no_orphan_and_keeps_the_trace(tmp_path, how):
    """`kill` of `ptprof record` stops the run like Ctrl-C; even SIGKILL of the launcher (or a crashed GUI)
    is noticed by the child, which flushes its window and exits instead of training on alone."""
    import signal
    # prints every step, like most training loops: after a SIGKILL of the launcher those prints hit a
    # broken pipe, which must not turn the stop into a crash (they go on into stdout.log)
    script = write(tmp_path, "forever.py", TRAIN.replace("    i += 1\n", "    i += 1\n    print('step', i, flush=True)\n"))
    proc = _record_cli(tmp_path, script, "-1")
    evs = _wait_steps(tmp_path, 3)
    child = next(e["pid"] for e in evs if e["type"] == "start")
    proc.send_signal(getattr(signal, how))
    proc.wait(timeout=60)
    deadline = time.monotonic() + 30
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child), "the training process outlived its launcher"
    evs = read_events(str(tmp_path / "b" / "events.jsonl"))
    assert evs[-1]["type"] == "end" and evs[-1]["exit_code"] == 130
    assert list((tmp_path / "b" / "traces").glob("*.pt.trace.json.gz")), "the window in progress was flushed"
    if how == "SIGTERM":
        assert proc.returncode == 130
    else:
        assert "step" in (tmp_path / "b" / "stdout.log").read_text()


def test_killed_launcher_stops_torchrun_ranks_too(tmp_path):
    """Under torchrun a rank's parent is the torchrun agent, which outlives a SIGKILLed launcher: the
    ranks watch the launcher's pid itself (PTPROF_LAUNCHER_PID) and stop, flushing their windows."""
    import signal
    script = write(tmp_path, "forever.py", TRAIN.replace("    i += 1\n", "    i += 1\n    print('step', i, flush=True)\n"))
    import subprocess
    import sys
    proc = subprocess.Popen([sys.executable, "-m", "core.cli", "record", "--quiet", "--out", str(tmp_path / "b"),
                             "--active", "100000", "--nproc-per-node", "2", str(script), "-1"], cwd=str(REPO),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 120:
        evs = read_events(str(tmp_path / "b" / "events.jsonl")) if (tmp_path / "b" / "events.jsonl").exists() else []
        if {e["rank"] for e in evs if e["type"] == "step" and e["step"] >= 3} == {0, 1}:
            break
        time.sleep(0.1)
    ranks = {e["pid"] for e in evs if e["type"] == "start"}
    assert len(ranks) == 2
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    deadline = time.monotonic() + 60
    while any(_alive(pid) for pid in ranks) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_alive(pid) for pid in ranks), "a torchrun rank kept training after its launcher died"
    evs = read_events(str(tmp_path / "b" / "events.jsonl"))
    assert sorted(e["rank"] for e in evs if e["type"] == "end") == [0, 1]
    assert len(list((tmp_path / "b" / "traces").glob("rank*.pt.trace.json.gz"))) == 2
