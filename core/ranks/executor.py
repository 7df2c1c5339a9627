"""Where the maps run: an `Executor` runs `fn(task)` for many tasks and answers each as it completes.

- `LocalPool` (default): the stdlib process pool, one worker per core (`--workers N`); a worker holds one
  rank at a time, so peak memory is workers x one rank, and the parent only the summaries.
- `InProcess`: one after another in this process (tests, `--workers 1`, no fork possible).
- Dask distributed (core/ranks/dask_backend.py): `--scheduler tcp://HOST:8786` or `local:N`.
A Ray backend would be one more class with `map_unordered`, `call` and `close`.
"""
from __future__ import annotations

import multiprocessing
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any, Protocol

from core import forkserver


class Executor(Protocol):
    name: str
    workers: int

    def map_unordered(self, fn: Callable, tasks: Iterable, weight: Callable | None = None
                      ) -> Iterator[tuple[int, Any]]:
        """(position in tasks, fn(task)) as each completes; an exception of fn is raised here. `weight`: a
        task's estimated peak bytes, for executors that bound the memory in flight (LocalPool)."""

    def call(self, fn: Callable, *args) -> Any:
        """fn(*args) on a worker (where the data is)."""

    def close(self) -> None: ...


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class InProcess:
    name = "in-process"
    workers = 1

    def map_unordered(self, fn, tasks, weight=None):
        for i, t in enumerate(tasks):
            yield i, fn(t)

    def call(self, fn, *args):
        return fn(*args)

    def close(self) -> None:
        pass


def _worker_init() -> None:
    # ranks run side by side: a rank's own parse needs no worker processes of its own (threads stay)
    os.environ.setdefault("PTPROF_WORKERS", "1")
    from core.trace.alloc import single_arena, tune_malloc
    tune_malloc()
    single_arena()


_QT = ("PySide6.QtCore", "PyQt6.QtCore", "PyQt5.QtCore")  # names looked up in sys.modules, never imported here


def start_method() -> str:
    """fork where this process is single-threaded (the CLI: workers start at once with the modules loaded), else
    forkserver. Qt's threads (the window's thread pool running the job that makes the pool) are no Python threads:
    a process that loaded Qt is never forked (a forked worker hung on a lock a Qt thread held: the window's Compare
    of a multi-rank run never finished when no Python thread was running beside it)."""
    methods = multiprocessing.get_all_start_methods()
    if threading.active_count() == 1 and "fork" in methods and not any(m in sys.modules for m in _QT):
        return "fork"
    return "forkserver" if "forkserver" in methods else "spawn"


class LocalPool:
    """concurrent.futures.ProcessPoolExecutor; at most `2 x workers` tasks in flight (a 1,024-rank run
    queues no 1,024 pickled tasks at once). fork where this process is single-threaded (the CLI: workers
    start at once with the modules loaded), else forkserver."""

    name = "process pool"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = max(1, workers or cores())
        self.method = start_method()
        if self.method == "forkserver":
            forkserver.revive()  # one killed and collected elsewhere fails every pool after it (ECHILD)
        self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context(self.method),
                                         initializer=_worker_init)

    def map_unordered(self, fn, tasks, weight=None):
        """`weight(task)`: its estimated peak bytes (core/ranks/budget.py); tasks are admitted while the
        estimates in flight fit the memory budget (one at least), at most `workers` at a time."""
        from core.ranks.budget import budget_bytes
        pending: dict = {}
        it = iter(enumerate(tasks))
        budget = budget_bytes()
        held = 0
        nxt = next(it, None)
        try:
            while True:
                while nxt is not None and len(pending) < self.workers:
                    w = int(weight(nxt[1])) if weight is not None else 0
                    if pending and held + w > budget:
                        break  # waits for a rank in flight to end
                    pending[self._pool.submit(fn, nxt[1])] = (nxt[0], w)
                    held += w
                    nxt = next(it, None)
                if not pending:
                    return
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    i, w = pending.pop(fut)
                    held -= w
                    yield i, fut.result()
        finally:
            for fut in pending:
                fut.cancel()

    def call(self, fn, *args):
        return self._pool.submit(fn, *args).result()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def make_executor(scheduler: str | None = None, workers: int | None = None) -> Executor:
    """`scheduler`: None (the local process pool), "local:N" / "tcp://HOST:PORT" (Dask distributed)."""
    if scheduler:
        from core.ranks.dask_backend import DaskExecutor
        return DaskExecutor(scheduler)
    if workers == 1:
        return InProcess()
    return LocalPool(workers)
