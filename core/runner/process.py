"""A child process in its own process group, its output tee'd to logs, and stop escalation (Qt-free).

Stop = SIGINT to the group (the child flushes its profiler), then SIGTERM, then SIGKILL, each after a
grace period. When the leader exits, any process left in its group (DataLoader workers, torchrun
ranks) is killed, so no orphan survives a run.
"""
from __future__ import annotations

import collections
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from core.gpu.sampler import group_pids


@dataclass(frozen=True, slots=True)
class StopPlan:
    sigint_grace_s: float = 10.0  # time to write the trace after Ctrl-C / Stop
    sigterm_grace_s: float = 5.0
    flush_grace_s: float = 60.0  # extra time before SIGTERM while a rank says it is writing its trace


def signal_group(pgid: int, sig: int) -> bool:
    """Send `sig` to every process of the group; False when the group is gone."""
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def group_alive(pgid: int) -> bool:
    return signal_group(pgid, 0)


def group_running(pgid: int) -> bool:
    """A member of the group that has not exited (zombies waiting for a reaper do not count)."""
    if not Path("/proc").is_dir():
        return group_alive(pgid)
    return bool(group_pids(pgid, running_only=True))


class ChildProcess:
    """subprocess.Popen in a new session; stdout/stderr lines go to log files and a bounded queue."""

    def __init__(self, argv: list[str], cwd: str, env: dict, stdout_log: Path, stderr_log: Path,
                 plan: StopPlan = StopPlan(), max_lines: int = 20_000):
        self.argv = argv
        self.cwd = cwd
        self.env = env
        self.logs = {"stdout": Path(stdout_log), "stderr": Path(stderr_log)}
        self.plan = plan
        self.lines: collections.deque[tuple[str, str]] = collections.deque(maxlen=max_lines)
        self._lock = threading.Lock()
        self.proc: subprocess.Popen | None = None
        self._readers: list[threading.Thread] = []
        self.stop_requested_at: float | None = None
        self.signals_sent: list[str] = []
        self.exit_code: int | None = None
        # process groups besides ours: torchrun starts every worker in a new session (start_new_session),
        # so a stop must reach them by their own group ids (their pids, from the start events)
        self.extra_groups: set[int] = set()
        self.flushing = False  # set by the session when a rank reports it is writing its trace

    @property
    def groups(self) -> set[int]:
        return ({self.proc.pid} if self.proc else set()) | self.extra_groups

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def start(self) -> "ChildProcess":
        self.proc = subprocess.Popen(self.argv, cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        for name, pipe in (("stdout", self.proc.stdout), ("stderr", self.proc.stderr)):
            t = threading.Thread(target=self._pump, args=(name, pipe), name=f"ptprof-{name}", daemon=True)
            t.start()
            self._readers.append(t)
        return self

    def _pump(self, name: str, pipe) -> None:
        with open(self.logs[name], "wb") as log:
            for raw in iter(pipe.readline, b""):
                log.write(raw)
                log.flush()
                with self._lock:
                    self.lines.append((name, raw.decode("utf-8", "replace").rstrip("\r\n")))
        pipe.close()

    def take_lines(self) -> list[tuple[str, str]]:
        """(stream, text) lines since the last call."""
        with self._lock:
            out = list(self.lines)
            self.lines.clear()
        return out

    def poll(self) -> int | None:
        """Exit code once the leader has exited (and its group is cleaned up), else None. Escalates stops."""
        if self.proc is None:
            return None
        if self.exit_code is not None:
            return self.exit_code
        code = self.proc.poll()
        if code is None:
            self._escalate()
            return None
        if "SIGKILL" not in self.signals_sent and any(group_running(g) for g in self.extra_groups):
            # the launcher (torchrun's agent) is gone but ranks still run (flushing their traces after a
            # stop): let them finish under the same escalation; a crashed agent gets them stopped
            if self.stop_requested_at is None:
                self.request_stop()
            self._escalate()
            return None
        self._finish(code)
        return self.exit_code

    def _finish(self, code: int) -> None:
        for pgid in self.groups:  # leftovers (DataLoader workers, torchrun ranks): no orphans
            signal_group(pgid, signal.SIGKILL)
        for t in self._readers:
            t.join(timeout=2)
        self.exit_code = code if code >= 0 else 128 - code  # -SIGKILL -> 137 like a shell

    def request_stop(self) -> None:
        if self.proc is None or self.exit_code is not None or self.stop_requested_at is not None:
            return
        self.stop_requested_at = time.monotonic()
        self._send(signal.SIGINT)

    def _send(self, sig: int) -> None:
        self.signals_sent.append(signal.Signals(sig).name)
        for pgid in self.groups:
            signal_group(pgid, sig)

    def _escalate(self) -> None:
        if self.stop_requested_at is None:
            return
        waited = time.monotonic() - self.stop_requested_at
        grace = self.plan.sigint_grace_s + (self.plan.flush_grace_s if self.flushing else 0.0)
        if "SIGTERM" not in self.signals_sent and waited >= grace:
            self._send(signal.SIGTERM)
        elif "SIGKILL" not in self.signals_sent and waited >= grace + self.plan.sigterm_grace_s:
            self._send(signal.SIGKILL)

    def wait(self, timeout: float | None = None, tick_s: float = 0.05) -> int | None:
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            code = self.poll()
            if code is not None:
                return code
            if end is not None and time.monotonic() >= end:
                return None
            time.sleep(tick_s)

    def kill(self) -> None:
        """Immediate SIGKILL of the whole group (app exit with no time left)."""
        if self.proc is not None and self.exit_code is None:
            self._send(signal.SIGKILL)
            self.proc.wait(timeout=5)
            self._finish(self.proc.returncode)

    def stop_and_wait(self) -> int:
        """The full escalation, blocking: for the CLI and for closing the app."""
        self.request_stop()
        code = self.wait(self.plan.sigint_grace_s + self.plan.flush_grace_s + self.plan.sigterm_grace_s + 5)
        if code is None:
            self.kill()
            code = self.exit_code
        return code
