"""What keeps a stop clean in the child (core/runner/child.py; stdlib only, it runs in the user's
interpreter): stop signals held while our hooks are inside the profiler, the launcher's death noticed
(watch thread + broken pipes), the script's output kept when the launcher's pipes are gone, and user
tracebacks without runner frames."""
from __future__ import annotations

import os
import runpy
import signal
import threading
import time
from pathlib import Path

TORCHRUN = "TORCHELASTIC_RUN_ID" in os.environ  # a rank started by torchrun's agent


class Terminated(SystemExit):
    """SIGTERM turned into an exception so `finally` blocks (and the profiler flush) run."""


class WindowDone(BaseException):
    """`--stop-after-window`: raised from the step hook in the script's main thread once the last trace cycle
    is saved. A BaseException of ptprof's own: a script's `except KeyboardInterrupt` (checkpoint-and-exit
    handlers) and `except Exception` do not catch it, its `finally` blocks still run; the run ends with 0."""

    message = "the last trace cycle is saved: the script was ended at that step (--stop-after-window)"


class Signals:
    """Stop signals that arrive while one of our hooks is inside the profiler (prof.start/step) are held
    until the hook returns: a KeyboardInterrupt raised half-way through a profiler state transition
    would leave the cycle in progress unflushable.

    A stop that was raised but swallowed (KeyboardInterrupt raised inside a finalizer or a callback
    that ignores exceptions - "Exception ignored in ..." - or a bare `except:` in the script) is
    raised again at our next hook, i.e. the next optimizer step: a Stop that does not stop would be
    escalated to SIGTERM and end the run as exit 143 instead of a clean 130."""
    depth = 0
    pending: int | None = None
    raised: int | None = None  # the stop signal already raised once
    acknowledge = None  # callable(signum): tells the launcher at once that the stop is being handled
    owner = 0  # the process that set it (a forked child of the script inherits the class, not the role)
    flushing = False  # child.py is writing the window in progress (stop signals are ignored meanwhile)

    _ack_lock = threading.Lock()

    @classmethod
    def on_first_stop(cls, callback) -> None:
        cls.acknowledge, cls.owner = callback, os.getpid()

    @classmethod
    def answer(cls, signum) -> None:
        """Tell the launcher once that the stop is being handled (from the handler or the wake-up thread)."""
        with cls._ack_lock:
            ack, cls.acknowledge = cls.acknowledge, None
        if ack is not None and os.getpid() == cls.owner:
            try:
                ack(signum)
            except Exception:
                pass

    @classmethod
    def watch_wakeups(cls) -> bool:
        """Answer a stop as soon as the signal arrives, not when the main thread next runs Python code
        (it can sit for seconds in one C call - a trace export, an import - on a loaded machine, and an
        unanswered stop is escalated to SIGTERM): the C-level handler writes the signal number into a
        wake-up pipe that a thread reads. False when not possible (no pipe, not the main thread)."""
        try:
            read_fd, write_fd = os.pipe()
            os.set_blocking(write_fd, False)
            signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
        except (OSError, ValueError, AttributeError):
            return False

        def reader():
            while True:
                try:
                    data = os.read(read_fd, 64)
                except OSError:
                    return
                if not data:
                    return
                for signum in data:
                    if signum in (signal.SIGINT, signal.SIGTERM) and \
                            signal.getsignal(signum) in (cls.handle, on_sigterm):
                        cls.answer(signum)

        def forked():  # a fork (multiprocessing, DataLoader workers) must not write into our pipe
            try:
                signal.set_wakeup_fd(-1)
            except (ValueError, OSError):
                pass
        os.register_at_fork(after_in_child=forked)
        threading.Thread(target=reader, name="ptprof-stop-answer", daemon=True).start()
        return True

    @classmethod
    def handle(cls, signum, frame):
        if signum == cls.raised == signal.SIGINT:
            # the stop is already raised (the launcher escalates by SIGTERM / SIGKILL, a second Ctrl-C
            # of `ptprof record` by SIGKILL): a repeat SIGINT must not cut the flush that follows it
            return
        cls.answer(signum)  # once: the first stop signal
        if signum == signal.SIGTERM and signal.SIGINT in (cls.raised, cls.pending) and TORCHRUN:
            return  # torchrun's agent relays our SIGINT as SIGTERM: the SIGINT stop is already under way
        if cls.depth:
            cls.pending = signum
            return
        cls.raise_for(signum)

    @classmethod
    def raise_for(cls, signum):
        cls.raised = signum
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(128 + signum)

    @classmethod
    def release(cls):
        if cls.depth:
            return
        if cls.pending is not None:
            signum, cls.pending = cls.pending, None
            cls.raise_for(signum)
        if cls.raised is not None:  # still training after the stop was raised: it was swallowed
            cls.raise_for(cls.raised)


def on_sigterm(signum, frame):
    Signals.handle(signum, frame)



_RUNNER_FILES = {os.path.abspath(Path(__file__).with_name("child.py")), os.path.abspath(__file__),
                 os.path.abspath(Path(__file__).with_name("target.py")), os.path.abspath(runpy.__file__),
                 os.path.abspath(Path(__file__).with_name("start.py"))}


def user_frames(tb):
    """The traceback from the first frame that is not the runner's or runpy's: users see their own
    code first, as with `python script.py`."""
    def ours(frame) -> bool:
        name = frame.f_code.co_filename
        return name == "<frozen runpy>" or os.path.abspath(name) in _RUNNER_FILES or \
            frame.f_globals.get("__name__") == "runpy"
    while tb is not None and ours(tb.tb_frame):
        tb = tb.tb_next
    return tb


class Orphan:
    """The launcher (GUI or `ptprof record`) died without stopping us (killed, crashed): stop as if
    Stop was pressed, so the window in progress is flushed and no orphan keeps training. Noticed by
    a watch thread, or at once by the first write into the launcher's broken stdout/stderr pipe."""
    parent = os.getppid()
    # under torchrun our parent is the torchrun agent, which outlives a killed launcher: the launcher
    # says who it is (core/runner/launch.py build_env)
    try:
        launcher = int(os.environ.get("PTPROF_LAUNCHER_PID", "0") or 0)
    except ValueError:  # not ours to trust: no launcher to watch
        launcher = 0
    stopped = False

    @classmethod
    def check(cls) -> bool:
        if cls.stopped:
            return True
        if os.getppid() != cls.parent or (cls.launcher > 0 and not _alive(cls.launcher)):
            cls.stopped = True
            os.kill(os.getpid(), signal.SIGINT)
        return cls.stopped

    @classmethod
    def watch(cls) -> None:
        while not cls.check():
            time.sleep(0.5)
        # nobody else will stop the script's own children now (subprocess / multiprocessing / setsid):
        # the launcher's escalation, for them; a non-daemon multiprocessing child would otherwise
        # keep us joining it at exit forever
        threading.Thread(target=stop_descendants, name="ptprof-orphan-children", daemon=True).start()
        stop_self()


def _answer_s_clock():
    """Seconds this process's main thread could run since the first call: wall time minus its run-queue
    wait (/proc/self/schedstat; a loaded machine delays, it does not stall, a stop)."""
    def delay_s() -> float:
        try:
            with open(f"/proc/{os.getpid()}/schedstat", "rb") as fh:
                return int(fh.read().split()[1]) / 1e9
        except (OSError, IndexError, ValueError):
            return 0.0
    t0, d0 = time.monotonic(), delay_s()
    return lambda: max(0.0, time.monotonic() - t0 - (delay_s() - d0))


def stop_self(escalation=None, flush_grace_s: float | None = None) -> None:
    """The launcher died and its SIGINT reached a script that ignores it (SIG_IGN, a bare `except`
    around a sleep): nobody would ever escalate, so we do it ourselves - SIGTERM, then SIGKILL (run.json
    marked first), on the clock of our chances to answer; a flush in progress (Signals.flushing) gets
    `flush_grace_s` more before anything is sent. The graces are the launcher's own (its stop plan,
    PTPROF_STOP_PLAN), so a dead launcher's run stops on the schedule a live one would have kept."""
    plan_escalation, plan_flush_s = orphan_plan()
    escalation = escalation or plan_escalation
    flush_grace_s = plan_flush_s if flush_grace_s is None else flush_grace_s
    clock = _answer_s_clock()
    for at_s, sig in escalation[1:]:
        while True:
            waited_s = clock()
            if waited_s >= at_s + (flush_grace_s if Signals.flushing else 0.0):
                break
            time.sleep(0.2)
        if sig == signal.SIGKILL and _is_rank0():
            mark_orphaned(Path(os.environ["PTPROF_BUNDLE"]), 128 + sig)  # nobody else will say it
        try:
            os.kill(os.getpid(), sig)
        except OSError:
            pass


def _is_rank0() -> bool:
    return os.environ.get("RANK", "0") == "0" and bool(os.environ.get("PTPROF_BUNDLE"))


# SIGINT, then SIGTERM, then SIGKILL to the run's other processes after the launcher died (seconds)
ORPHAN_ESCALATION_S = ((0.0, signal.SIGINT), (10.0, signal.SIGTERM), (15.0, signal.SIGKILL))
ORPHAN_FLUSH_GRACE_S = 60.0


def orphan_plan(env=None) -> tuple[tuple[tuple[float, int], ...], float]:
    """(escalation, flush grace) from the launcher's stop plan - PTPROF_STOP_PLAN="SIGINT grace,SIGTERM
    grace,flush grace" in seconds (core/runner/launch.py build_env) - or the defaults when it is absent
    or not three finite non-negative numbers."""
    raw = (os.environ if env is None else env).get("PTPROF_STOP_PLAN", "")
    try:
        sigint_s, sigterm_s, flush_s = (float(x) for x in raw.split(","))
    except ValueError:
        return ORPHAN_ESCALATION_S, ORPHAN_FLUSH_GRACE_S
    if not all(0.0 <= v < 1e6 for v in (sigint_s, sigterm_s, flush_s)):  # also refuses nan
        return ORPHAN_ESCALATION_S, ORPHAN_FLUSH_GRACE_S
    return ((0.0, signal.SIGINT), (sigint_s, signal.SIGTERM), (sigint_s + sigterm_s, signal.SIGKILL)), flush_s


def run_processes() -> set[int]:
    """Other processes of this run (Linux /proc): descendants of this process, and orphans that carry
    the run's environment (PTPROF_BUNDLE, PTPROF_LAUNCHER_PID) - never a torchrun rank (a pid of a
    start event: they stop themselves), the torchrun agent, or an ancestor."""
    me = os.getpid()
    bundle = os.environ.get("PTPROF_BUNDLE", "")
    marker = [f"PTPROF_BUNDLE={bundle}".encode(),
              f"PTPROF_LAUNCHER_PID={os.environ.get('PTPROF_LAUNCHER_PID', '')}".encode()]
    ranks = _rank_pids(Path(bundle) / "events.jsonl") if bundle else set()
    parents, ours = {}, set()
    try:
        names = [int(n) for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return set()
    for pid in names:
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                parents[pid] = int(fh.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    ancestors, pid = set(), me
    while pid in parents and pid not in ancestors:
        ancestors.add(pid)
        pid = parents[pid]
    for pid in parents:
        if pid in ancestors:
            continue
        up, seen = pid, set()
        while up in parents and up not in seen and up != me:
            seen.add(up)
            up = parents[up]
        if up == me:
            ours.add(pid)
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                env = fh.read().split(b"\0")
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmd = fh.read()
        except OSError:
            continue
        if all(m in env for m in marker) and pid not in ranks and b"torch.distributed.run" not in cmd:
            ours.add(pid)
    return ours


def _rank_pids(events: Path) -> set[int]:
    """pids of the run's ranks (their launch / start events); only ever used to spare a process."""
    import json
    out = set()
    try:
        if events.is_symlink() or not events.is_file():
            return out
        with open(events, "rb") as fh:
            for line in fh:
                if b'"launch"' in line or b'"start"' in line:
                    try:
                        pid = json.loads(line).get("pid")
                    except (ValueError, RecursionError, AttributeError):
                        continue
                    if isinstance(pid, int):
                        out.add(pid)
    except OSError:
        pass
    return out


def stop_descendants(escalation=None) -> None:
    escalation = escalation or orphan_plan()[0]
    t0 = time.monotonic()
    for at_s, sig in escalation:
        while time.monotonic() - t0 < at_s:
            if not run_processes():
                return
            time.sleep(0.2)
        for pid in run_processes():
            try:
                os.kill(pid, sig)
            except OSError:
                pass


def mark_orphaned(bundle: Path, exit_code: int) -> None:
    """run.json says what the dead launcher could not: the run ended without it (atomic rewrite)."""
    path = Path(bundle) / "run.json"
    try:
        import json
        data = json.loads(path.read_text())
        if not isinstance(data, dict) or data.get("status") != "running":
            return
        data.update(status="launcher_lost", exit_code=exit_code, launcher_saw_end=False,
                    ended_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        tmp = path.with_name(f".run.json.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        with os.fdopen(fd, "w") as fh:
            fh.write(json.dumps(data, indent=1))
        os.replace(tmp, path)
    except (OSError, ValueError, RecursionError):
        pass


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie (a killed launcher stays one until its parent reaps it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True  # no /proc (macOS): kill(0) said it exists


class LogFallback:
    """sys.stdout / sys.stderr of the script: while the launcher reads the pipe, writes go there; once
    the pipe is broken (launcher gone) they go on into the bundle's log file instead of raising
    BrokenPipeError in the user's print() - which would turn a clean stop into a crash."""

    def __init__(self, stream, path: Path):
        self._stream, self._path, self._file = stream, path, None

    def write(self, text):
        if self._file is None:
            try:
                return self._stream.write(text)
            except (BrokenPipeError, ValueError, OSError):
                fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
                self._file = open(fd, "a", encoding="utf-8", errors="replace")
                Orphan.check()
        return self._file.write(text)

    def flush(self):
        try:
            (self._file or self._stream).flush()
        except (BrokenPipeError, ValueError, OSError):
            pass

    def __getattr__(self, name):
        return getattr(self._file or self._stream, name)
