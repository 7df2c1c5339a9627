"""ChildProcess: own session, logs, stop escalation timing (plain Python children, no torch)."""
from __future__ import annotations

import sys
import time

from core.runner.process import ChildProcess, StopPlan

STUBBORN = ("import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); "
            "signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(60)")


def _start(tmp_path, code, plan):
    p = ChildProcess([sys.executable, "-c", code], str(tmp_path), {}, tmp_path / "out.log", tmp_path / "err.log",
                     plan).start()
    deadline = time.monotonic() + 10
    log = tmp_path / "out.log"
    while not (log.exists() and "ready" in log.read_text()):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return p


def test_flushing_child_gets_extra_time_before_sigterm(tmp_path):
    p = _start(tmp_path, STUBBORN, StopPlan(sigint_grace_s=0.2, sigterm_grace_s=0.2, flush_grace_s=0.8))
    p.flushing = True
    p.request_stop()
    t0 = time.monotonic()
    while time.monotonic() - t0 < 0.6:
        assert p.poll() is None
        time.sleep(0.02)
    assert p.signals_sent == ["SIGINT"]  # a plain plan would have sent SIGTERM at 0.2 s
    assert p.wait(5) == 137
    assert p.signals_sent == ["SIGINT", "SIGTERM", "SIGKILL"]


def test_output_lines_and_logs(tmp_path):
    p = ChildProcess([sys.executable, "-c", "import sys; print('a'); print('b', file=sys.stderr); sys.exit(3)"],
                     str(tmp_path), {}, tmp_path / "o.log", tmp_path / "e.log").start()
    assert p.wait(10) == 3
    assert sorted(p.take_lines()) == [("stderr", "b"), ("stdout", "a")]
    assert (tmp_path / "o.log").read_text() == "a\n" and (tmp_path / "e.log").read_text() == "b\n"
    assert p.take_lines() == []


def test_a_stop_signal_reaches_the_child_once(tmp_path, monkeypatch):
    """Stop signals the child's group and then the run's tree: the tree pass must skip what the group got.
    A second SIGINT handled after the first one (the machine under load) was a second stop, raised inside
    the child's flush: the window in progress was lost (seen in the 3-runs-under-load proof)."""
    import os
    import signal
    p = _start(tmp_path, STUBBORN, StopPlan())
    try:
        deadline = time.monotonic() + 10
        while p.proc.pid not in p.tree.running() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert p.proc.pid in p.tree.running()
        direct = []
        real_kill = os.kill
        monkeypatch.setattr(os, "kill", lambda pid, sig: (direct.append(pid), real_kill(pid, sig)))
        p._send(signal.SIGCONT)  # harmless; delivered like a stop signal
        assert p.proc.pid not in direct  # it had it from its group already
    finally:
        monkeypatch.undo()
        p.proc.kill()
        p.wait(10)
