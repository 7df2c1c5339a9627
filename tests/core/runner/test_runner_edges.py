"""Hostile and odd scripts under the runner (issue 14): each with its exit code, what the bundle keeps,
and no process of the run left (checked through /proc by session id and by the run's environment marker)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from runner_scripts import TRAIN

from core.gpu.backend import NoGpu
from core.runner.bundle import read_json
from core.runner.config import RunConfig, Schedule, validate
from core.runner.process import StopPlan
from core.runner.protocol import read_events
from core.runner.session import RunSession
from core.trace.loader import load

REPO = Path(__file__).resolve().parents[3]
from helpers import finish, no_torch_skip  # noqa: E402

pytestmark = [pytest.mark.needs_torch, no_torch_skip,
              pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="process checks read /proc (Linux)")]

TRAIN_LOOP = TRAIN.replace("while steps < 0 or i < steps:", "while steps < 0 or i < steps:\n    hook(i)") \
    .replace("import sys, torch", "import sys, torch\nhook = globals().get('hook', lambda i: None)")


def _script(tmp_path: Path, name: str, prelude: str, body: str = TRAIN_LOOP) -> Path:
    """`prelude` defines hook(i) (called at the top of every training iteration) before the TRAIN loop."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(prelude) + "\n" + textwrap.dedent(body))
    return path


def _run(tmp_path, script, args=("-1",), schedule=Schedule(0, 1, 100_000, 1), plan=StopPlan(),
         stop_when=None, timeout_s=180):
    cfg = validate(RunConfig(script=str(script), args=tuple(args), schedule=schedule,
                             out_dir=str(tmp_path / "bundle"), nvml_hz=5))
    s = RunSession(cfg, backend=NoGpu("test"), plan=plan).start()
    return s, finish(s, timeout_s, stop_when=stop_when)


def _steps(n):
    return lambda events: sum(e["type"] == "step" for e in events) >= n


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _left_over(session_id: int, bundle: Path) -> list[int]:
    """Running processes in the run's session, or carrying its PTPROF_BUNDLE marker."""
    marker = f"PTPROF_BUNDLE={bundle}".encode()
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            env = (d / "environ").read_bytes().split(b"\0")
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and (int(fields[3]) == session_id or marker in env):
            out.append(int(d.name))
    return out


def _assert_nothing_left(s: RunSession, timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while _left_over(s.proc.pid, s.bundle.root) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _left_over(s.proc.pid, s.bundle.root) == []


CHILDREN = """
import multiprocessing as mp, os, subprocess, sys, time
def _loop():
    while True:
        time.sleep(0.1)
PIDS = sys.argv[3]  # argv[1:3]: TRAIN's steps and crash_at
def hook(i, _started=[]):
    if _started:
        return
    _started.append(1)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    worker = mp.get_context("fork").Process(target=_loop)  # not a daemon: exit joins it
    worker.start()
    r, w = os.pipe()
    if os.fork() == 0:  # a double-forked setsid daemon: its parent exits, it leaves our group and session
        os.setsid()
        if os.fork() == 0:
            os.write(w, str(os.getpid()).encode()); os.close(w)
            while True:
                time.sleep(0.1)
        os._exit(0)
    os.close(w)
    daemon = int(os.read(r, 32)); os.close(r)
    with open(PIDS, "w") as fh:
        fh.write(" ".join(map(str, (sleeper.pid, worker.pid, daemon))))
"""


def test_stop_reaches_subprocess_multiprocessing_and_setsid_children(tmp_path):
    pids_file = tmp_path / "pids"
    script = _script(tmp_path, "spawner.py", CHILDREN)
    s, events = _run(tmp_path, script, args=("-1", "-1", str(pids_file)),
                     stop_when=lambda ev: pids_file.exists() and len(pids_file.read_text().split()) == 3
                     and _steps(5)(ev))
    assert s.exit_code == 130
    assert s.bundle.trace_files(), "the window in progress was flushed"
    for pid in map(int, pids_file.read_text().split()):
        assert not _running(pid), pid
    _assert_nothing_left(s)
    assert read_json(s.bundle.run_json)["status"] == "stopped"


def test_a_script_that_ignores_sigint_is_terminated_and_keeps_its_window(tmp_path):
    script = _script(tmp_path, "deaf.py", "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n")
    s, events = _run(tmp_path, script, plan=StopPlan(sigint_grace_s=1.0), stop_when=_steps(5))
    # SIGINT goes unanswered, SIGTERM ends it (143); it then says it is writing its window, and gets the
    # flush grace instead of the SIGKILL 5 s later that lost a big window (seen with ~3,900 steps)
    assert s.exit_code == 143 and s.proc.signals_sent == ["SIGINT", "SIGTERM"], s.proc.signals_sent
    assert any(e["type"] == "notice" and e["code"] == "terminated" for e in events)
    assert s.bundle.trace_files() and len(load(s.bundle.root, use_cache=False).primary.steps) >= 2
    _assert_nothing_left(s)


def test_os_exit_mid_window_is_said_not_silently_ok(tmp_path):
    """run.json says the window in progress was lost, and the CLI's last lines name the cause - never
    "too few steps for the schedule?" (which it is not). One `ptprof record` run checks both."""
    script = _script(tmp_path, "exits.py", "import os\ndef hook(i):\n    if i == 6:\n        os._exit(0)\n")
    bundle = tmp_path / "b"
    r = subprocess.run([sys.executable, "-m", "core.cli", "record", "--out", str(bundle), "--wait", "0",
                        "--active", "100", str(script), "-1"], cwd=str(REPO), capture_output=True, text=True,
                       timeout=180)
    assert r.returncode == 0, r.stderr
    assert "trace window in progress at step" in r.stderr and "os._exit" in r.stderr
    assert "too few steps" not in r.stderr and "Traceback" not in r.stderr
    run = read_json(bundle / "run.json")
    assert run["exit_code"] == 0
    assert run["status"] == "incomplete" and run["end_seen"] is False and run["lost_window"] is True
    assert any("trace window in progress" in n and "os._exit" in n for n in run["notices"])
    assert not list(bundle.glob("traces/*.pt.trace.json*")), "no window was completed"
    assert _left_over(-1, bundle) == []


def test_segfault_keeps_completed_cycles_and_says_the_window_was_lost(tmp_path):
    script = _script(tmp_path, "segv.py", "import ctypes\ndef hook(i):\n    if i == 7:\n        ctypes.string_at(0)\n")
    s, events = _run(tmp_path, script, schedule=Schedule(0, 1, 2, 3))  # cycles end at steps 3 and 6
    assert s.exit_code == 139  # -SIGSEGV, as a shell says it
    run = read_json(s.bundle.run_json)
    assert run["status"] == "failed" and run["end_seen"] is False
    assert [p.name for p in s.bundle.trace_files()] == ["rank0.cycle1.pt.trace.json.gz", "rank0.cycle2.pt.trace.json.gz"]
    _assert_nothing_left(s)


def test_a_crash_in_the_interpreters_teardown_after_a_clean_end_keeps_the_run_ok(tmp_path):
    """torch / gloo can abort in Python's shutdown after the script ended ("terminate called without an
    active exception", SIGABRT, seen once in CI under torchrun): the script's exit 0 and the complete traces
    stand, run.json keeps the process's code as teardown_exit_code and says what happened."""
    script = _script(tmp_path, "teardown.py", "import atexit, os\natexit.register(os.abort)\n"
                     "def hook(i):\n    pass\n")
    s, events = _run(tmp_path, script, args=("8",), schedule=Schedule(1, 1, 2, 1))
    run = read_json(s.bundle.run_json)
    assert [e["exit_code"] for e in events if e["type"] == "end"] == [0]
    assert s.exit_code == 0 and run["status"] == "ok" and run["exit_code"] == 0
    assert run["teardown_exit_code"] == 134  # -SIGABRT, as a shell says it
    assert any("while Python shut down" in n and "exited 134" in n for n in run["notices"])
    assert len(load(s.bundle.root, use_cache=False).primary.steps) >= 2
    # the script's own non-zero exit is never settled to 0
    script = _script(tmp_path, "exit3.py", "import atexit, os, sys\natexit.register(os.abort)\n"
                     "def hook(i):\n    if i == 6:\n        sys.exit(3)\n")
    s, events = _run(tmp_path / "b3", script, args=("8",), schedule=Schedule(1, 1, 2, 1))
    run = read_json(s.bundle.run_json)
    assert [e["exit_code"] for e in events if e["type"] == "end"] == [3]
    assert s.exit_code == 134 and run["status"] == "failed" and "teardown_exit_code" not in run


def test_100_mb_of_stdout_is_logged_whole_and_the_console_queue_stays_bounded(tmp_path):
    body = """
import sys
line = "x" * 1023 + "\\n"
for _ in range(50 * 1024):
    sys.stdout.write(line)
sys.stdout.write("y" * (50 << 20))  # 50 MB without a newline
sys.stdout.write("\\nend\\n")
"""
    script = _script(tmp_path, "loud.py", "", body)
    cfg = validate(RunConfig(script=str(script), out_dir=str(tmp_path / "bundle")))
    s = RunSession(cfg, backend=NoGpu("test")).start()
    biggest, t0 = 0, time.monotonic()
    while not s.finished:
        with s.proc._lock:
            biggest = max(biggest, sum(len(text) for _, text in s.proc.lines))
        s.poll()
        assert time.monotonic() - t0 < 300
        time.sleep(0.05)
    assert s.exit_code == 0
    assert s.bundle.stdout_log.stat().st_size == 50 * 1024 * 1024 + (50 << 20) + 5
    assert biggest <= 20_000 * 2100  # lines x MAX_LINE_CHARS (+ the cut note), never the 100 MB
    _assert_nothing_left(s)


@pytest.mark.parametrize("name", ["my script.py", "new\nline.py", "-dash.py", "ünï😀 ✓.py", "--help.py"])
def test_hostile_script_names_run_as_themselves(tmp_path, name):
    script = _script(tmp_path, name, "", "import sys\nprint('argv0', repr(sys.argv[0]))\n")
    s, events = _run(tmp_path, script, args=("--out", "x"))
    assert s.exit_code == 0, s.bundle.stderr_log.read_text()
    assert f"argv0 {str(script)!r}" in s.bundle.stdout_log.read_text()
    run = read_json(s.bundle.run_json)
    assert run["argv"] == [str(script), "--out", "x"] and run["status"] == "ok"
    _assert_nothing_left(s)


def test_hostile_events_never_signal_a_stranger_nor_crash_the_launcher(tmp_path):
    """A script can write anything into events.jsonl: the launcher signals only its own tree."""
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
    try:
        prelude = f"""
import json, os
def hook(i, _done=[]):
    if _done:
        return
    _done.append(1)
    lines = [{{"type": "start", "pid": {stranger.pid}, "rank": 0}}, {{"type": "start", "pid": 0}},
             {{"type": "start", "pid": -1}}, {{"type": "start", "pid": os.getppid()}},
             {{"type": "start", "pid": os.getpid(), "rank": 2}}, {{"type": "start", "pid": os.getpid(), "world_size": 9}},
             {{"type": "step", "step": "abc"}}, {{"type": "step", "step": 10**30}}, {{"type": "end", "exit_code": "x"}},
             {{"type": "notice", "message": ["no"]}}, {{"type": 5}}, [1, 2]]
    with open(os.path.join(os.environ["PTPROF_BUNDLE"], "events.jsonl"), "a") as fh:
        for line in lines:
            fh.write(json.dumps(line) + "\\n")
        fh.write("[" * 100000 + "\\n")  # too deep for json
        fh.write("not json\\n")
"""
        script = _script(tmp_path, "liar.py", prelude)
        s, events = _run(tmp_path, script, plan=StopPlan(sigint_grace_s=1.0, sigterm_grace_s=1.0),
                         stop_when=_steps(8))
        assert s.exit_code == 130
        assert stranger.poll() is None, "the launcher signalled a process that is not the run's"
        run = read_json(s.bundle.run_json)
        # none of them carries the run's MAC (issue 37): all are ignored as not written by ptprof's runner
        assert run["forged_event_lines"] >= 14 and any("not written by ptprof" in n for n in run["notices"])
        assert s.ranks_started == {0} and "end_seen" not in run  # a forged rank 2 "lost" no window
        assert not any("ended without" in n for n in run["notices"]), run["notices"]
        assert isinstance(run["steps"], int) and run["steps"] < 10**6
        assert s.proc.ranks == set()  # no pid from the file was adopted (the real start comes from pid = child)
        _assert_nothing_left(s)
    finally:
        stranger.kill()
        stranger.wait()


def test_an_interpreter_that_never_starts_the_script_times_out_in_one_line(tmp_path):
    """A wrapper that never runs our child and ignores SIGINT/SIGTERM, given as `./python` (a bare relative
    path used to lose its './' and be looked up on PATH): one line, and killed at the timeout, without
    the SIGINT/SIGTERM graces meant for flushing a trace (nothing of ours runs there)."""
    fake = tmp_path / "python"
    fake.write_text('#!/bin/sh\ntrap "" INT TERM\nsleep 300 &\nwait\n')
    fake.chmod(0o755)
    script = tmp_path / "s.py"
    script.write_text("print(1)\n")
    r = subprocess.run([sys.executable, "-m", "core.cli", "record", "--python", "./python",
                        "--start-timeout", "3", "--out", str(tmp_path / "b"), str(script)],
                       cwd=str(tmp_path), capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("ptprof: ") and "did not start the script within 3 s" in lines[0]
    run = read_json(tmp_path / "b" / "run.json")
    assert run["status"] == "failed" and "did not start" in run["error"]
    assert run["python"] == str(fake) and run["stop_signals"] == ["SIGINT", "SIGKILL"]
    assert _left_over(-1, tmp_path / "b") == []


def test_killed_launcher_takes_multiprocessing_and_setsid_children_down(tmp_path):
    """kill -9 of `ptprof record`: the child notices, stops its own children (a non-daemon mp.Process it
    would otherwise join forever, a subprocess, a setsid daemon), flushes and marks run.json."""
    pids_file = tmp_path / "pids"
    script = _script(tmp_path, "spawner.py", CHILDREN)
    bundle = tmp_path / "b"
    proc = subprocess.Popen([sys.executable, "-m", "core.cli", "record", "--quiet", "--out", str(bundle),
                             "--wait", "0", "--active", "100000", str(script), "-1", "-1", str(pids_file)], cwd=str(REPO),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t0 = time.monotonic()
    def stepping() -> bool:  # children started and the window is recording (3 optimizer steps)
        events = bundle / "events.jsonl"
        return events.exists() and sum(e["type"] == "step" for e in read_events(str(events))) >= 3

    while not (pids_file.exists() and len(pids_file.read_text().split()) == 3 and stepping()):
        assert time.monotonic() - t0 < 120 and proc.poll() is None
        time.sleep(0.1)
    child = next(e["pid"] for e in read_events(str(bundle / "events.jsonl")) if e["type"] == "start")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    others = list(map(int, pids_file.read_text().split()))
    deadline = time.monotonic() + 90
    while any(_running(p) for p in [child, *others]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_running(p) for p in [child, *others]), [p for p in [child, *others] if _running(p)]
    assert _left_over(-1, bundle) == []
    run = json.loads((bundle / "run.json").read_text())
    assert run["status"] == "launcher_lost" and run["launcher_saw_end"] is False and run["exit_code"] == 130
    assert list((bundle / "traces").glob("*.pt.trace.json.gz")), "the window in progress was flushed"


def test_a_swallowed_stop_is_raised_again_at_the_next_step(tmp_path):
    """KeyboardInterrupt raised where Python ignores exceptions (a finalizer, a callback) or caught by a
    bare `except` used to keep the script training until SIGTERM: exit 143. Now the next optimizer step
    raises it again: a clean 130 with the window saved, SIGINT only."""
    prelude = """
import time
def hook(i):
    try:
        time.sleep(0.3)  # where the SIGINT lands (nearly all of an iteration)
    except KeyboardInterrupt:
        print("swallowed", flush=True)
"""
    script = _script(tmp_path, "swallow.py", prelude)
    s, events = _run(tmp_path, script, stop_when=_steps(5))
    assert "swallowed" in s.bundle.stdout_log.read_text()
    assert s.exit_code == 130 and s.proc.signals_sent == ["SIGINT"]
    assert s.bundle.trace_files()
    _assert_nothing_left(s)
