"""Background loading: superqt generator workers over core.trace.loader.iter_load, and the status-bar
progress widget (bar + Cancel) that shows them. Workers never touch widgets; results arrive as signals."""
from __future__ import annotations

import logging
from pathlib import Path

from PySide6 import QtCore
from superqt.utils import create_worker

from core.trace.loader import Progress, iter_load
from core.trace.model import TraceSet
from gui.load_process import ProcessLoad, error_reason, use_process, window_indexes
from gui.progress_widget import ProgressWidget  # noqa: F401 - its old home

log = logging.getLogger(__name__)


def _thread_gen(path: str):
    """iter_load, then the timeline indexes (so the first paint needs no sorting on the UI thread). The
    cache writes of the parsed files (with their indexes) come after: a small model's here, a big one's
    (`cache.ASYNC_MIN_BYTES`) queued until the window's after-open work is done (`cache.write_behind`,
    released by MainWindow through `lane.when_idle`): beside the indexes, the write's page faults and
    theirs contended (1.1 GB trace: first paint 1.6-3.1 s -> 1.3 s; 10 GB: indexes 2.5 -> 8 s). So are
    the indexes built for models opened from an entry that kept none (core/trace/index_store.py)."""
    from core.trace import index_cache
    parsed: list = []
    trace_set = yield from iter_load(path, deferred=parsed)
    yield Progress("indexing", 1.0, Path(path).name)
    indexes = window_indexes(trace_set)
    index_cache.keep(parsed, trace_set.models, indexes)
    return trace_set, indexes


class GeneratorJob(QtCore.QObject):
    """A superqt worker over a generator that yields Progress and returns a result.

    Emits exactly one of loaded / failed / cancelled. Subclasses say what to run (`gen_fn, args`) and
    how a result maps to `sig_job_loaded`'s two arguments (`_loaded_args`)."""

    sig_progress_changed = QtCore.Signal(str, float)  # (stage text, fraction 0..1)
    sig_job_loaded = QtCore.Signal(object, object)  # (result, extra) - see the subclass
    sig_job_failed = QtCore.Signal(str, str)  # (path, one-line reason)
    sig_job_cancelled = QtCore.Signal(str)  # path

    def __init__(self, path: str | Path, gen_fn, args: tuple, parent=None) -> None:
        super().__init__(parent)
        self.path = str(path)
        self._cancelled = False
        self.worker = create_worker(gen_fn, *args, _start_thread=False,
                                    _connect={"yielded": self._on_worker_yielded,
                                              "returned": self._on_worker_returned,
                                              "errored": self._on_worker_errored,
                                              "aborted": self._on_worker_aborted})

    def start(self) -> None:
        self.worker.start()

    def cancel(self) -> None:
        self._cancelled = True
        self.worker.quit()

    def _loaded_args(self, result) -> tuple:
        return result, None

    def _on_worker_yielded(self, prog: Progress) -> None:
        if prog.fraction < 0:
            return  # a heartbeat from the process loader
        detail = f" {prog.detail}" if prog.detail else ""
        self.sig_progress_changed.emit(f"{prog.stage}{detail}", float(prog.fraction))

    def _on_worker_returned(self, result) -> None:
        self.sig_job_loaded.emit(*self._loaded_args(result))

    def _on_worker_errored(self, exc: BaseException) -> None:
        log.info("load of %s failed: %r", self.path, exc)
        if self._cancelled:
            self.sig_job_cancelled.emit(self.path)  # stopped on purpose
            return
        self.sig_job_failed.emit(self.path, getattr(exc, "reason", None) or error_reason(exc))

    def _on_worker_aborted(self) -> None:
        self.sig_job_cancelled.emit(self.path)


class LoadJob(GeneratorJob):
    """Loads one trace path in a worker thread, or in a child process when the parse would hold the
    GIL for long (big inputs without the C scanner: `use_process`). `sig_job_loaded` carries
    (TraceSet, list[SliceIndex])."""

    def __init__(self, path: str | Path, parent=None, in_process: bool | None = None) -> None:
        path = str(path)
        self.in_process = use_process(path) if in_process is None else in_process
        self.process = ProcessLoad(path) if self.in_process else None
        gen_fn, args = (self.process.run, ()) if self.process is not None else (_thread_gen, (path,))
        super().__init__(path, gen_fn, args, parent)

    def cancel(self) -> None:
        super().cancel()
        if self.process is not None:
            self.process.stop()

    def _loaded_args(self, result) -> tuple:
        trace_set, indexes = result
        return trace_set, indexes


def describe_set(ts: TraceSet) -> str:
    c = ts.counts
    n, n_ranks = len(ts.models), len({m.rank for m in ts.models})
    # a run bundle's profiler cycles are traces of one rank: "2 traces", not "2 ranks"
    ranks = "" if n < 2 else (f"{n} ranks · " if n_ranks == n else f"{n} traces · ")
    return f"{ranks}{c.events:,} events · {c.kernels:,} kernels · loaded in {ts.load_s:.1f} s" + \
        (" (cache)" if ts.cache_hit else "")
