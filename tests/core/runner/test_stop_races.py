"""Stops that race the child's startup and a launcher that dies by SIGTERM (issue 13: flaky under load).
Event-driven: every wait is for an event or a process state, with generous limits, never on wall time."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from runner_scripts import TRAIN, write

from core.gpu.backend import NoGpu
from core.runner.config import RunConfig, Schedule, validate
from core.runner.process import StopPlan
from core.runner.protocol import read_events
from core.runner.session import RunSession

REPO = Path(__file__).resolve().parents[3]

from helpers import no_torch_skip  # noqa: E402

pytestmark = [pytest.mark.needs_torch, no_torch_skip]


def _session(tmp_path, plan, script_text=TRAIN, args=("-1",)):
    script = write(tmp_path, "forever.py", script_text)
    cfg = validate(RunConfig(script=str(script), args=tuple(args), schedule=Schedule(0, 1, 100_000, 1),
                             out_dir=str(tmp_path / "bundle"), nvml_hz=5))
    return RunSession(cfg, backend=NoGpu("test"), plan=plan).start()


def _until_finished(s, stop_when, timeout_s=300):
    events = []
    t0 = time.monotonic()
    while not s.finished:
        events += s.poll().events
        if not s.stopping_requested and stop_when(events):
            s.request_stop()
        assert time.monotonic() - t0 < timeout_s, "run did not finish"
        time.sleep(0.02)
    return events


def test_a_stop_during_the_torch_import_is_a_clean_130_even_with_a_short_grace(tmp_path):
    """Stop right at the `launch` event: the SIGINT lands while the child imports torch (seconds under
    load). Before, nobody answered it (the answer was set up after the import) and a short grace
    escalated to SIGTERM: 143. Now the wake-up thread answers at once and the import's
    KeyboardInterrupt ends the child with 130."""
    s = _session(tmp_path, StopPlan(sigint_grace_s=0.3, sigterm_grace_s=0.3))
    events = _until_finished(s, lambda ev: any(e["type"] == "launch" for e in ev))
    assert s.exit_code == 130, events
    assert s.proc.signals_sent == ["SIGINT"]
    assert any(e["type"] == "notice" and e.get("code") == "stopping" for e in events)


def test_a_stop_in_the_training_loop_with_a_short_grace_stays_sigint_only(tmp_path):
    """The child answers from its wake-up thread; the launcher then waits for progress (flushing, cycle,
    end), however slow the machine: a short sigint grace is not a SIGTERM for a child that answered."""
    s = _session(tmp_path, StopPlan(sigint_grace_s=0.3, sigterm_grace_s=0.3))
    _until_finished(s, lambda ev: sum(e["type"] == "step" for e in ev) >= 4)
    assert s.exit_code == 130 and s.proc.signals_sent == ["SIGINT"]
    assert s.bundle.trace_files(), "the window in progress was flushed"


def test_a_launcher_started_with_sigint_ignored_still_stops_cleanly(tmp_path):
    """`ptprof record ... &` from a script: a shell without job control starts background jobs with
    SIGINT ignored, and the child inherited it, so Stop's SIGINT went nowhere (SIGTERM after the grace,
    143). The child takes SIGINT back: a clean 130 with the window flushed."""
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:  # the child is forked while this process ignores SIGINT
        s = _session(tmp_path, StopPlan(sigint_grace_s=30, sigterm_grace_s=30))
    finally:
        signal.signal(signal.SIGINT, old)
    events = _until_finished(s, lambda ev: sum(e["type"] == "step" for e in ev) >= 4)
    assert s.exit_code == 130 and s.proc.signals_sent == ["SIGINT"], events[-5:]
    assert s.bundle.trace_files(), "the window in progress was flushed"


LAUNCHER = """
import sys, time
sys.path.insert(0, {repo!r})
from core.runner.config import RunConfig, Schedule, validate
from core.runner.session import RunSession
from core.runner.process import StopPlan
from core.gpu.backend import NoGpu
cfg = validate(RunConfig(script={script!r}, args=("-1",), schedule=Schedule(0, 1, {active}, 1),
                         out_dir={bundle!r}, nvml_hz=5))
s = RunSession(cfg, backend=NoGpu("test"), plan=StopPlan(**{plan!r})).start()
while not s.finished:
    s.poll()
    time.sleep(0.05)
"""


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc")
@pytest.mark.parametrize("launcher_signal", [signal.SIGTERM, signal.SIGKILL])
def test_a_child_whose_launcher_died_stops_by_itself(tmp_path, launcher_signal):
    """The launcher (a RunSession in another process, like the GUI or pytest) dies by SIGTERM (no
    handler: it stops nothing) or SIGKILL while the script trains: the child notices, flushes its
    window, marks run.json and exits 130 on its own."""
    script = write(tmp_path, "forever.py", TRAIN)
    bundle = tmp_path / "bundle"
    code = textwrap.dedent(LAUNCHER).format(repo=str(REPO), script=str(script), bundle=str(bundle), active=100_000,
                                      plan={})
    launcher = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    events_file = bundle / "events.jsonl"
    t0 = time.monotonic()
    while not (events_file.exists() and sum(e["type"] == "step" for e in read_events(str(events_file))) >= 3):
        assert launcher.poll() is None and time.monotonic() - t0 < 240
        time.sleep(0.1)
    child = next(e["pid"] for e in read_events(str(events_file)) if e["type"] == "start")
    launcher.send_signal(launcher_signal)
    launcher.wait(timeout=60)
    deadline = time.monotonic() + 120  # a few seconds idle; generous for a loaded machine
    while _running(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running(child), "the child outlived its launcher"
    run = json.loads((bundle / "run.json").read_text())
    assert run["status"] == "launcher_lost" and run["exit_code"] == 130
    assert list((bundle / "traces").glob("*.pt.trace.json.gz")), "the window in progress was flushed"


DEAF = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n" + TRAIN


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc")
def test_a_script_deaf_to_sigint_stops_when_its_launcher_died(tmp_path):
    """The launcher dies by SIGTERM; the child's own SIGINT is ignored by the script: before, it trained
    on forever as an orphan. Now the child escalates on itself (SIGTERM: our handler, exit 143, the
    window flushed) and marks run.json."""
    script = write(tmp_path, "deaf.py", DEAF)
    bundle = tmp_path / "bundle"
    # a short window, saved before the launcher dies: a deaf script trains on for the launcher's SIGINT
    # grace (its answer clock) after the SIGINT, and an open 100,000-step window would grow a trace
    # meanwhile. The child escalates on the dead launcher's own graces (PTPROF_STOP_PLAN): 2 s here,
    # where the default 10 s made this the suite's longest wait
    code = textwrap.dedent(LAUNCHER).format(repo=str(REPO), script=str(script), bundle=str(bundle), active=3,
                                            plan=dict(sigint_grace_s=2.0, sigterm_grace_s=2.0))
    launcher = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    events_file = bundle / "events.jsonl"
    t0 = time.monotonic()
    while not (events_file.exists() and any(e["type"] == "cycle" for e in read_events(str(events_file)))):
        assert launcher.poll() is None and time.monotonic() - t0 < 240
        time.sleep(0.1)
    child = next(e["pid"] for e in read_events(str(events_file)) if e["type"] == "start")
    launcher.send_signal(signal.SIGTERM)
    launcher.wait(timeout=60)
    deadline = time.monotonic() + 240
    while _running(child) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _running(child), "the deaf child outlived its launcher"
    run = json.loads((bundle / "run.json").read_text())
    assert run["status"] == "launcher_lost" and run["exit_code"] == 143
    assert list((bundle / "traces").glob("*.pt.trace.json.gz")), "the saved window is kept"
