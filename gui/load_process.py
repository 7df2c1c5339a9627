"""Load a trace in a child process (no Qt here): without the C scanner the parsing holds the GIL for
seconds at a time on big traces, which would freeze the window if it ran in a thread of the GUI
process; with it, multi-GB inputs still hold the GIL in numpy steps over tens of millions of rows
and peak at ~6 GB that the window would keep (see `use_process`).

The child runs core.trace.loader.iter_load and sends ("progress", stage, fraction, detail) messages,
then one of:
- ("cached",): every file's model is in the column cache (written by the child before it says so):
  the parent opens them memory-mapped (`iter_load` again, all cache hits: no pickling, no copy, and
  the parent's RSS grows only with the pages it reads) and builds the timeline indexes itself;
- ("done", TraceSet, indexes): the cache is off or could not hold the entry: the model is pickled;
- ("error", path, reason).
"""
from __future__ import annotations

import multiprocessing as mp
import os
import threading
from collections.abc import Generator
from pathlib import Path

from core.blas import one_blas_thread

one_blas_thread()  # in the spawned loader child, before numpy's first import (no-op in the window)

from core.trace.loader import Progress  # noqa: E402

PROCESS_MIN_BYTES = 64 << 20  # inputs this big (inflated) load in a child process (gpu_gpt_big: 136 MB of JSON)
# with the scanner, inputs this big still load in a child process handing its model over through the
# cache: the 10 GB trace held the GIL up to 340 ms at a time and kept a ~6 GB heap in a thread
SCANNED_PROCESS_MIN_BYTES = 2 << 30
_POLL_S = 0.05


# a compressed trace's inflated size when its header cannot tell (real Kineto JSON: 10-25x gzip, ~20x xz)
GZ_RATIO_FLOOR = 8
XZ_RATIO_FLOOR = 16


def inflated_bytes(f: Path) -> int:
    """What one trace file decompresses to, estimated: the gzip trailer's size (mod 2^32, so never below
    GZ_RATIO_FLOOR x the file), XZ_RATIO_FLOOR x an .xz, the file's size otherwise."""
    size = f.stat().st_size
    name = f.name.lower()
    if name.endswith((".gz", ".gzip")):
        from core.trace.io import isize
        return max(isize(f) or 0, GZ_RATIO_FLOOR * size)
    if name.endswith(".xz"):
        return XZ_RATIO_FLOOR * size
    return size


def input_bytes(path: str | Path) -> int:
    """Inflated size of what `path` would load (a file, or the trace files under a folder): what the load
    costs, not the bytes on disk (1.65 GB of .gz is 17.5 GB of JSON, which loaded in the window's own process)."""
    p = Path(path)
    try:
        if p.is_file():
            return inflated_bytes(p)
        return sum(inflated_bytes(f) for f in p.rglob("*.json*") if f.is_file())
    except OSError:
        return 0


LOADER_NICE = 5


def _child(path: str, conn) -> None:
    import signal
    # an ignored SIGTERM survives exec: reset it, or Cancel would have to wait for the kill
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # the parent terminates this process once the model is sent: write the cache before, not in the background
    os.environ["PTPROF_CACHE_SYNC"] = "1"
    # a background loader: its scan threads take both cores, and at equal priority the window waited
    # for a core (100-180 ms UI gaps while a 10 GB trace loaded); a lower priority gives it one at once
    try:
        os.nice(LOADER_NICE)
    except (AttributeError, OSError):
        pass
    from core.trace.alloc import single_arena
    single_arena()  # no UI thread in this process (see core/trace/alloc.py)
    from core.trace import index_cache
    from core.trace.loader import iter_load
    from core.trace.model import TraceParseError

    try:
        gen = iter_load(path)  # writes each parsed model's cache entry as it goes (in line: PTPROF_CACHE_SYNC)
        while True:
            try:
                p = next(gen)
            except StopIteration as stop:
                trace_set = stop.value
                break
            conn.send(("progress", p.stage, p.fraction, p.detail))
        if any(_index_missing(m) for m in trace_set.models):
            conn.send(("progress", "indexing", 1.0, Path(path).name))
            _add_indexes(trace_set)
        if _all_cached(path, trace_set):
            del trace_set
            conn.send(("cached",))
            return
        conn.send(("progress", "indexing", 1.0, Path(path).name))
        indexes = index_cache.view_indexes(trace_set)
        conn.send(("done", trace_set, indexes))
    except TraceParseError as exc:
        conn.send(("error", exc.path, exc.reason))
    except BaseException as exc:  # noqa: BLE001 - everything becomes one line for the dialog
        conn.send(("error", path, error_reason(exc)))
    finally:
        conn.close()


def _index_missing(model) -> bool:
    """A big model whose cache entry keeps no timeline index yet (core/trace/index_store.py)."""
    from core.trace import cache, index_store
    entry = cache.entry_of(model)
    return entry is not None and index_store.worth_storing(model) and not index_store.has_index(entry)


def _add_indexes(trace_set) -> None:
    """Build and add the timeline index of each big model whose entry has none: the window then maps it
    (a reopen of the 10 GB trace built its 37M-slice index for ~2 s in the window)."""
    from core.trace import cache, query
    for m in trace_set.models:
        if _index_missing(m):
            cache.add_index(m, query.SliceIndex(m))


def _all_cached(path: str, trace_set) -> bool:
    """Whether the parent can open every model of `trace_set` from the cache (written synchronously
    by this child): each model's source has an entry and no file of the set failed to load (the
    parent would try it again in its own process)."""
    from core.trace import cache, io
    if cache.cache_dir() is None or any("not loaded (" in w for w in trace_set.warnings):
        return False
    try:
        sources = io.discover(path).sources
    except Exception:  # noqa: BLE001 - anything odd: send the model itself
        return False
    return len(sources) == len(trace_set.models) and all(cache.has_entry(src.path) for src in sources)


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
        """Progress while the child loads, then (TraceSet, indexes): sent by the child, or opened from
        the cache it wrote (memory-mapped) with the indexes built in this thread."""
        result = yield from self._receive()
        if result is not None:
            return result
        from core.trace.loader import iter_load
        yield Progress("opening", 0.95, Path(self.path).name)
        trace_set = yield from iter_load(self.path)  # cache hits: mmap, nothing parsed
        yield Progress("indexing", 1.0, Path(self.path).name)
        indexes = window_indexes(trace_set)  # the child's kept indexes, mapped (else built here)
        from core.trace import index_cache
        index_cache.keep([], trace_set.models, indexes)  # one it could not keep (or a bad one)
        return trace_set, indexes

    def _receive(self) -> Generator[Progress, None, tuple | None]:
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
                elif msg[0] == "cached":
                    return None
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
    on big inputs, which would freeze the window: those go to a child process. So do multi-GB
    inputs with it (SCANNED_PROCESS_MIN_BYTES): numpy steps over tens of millions of rows hold the
    GIL for 100-300 ms, and the load's heap would stay with the window; the child hands the model
    over through the cache (memory-mapped here)."""
    if os.environ.get("PTPROF_LOAD_IN_THREAD"):
        return False
    if os.environ.get("PTPROF_LOAD_IN_PROCESS"):
        return True
    from core.trace.columns import scan_available
    size = input_bytes(path)
    if scan_available():
        return size >= SCANNED_PROCESS_MIN_BYTES
    return size >= PROCESS_MIN_BYTES


def window_indexes(trace_set) -> list:
    """In the load worker, what the window needs before its first paint: `index_cache.view_indexes`, the kind
    histogram the legend reads and the memory series the plots and counter rows draw (memoised on the
    model: passes over every slice / memory event, 0.1-0.2 s each at 37M slices, on the UI thread before)."""
    from core.analysis import rows
    from core.analysis.memory import memory_series
    from core.trace import index_cache
    indexes = index_cache.view_indexes(trace_set)
    for m in trace_set.models:
        rows.kind_counts(m)
        if not memory_series(m):  # the window falls back to the host allocator's series only then
            memory_series(m, include_cpu=True)
    return indexes
