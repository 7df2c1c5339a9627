"""A child process in its own session, its output tee'd to logs, and stop escalation (Qt-free).

Stop = SIGINT to every process of the run (the child flushes its profiler), then SIGTERM, then SIGKILL.
The grace periods count the child's chances to answer, not wall time (`AnswerClock`): time before the
child is ready (its `launch` event: handlers installed; a SIGINT before that ends it with Python's
default 130), time its main thread waited for a CPU (run queue, /proc/PID/schedstat) and time it was
in disk sleep (paging in torch under memory pressure) do not count - a loaded machine is slow, not a
stuck script. SIGTERM comes after `sigint_grace_s` of such time without an answer; once the child has
answered ("stopping", relayed by the session) it gets `flush_grace_s` from its last sign of progress
(any event but a step: flushing, cycle, end), and after a SIGTERM that it took ("flushing") the same
grace before SIGKILL. Each signal reaches each process once (groups by killpg, the tree for the other
processes). When the leader exits, every process left in the run's tree
(core/runner/tree.py: DataLoader workers, torchrun ranks, subprocess / multiprocessing children,
setsid daemons) is killed, so no orphan survives a run. Only processes the launcher spawned, or that
descend from them, are ever signalled: pids read from events.jsonl are never trusted on their own.
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
from core.runner import tree as tree_mod

READ_BYTES = 1 << 16  # a line longer than this reaches the console in pieces
MAX_LINE_CHARS = 2000  # what the console queue keeps of one line (the log keeps everything)


@dataclass(frozen=True, slots=True)
class StopPlan:
    sigint_grace_s: float = 10.0  # time to write the trace after Ctrl-C / Stop
    sigterm_grace_s: float = 5.0
    flush_grace_s: float = 60.0  # extra time before SIGTERM once the child says it is stopping / writing its trace
    start_timeout_s: float = 60.0  # no event at all from the interpreter by then: it never ran our child

    def safety_cap_s(self) -> float:
        """Wall time after which a blocking stop gives up and SIGKILLs: only when the escalation clock
        itself stalled (it stretches with the load: 3x covers a child that gets a third of a core)."""
        return self.start_timeout_s + 3 * (self.sigint_grace_s + self.flush_grace_s + self.sigterm_grace_s) + 10


def _sched_wait_s(pid: int) -> tuple[float, bool] | None:
    """(seconds the main thread has waited on a run queue, whether it is in disk sleep) from /proc;
    None without /proc or once the process is gone."""
    try:
        with open(f"/proc/{pid}/schedstat", "rb") as fh:
            run_delay_ns = int(fh.read().split()[1])
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError, ValueError):
        return None
    return run_delay_ns / 1e9, state == b"D"


class AnswerClock:
    """Seconds in which the child could have answered a stop: wall time minus its main thread's run-queue
    wait, minus time in disk sleep; only counted while `running`."""

    def __init__(self, pid: int):
        self.pid = pid
        self.answer_s = 0.0
        self._last: tuple[float, float] | None = None  # (monotonic, run_delay_s) of the previous tick

    def tick(self, running: bool) -> float:
        now = time.monotonic()
        sample = _sched_wait_s(self.pid)
        delay_s, in_disk_sleep = sample if sample is not None else (0.0, False)
        if self._last is not None and running and not in_disk_sleep:
            wall_s = now - self._last[0]
            waited_s = max(0.0, delay_s - self._last[1]) if sample is not None else 0.0
            self.answer_s += max(0.0, wall_s - waited_s)
        self._last = (now, delay_s)
        return self.answer_s

    def restart(self) -> None:
        self.answer_s = 0.0


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
                 plan: StopPlan = StopPlan(), max_lines: int = 20_000, marker: str = "", await_ready: bool = False,
                 pass_fds: tuple[int, ...] = ()):
        self.argv = argv
        self.pass_fds = tuple(pass_fds)  # the run key's pipe (core/runner/auth.py)
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
        # the run's processes beyond our session (torchrun workers start in new sessions, scripts setsid):
        # followed through /proc from the child's pid; `marker` (KEY=VALUE in every descendant's
        # environment) recognises the orphans that are re-parented to us as their subreaper
        self.marker = marker.encode("utf-8", "surrogateescape")
        self.tree: tree_mod.RunTree | None = None
        self.ranks: set[int] = set()  # pids that sent a start event AND belong to the tree
        self.extra_groups: set[int] = set()  # without /proc: validated rank pids (their own groups)
        self.flushing = False  # set by the session when a rank reports it is writing its trace
        self._term_flush = False  # it reported flushing after our SIGTERM: the flush grace before SIGKILL
        self.acknowledged = False  # set by the session when the child says it is handling the stop
        self._tree_checked = 0.0
        # our child.py says when its stop handlers are in place (the session relays its `launch` event);
        # any other program is ready from the start
        self.ready = not await_ready
        self._clock: AnswerClock | None = None  # the stop's escalation clock (started by request_stop)
        self._answered = False  # the escalation clock was restarted at the child's answer
        self._term_clock_s: float | None = None  # clock reading when SIGTERM went out

    @property
    def groups(self) -> set[int]:
        return ({self.proc.pid} if self.proc else set()) | self.extra_groups

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def start(self) -> "ChildProcess":
        tree_mod.set_subreaper()  # orphans of the run come back to us, not to init (Linux)
        self.proc = subprocess.Popen(self.argv, cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                                     pass_fds=self.pass_fds)
        for name, pipe in (("stdout", self.proc.stdout), ("stderr", self.proc.stderr)):
            t = threading.Thread(target=self._pump, args=(name, pipe), name=f"ptprof-{name}", daemon=True)
            t.start()
            self._readers.append(t)
        self.tree = tree_mod.RunTree(self.proc.pid, self.marker)
        self.tree.refresh()
        return self

    def adopt_rank(self, pid) -> bool:
        """A start event named `pid`: kept only if it is one of the run's own processes."""
        if self.proc is None or not isinstance(pid, int) or isinstance(pid, bool) or pid <= 1 \
                or pid == os.getpid() or pid == self.proc.pid:
            return False
        if self.tree is not None and self.tree.enabled:
            if pid not in self.tree.refresh():
                return False
            self.ranks.add(pid)
            return True
        try:  # no /proc: a worker of torchrun leads its own group; never our own group
            if os.getpgid(pid) != pid or pid == os.getpgrp():
                return False
        except OSError:
            return False
        self.ranks.add(pid)
        self.extra_groups.add(pid)
        return True

    def pids(self) -> set[int]:
        """The run's running processes (for per-process GPU memory)."""
        if self.tree is not None and self.tree.enabled:
            return set(self.tree.running())
        return set().union(*(group_pids(g) for g in self.groups))

    def _ranks_running(self) -> bool:
        if self.tree is not None and self.tree.enabled:
            running = self.tree.running()
            return any(pid in running for pid in self.ranks)
        return any(group_running(g) for g in self.extra_groups)

    def mark_ready(self) -> None:
        self.ready = True

    def note_progress(self) -> None:
        """An event other than a step arrived after the stop (stopping, flushing, cycle, end): the child
        is working on it, the flush grace counts from here."""
        if self._clock is not None and (self.acknowledged or self.flushing) and "SIGTERM" not in self.signals_sent:
            self._clock.restart()
            self._answered = True

    def _pump(self, name: str, pipe) -> None:
        """Every byte goes to the log; the console queue gets lines cut at MAX_LINE_CHARS (a script that
        prints a 1 GB line, or megabytes without a newline, costs the launcher no more than that)."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        with open(os.open(self.logs[name], flags, 0o644), "wb") as log:  # never through a planted link
            for raw in iter(lambda: pipe.readline(READ_BYTES), b""):
                log.write(raw)
                log.flush()
                text = raw[:MAX_LINE_CHARS].decode("utf-8", "replace").rstrip("\r\n")
                if len(raw) > MAX_LINE_CHARS:
                    text += f" … (cut: the whole line is in {self.logs[name].name})"
                with self._lock:
                    self.lines.append((name, text))
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
            now = time.monotonic()
            if self.tree is not None and now - self._tree_checked >= 0.5:
                self._tree_checked = now  # follow the tree while parent links still exist
                self.tree.refresh()
            self._escalate()
            return None
        if "SIGKILL" not in self.signals_sent and self._ranks_running():
            # the launcher (torchrun's agent) is gone but ranks still run (flushing their traces after a
            # stop): let them finish under the same escalation; a crashed agent gets them stopped
            if self.stop_requested_at is None:
                self.request_stop()
            self._escalate()
            return None
        self._finish(code)
        return self.exit_code

    def _finish(self, code: int) -> None:
        self._kill_leftovers()
        for t in self._readers:  # every writer of the pipes is dead now: EOF comes (a loaded machine is slow)
            t.join(timeout=30)
        self.exit_code = code if code >= 0 else 128 - code  # -SIGKILL -> 137 like a shell

    def _kill_leftovers(self) -> None:
        """SIGKILL whatever is left of the run (DataLoader workers, torchrun ranks, subprocess /
        multiprocessing children, setsid daemons), then reap the orphans re-parented to us."""
        for pgid in self.groups:
            if group_alive(pgid):
                signal_group(pgid, signal.SIGKILL)
        if self.tree is None or not self.tree.enabled:
            return
        deadline = time.monotonic() + 5
        while self.tree.signal(signal.SIGKILL) and time.monotonic() < deadline:
            time.sleep(0.02)  # a parent killed mid-fork can leave a child we see only on the next pass
        self.tree.reap()

    def request_stop(self) -> None:
        if self.proc is None or self.exit_code is not None or self.stop_requested_at is not None:
            return
        self.stop_requested_at = time.monotonic()
        self._clock = AnswerClock(self.proc.pid)
        self._clock.tick(False)
        self._send(signal.SIGINT)

    def _send(self, sig: int) -> None:
        self.signals_sent.append(signal.Signals(sig).name)
        for pgid in self.groups:  # our own session's group, and without /proc the validated rank groups
            signal_group(pgid, sig)
        if self.tree is not None:  # everything below the child in other groups or sessions (once each)
            self.tree.signal(sig, skip_groups=self.groups)

    def _escalate(self) -> None:
        if self.stop_requested_at is None or self._clock is None:
            return
        if not self.ready and time.monotonic() - self.stop_requested_at >= self.plan.start_timeout_s:
            self.ready = True  # it never said it was ready: treat it as any program from here on
        answer_s = self._clock.tick(self.ready)
        if (self.acknowledged or self.flushing) and not self._answered:
            self._clock.restart()  # answered: the flush grace counts from the answer
            self._answered = True
            answer_s = 0.0
        if "SIGTERM" not in self.signals_sent:
            # a child that said it is stopping is making progress: a SIGTERM would cut the trace it writes
            grace = self.plan.flush_grace_s if self._answered else self.plan.sigint_grace_s
            if answer_s >= grace:
                self._send(signal.SIGTERM)
                self._term_clock_s = answer_s
        elif "SIGKILL" not in self.signals_sent:
            if self.flushing and not self._term_flush:
                # it took the SIGTERM and says it is writing its trace (a SIGINT-deaf script): the flush
                # grace, from now, before the SIGKILL that would lose the window
                self._term_flush = True
                self._term_clock_s = answer_s
            grace = self.plan.flush_grace_s if self._term_flush else self.plan.sigterm_grace_s
            if answer_s >= self._term_clock_s + grace:
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
        code = self.wait(self.plan.safety_cap_s())
        if code is None:
            self.kill()
            code = self.exit_code
        return code
