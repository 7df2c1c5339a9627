"""CompareJob: both runs load in parallel workers (LoadJob each), then one worker analyses both and
computes the diff. Progress and cancel like a load; widgets are never touched from a worker.

A run of several trace files (ranks) is not loaded in the window: the worker reads it rank by rank in the
process pool as `ptprof diff` does (core/ranks/onepass.py: each rank read once, its diff facts and its map;
memory O(workers x rank) in the pool, the facts and summaries here), and the tab's timeline shows its primary
rank (loaded alone, after the diff), so the window's memory does not grow with the ranks."""
from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

from PySide6 import QtCore
from superqt.utils import create_worker

from core.trace.loader import Progress
from core.trace.model import LoadCancelled
from gui.workers import LoadJob


def _checked(gen, cancelled: threading.Event, progress):
    """Drive `gen`, yielding progress(item) per item; stops it (gen.close: its pool ends) once cancelled."""
    try:
        while True:
            try:
                item = next(gen)
            except StopIteration as stop:
                return stop.value
            if cancelled.is_set():
                raise LoadCancelled()
            yield progress(item)
    finally:
        gen.close()


def _read_run(label: str, path: str, cancelled: threading.Event, base: float, span: float):
    """(RunView, findings) of a multi-rank run: each rank read once in the pool (`ptprof diff`'s way)."""
    from core.ranks.findings_cache import findings_of
    from core.ranks.onepass import iter_diff_view
    view = yield from _checked(iter_diff_view(path), cancelled,
                               lambda fw: Progress(f"reading {label}", base + span * 0.9 * fw[0], fw[1]))
    try:
        yield Progress(f"analysing {label}", base + span * 0.9, "across ranks")
        return view, findings_of(view)
    except BaseException:
        view.close()
        raise


def _primary_rank(view, cancelled: threading.Event):
    """(the run's primary rank alone as a TraceSet named after the run, its timeline indexes, a note)."""
    from gui.workers import _thread_gen
    first = view.models[0]
    ts, indexes = yield from _checked(_thread_gen(first.path), cancelled,
                                      lambda p: Progress("loading the primary rank", 0.96, p.detail))
    return replace(ts, path=view.path), indexes, f"rank {first.rank} of {len(view.models)}"


def _compare_gen(side_a, side_b, cancelled: threading.Event | None = None):
    """Rules on both runs, then the diff (a generator for a superqt worker: yields Progress). A side is a loaded
    TraceSet or the path of a multi-rank run (read rank by rank here). Returns (Diff, side A, side B) with each
    side (TraceSet, timeline indexes or None, note)."""
    from core.analysis import diff
    from core.ranks.inset import iter_analyze_set
    from core.rules import iter_analyze
    cancelled = cancelled or threading.Event()
    found, runs = [], []
    try:
        for label, ts in (("A", side_a), ("B", side_b)):
            base = 0.0 if label == "A" else 0.45
            if isinstance(ts, str):
                view, findings = yield from _read_run(label, ts, cancelled, base, 0.45)
                runs.append(view)
                found.append(findings)
                continue
            # several ranks: rank by rank, then across ranks (core/ranks), as `ptprof diff` and `analyze` do
            gen = iter_analyze_set(ts) if len(ts.models) > 1 else iter_analyze(ts)
            while True:
                try:
                    fraction, rule_id = next(gen)
                except StopIteration as stop:
                    found.append(stop.value.to_json()["findings"])
                    break
                if cancelled.is_set():
                    raise LoadCancelled()
                yield Progress(f"analysing {label}", base + 0.45 * fraction, rule_id)
        yield Progress("comparing", 0.92, "")
        sides = [runs.pop(0) if isinstance(s, str) else s for s in (side_a, side_b)]
        result = diff.compare(sides[0], sides[1], findings_a=found[0], findings_b=found[1])
        shown = []
        for s in sides:
            if hasattr(s, "run_findings"):  # a run view: its primary rank for the timeline
                s.close()
                shown.append((yield from _primary_rank(s, cancelled)))
            else:
                shown.append((s, None, ""))
        return result, shown[0], shown[1]
    finally:
        for view in runs:
            view.close()


class CompareJob(QtCore.QObject):
    """Emits exactly one of sig_compare_ready / sig_compare_failed / sig_compare_cancelled."""

    sig_progress_changed = QtCore.Signal(str, float)  # (stage, fraction 0..1)
    sig_compare_ready = QtCore.Signal(object, object, object)  # (Diff, (TraceSet, indexes, note) A, ... B)
    sig_compare_failed = QtCore.Signal(str, str)  # (path, one-line reason)
    sig_compare_cancelled = QtCore.Signal()

    def __init__(self, path_a: str | Path, path_b: str | Path, parent=None, in_process: bool | None = None) -> None:
        super().__init__(parent)
        from core.ranks import is_multi
        self.paths = (str(path_a), str(path_b))
        runs = [is_multi(p) for p in self.paths]  # several trace files: read rank by rank by the compare worker
        sides = [(i, LoadJob(p, self, in_process=in_process)) for i, (p, run) in enumerate(zip(self.paths, runs))
                 if not run]
        self.loads = [job for _i, job in sides]
        self.loaded: list[tuple | None] = [((p, None) if run else None) for p, run in zip(self.paths, runs)]
        self.fractions = [1.0 if run else 0.0 for run in runs]
        self.worker = None
        self._done = False
        self._cancel = threading.Event()
        for i, job in sides:
            job.sig_progress_changed.connect(lambda stage, f, i=i: self._on_load_progress(i, stage, f))
            job.sig_job_loaded.connect(lambda ts, idx, i=i: self._on_load_loaded(i, ts, idx))
            job.sig_job_failed.connect(self._on_load_failed)
            job.sig_job_cancelled.connect(lambda _p: self._finish_cancelled())

    def start(self) -> None:
        for job in self.loads:
            job.start()
        if not self.loads:  # two multi-rank runs: nothing to load here
            self._start_compare()

    def cancel(self) -> None:
        for job in self.loads:
            job.cancel()
        self._cancel.set()  # the worker stops at its next step and ends its pools (it is not abandoned)
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
        self._start_compare()

    def _start_compare(self) -> None:
        if self._done or self.worker is not None or any(x is None for x in self.loaded):
            return
        self.worker = create_worker(_compare_gen, self.loaded[0][0], self.loaded[1][0], self._cancel,
                                    _start_thread=False,
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
        d, shown_a, shown_b = result
        sides = [(ts, idx if idx is not None else loaded[1], note)
                 for (ts, idx, note), loaded in zip((shown_a, shown_b), self.loaded)]
        self.sig_compare_ready.emit(d, sides[0], sides[1])
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
