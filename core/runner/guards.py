"""What keeps a stop clean in the child (core/runner/child.py; stdlib only, it runs in the user's
interpreter): stop signals held while our hooks are inside the profiler, the launcher's death noticed
(watch thread + broken pipes), the script's output kept when the launcher's pipes are gone, and user
tracebacks without runner frames."""
from __future__ import annotations

import os
import runpy
import signal
import time
from pathlib import Path


class Terminated(SystemExit):
    """SIGTERM turned into an exception so `finally` blocks (and the profiler flush) run."""


class Signals:
    """Stop signals that arrive while one of our hooks is inside the profiler (prof.start/step) are held
    until the hook returns: a KeyboardInterrupt raised half-way through a profiler state transition
    would leave the cycle in progress unflushable."""
    depth = 0
    pending: int | None = None

    @classmethod
    def handle(cls, signum, frame):
        if cls.depth:
            cls.pending = signum
            return
        cls.raise_for(signum)

    @staticmethod
    def raise_for(signum):
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(128 + signum)

    @classmethod
    def release(cls):
        if cls.depth == 0 and cls.pending is not None:
            signum, cls.pending = cls.pending, None
            cls.raise_for(signum)


def on_sigterm(signum, frame):
    Signals.handle(signum, frame)



_RUNNER_FILES = {os.path.abspath(Path(__file__).with_name("child.py")), os.path.abspath(__file__),
                 os.path.abspath(Path(__file__).with_name("target.py")), os.path.abspath(runpy.__file__)}


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
    launcher = int(os.environ.get("PTPROF_LAUNCHER_PID", "0") or 0)
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
                self._file = open(self._path, "a", encoding="utf-8", errors="replace")
                Orphan.check()
        return self._file.write(text)

    def flush(self):
        try:
            (self._file or self._stream).flush()
        except (BrokenPipeError, ValueError, OSError):
            pass

    def __getattr__(self, name):
        return getattr(self._file or self._stream, name)
