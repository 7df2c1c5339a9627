"""CompareJob: both runs load in parallel workers (LoadJob each), then one worker analyses both and
computes the diff. Progress and cancel like a load; widgets are never touched from a worker."""
from __future__ import annotations

from pathlib import Path

from PySide6 import QtCore
from superqt.utils import create_worker

from core.trace.loader import Progress
from gui.workers import LoadJob


def _compare_gen(ts_a, ts_b):
    """Rules on both runs, then the diff (a generator for a superqt worker: yields Progress)."""
    from core.analysis import diff
    from core.ranks.inset import iter_analyze_set
    from core.rules import iter_analyze
    found = []
    for label, ts in (("A", ts_a), ("B", ts_b)):
        # several ranks: rank by rank, then across ranks (core/ranks), as `ptprof diff` and `analyze` do
        gen = iter_analyze_set(ts) if len(ts.models) > 1 else iter_analyze(ts)
        while True:
            try:
                fraction, rule_id = next(gen)
            except StopIteration as stop:
                found.append(stop.value.to_json()["findings"])
                break
            base = 0.0 if label == "A" else 0.45
            yield Progress(f"analysing {label}", base + 0.45 * fraction, rule_id)
    yield Progress("comparing", 0.92, "")
    return diff.compare(ts_a, ts_b, findings_a=found[0], findings_b=found[1])


class CompareJob(QtCore.QObject):
    """Emits exactly one of sig_compare_ready / sig_compare_failed / sig_compare_cancelled."""

    sig_progress_changed = QtCore.Signal(str, float)  # (stage, fraction 0..1)
    sig_compare_ready = QtCore.Signal(object, object, object)  # (Diff, (TraceSet, indexes) A, ... B)
    sig_compare_failed = QtCore.Signal(str, str)  # (path, one-line reason)
    sig_compare_cancelled = QtCore.Signal()

    def __init__(self, path_a: str | Path, path_b: str | Path, parent=None, in_process: bool | None = None) -> None:
        super().__init__(parent)
        self.paths = (str(path_a), str(path_b))
        self.loads = [LoadJob(p, self, in_process=in_process) for p in self.paths]
        self.loaded: list[tuple | None] = [None, None]
        self.fractions = [0.0, 0.0]
        self.worker = None
        self._done = False
        for i, job in enumerate(self.loads):
            job.sig_progress_changed.connect(lambda stage, f, i=i: self._on_load_progress(i, stage, f))
            job.sig_job_loaded.connect(lambda ts, idx, i=i: self._on_load_loaded(i, ts, idx))
            job.sig_job_failed.connect(self._on_load_failed)
            job.sig_job_cancelled.connect(lambda _p: self._finish_cancelled())

    def start(self) -> None:
        for job in self.loads:
            job.start()

    def cancel(self) -> None:
        for job in self.loads:
            job.cancel()
        if self.worker is not None:
            self.worker.quit()
        self._finish_cancelled()

    def _finish_cancelled(self) -> None:
        if not self._done:
            self._done = True
            self.sig_compare_cancelled.emit()

    def _on_load_progress(self, i: int, stage: str, fraction: float) -> None:
        self.fractions[i] = fraction
        side = "AB"[i]
        self.sig_progress_changed.emit(f"{side}: {stage}", 0.5 * (self.fractions[0] + self.fractions[1]) * 0.6)

    def _on_load_loaded(self, i: int, trace_set, indexes) -> None:
        self.loaded[i] = (trace_set, indexes)
        if self._done or any(x is None for x in self.loaded):
            return
        self.worker = create_worker(_compare_gen, self.loaded[0][0], self.loaded[1][0], _start_thread=False,
                                    _connect={"yielded": self._on_worker_yielded,
                                              "returned": self._on_worker_returned,
                                              "errored": self._on_worker_errored})
        self.worker.start()

    def _on_load_failed(self, path: str, reason: str) -> None:
        if self._done:
            return
        self._done = True
        for job in self.loads:
            job.cancel()
        self.sig_compare_failed.emit(path, reason)

    def _on_worker_yielded(self, prog: Progress) -> None:
        self.sig_progress_changed.emit(prog.stage, 0.6 + 0.4 * float(prog.fraction))

    def _on_worker_returned(self, result) -> None:
        if self._done:
            return
        self._done = True
        self.sig_compare_ready.emit(result, self.loaded[0], self.loaded[1])
        _release_cache_writes()

    def _on_worker_errored(self, exc: BaseException) -> None:
        if self._done:
            return
        self._done = True
        self.sig_compare_failed.emit(self.paths[1], f"comparison failed: {type(exc).__name__}: {exc}"[:300])
        _release_cache_writes()


def _release_cache_writes() -> None:
    """The loads' big cache writes (queued by gui/workers._thread_gen) start once the comparison is done."""
    from core.trace import cache
    cache.release_behind()
