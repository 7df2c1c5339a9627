"""Load a trace in a child process (no Qt here): without the C scanner the parsing holds the GIL for
seconds at a time on big traces, which would freeze the window if it ran in a thread of the GUI
process (see `use_process`).

The child runs core.trace.loader.iter_load and the timeline indexes and sends ("progress", stage,
fraction, detail) messages, then ("done", TraceSet, indexes) or ("error", path, reason) over a pipe.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import threading
from collections.abc import Generator
from pathlib import Path

from core.trace.loader import Progress

PROCESS_MIN_BYTES = 5 * 1024 * 1024  # inputs this big load in a child process (gpu_gpt_big.gz: 8.7 MB)
_POLL_S = 0.05


def input_bytes(path: str | Path) -> int:
    """Size on disk of what `path` would load (a file, or the trace files under a folder)."""
    p = Path(path)
    try:
        if p.is_file():
            return p.stat().st_size
        return sum(f.stat().st_size for f in p.rglob("*.json*") if f.is_file())
    except OSError:
        return 0


def _child(path: str, conn) -> None:
    import signal
    # an ignored SIGTERM survives exec: reset it, or Cancel would have to wait for the kill
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # the parent terminates this process once the model is sent: write the cache before, not in the background
    os.environ["PTPROF_CACHE_SYNC"] = "1"
    from core.trace import query
    from core.trace.loader import iter_load
    from core.trace.model import TraceParseError

    try:
        gen = iter_load(path)
        while True:
            try:
                p = next(gen)
            except StopIteration as stop:
                trace_set = stop.value
                break
            conn.send(("progress", p.stage, p.fraction, p.detail))
        conn.send(("progress", "indexing", 1.0, Path(path).name))
        indexes = [query.SliceIndex(m) for m in trace_set.models]
        conn.send(("done", trace_set, indexes))
    except TraceParseError as exc:
        conn.send(("error", exc.path, exc.reason))
    except BaseException as exc:  # noqa: BLE001 - everything becomes one line for the dialog
        conn.send(("error", path, error_reason(exc)))
    finally:
        conn.close()


def error_reason(exc: BaseException) -> str:
    """One line, fit for a user: the loader's reason, else the exception's own words."""
    from core.trace.model import TraceParseError
    if isinstance(exc, TraceParseError):
        return exc.reason
    if isinstance(exc, FileNotFoundError):
        return f"no such file or folder: {exc.filename or exc}"
    if isinstance(exc, PermissionError):
        return f"permission denied: {exc.filename or exc}"
    if isinstance(exc, MemoryError):
        return "not enough memory to load this trace"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


class ChildLoadError(Exception):
    def __init__(self, path: str, reason: str) -> None:
        super().__init__(reason)
        self.path, self.reason = path, reason


class ProcessLoad:
    """Owns one child process; `run()` is a generator of Progress returning (TraceSet, indexes)."""

    def __init__(self, path: str) -> None:
        self.path = path
        ctx = mp.get_context("spawn")  # never fork a process that runs Qt threads
        self._conn, child_conn = ctx.Pipe(duplex=False)
        self.proc = ctx.Process(target=_child, args=(path, child_conn), name="ptprof-load", daemon=False)
        self._child_conn = child_conn
        self._lock = threading.Lock()
        self._stopped = False

    def run(self) -> Generator[Progress, None, tuple]:
        with self._lock:
            if self._stopped:
                raise ChildLoadError(self.path, "cancelled")
            self.proc.start()
        self._child_conn.close()
        try:
            while True:
                if self._stopped:
                    raise ChildLoadError(self.path, "cancelled")
                if not self._conn.poll(_POLL_S):
                    if not self.proc.is_alive() and not self._conn.poll(0):
                        raise ChildLoadError(self.path, f"the loader process died (exit code {self.proc.exitcode})")
                    yield Progress("loading", -1.0, "")  # lets the worker notice a cancel
                    continue
                msg = self._conn.recv()
                if msg[0] == "progress":
                    yield Progress(msg[1], msg[2], msg[3])
                elif msg[0] == "done":
                    return msg[1], msg[2]
                else:
                    raise ChildLoadError(msg[1], msg[2])
        finally:
            self.stop()
            self._conn.close()  # only the worker thread that reads the pipe closes it

    def stop(self) -> None:
        """Terminate the child (any thread). The reader then sees EOF and ends."""
        with self._lock:
            self._stopped = True
            if self.proc.pid is not None and self.proc.is_alive():
                self.proc.terminate()
                self.proc.join(2)
                if self.proc.is_alive():  # deaf to SIGTERM (or stuck in C): no load is worth a hang
                    self.proc.kill()
                    self.proc.join(2)


def use_process(path: str | Path) -> bool:
    """Whether `path` loads in a child process rather than a thread of the GUI process.

    With the C scanner (core/trace/_scan.c) the decode runs without the GIL, so a thread is both
    quicker (no spawn, no pickled model: gpu_gpt_big 0.4 s vs 0.7 s, the 833 MB trace 2.2 s vs 5.3 s)
    and smooth (longest UI gap 25 / 50 ms). Without it the msgspec path holds the GIL for seconds
    on big inputs, which would freeze the window: those go to a child process."""
    if os.environ.get("PTPROF_LOAD_IN_THREAD"):
        return False
    if os.environ.get("PTPROF_LOAD_IN_PROCESS"):
        return True
    from core.trace.columns import scan_available
    if scan_available():
        return False
    return input_bytes(path) >= PROCESS_MIN_BYTES
