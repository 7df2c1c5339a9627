"""Dask distributed as the cluster executor (`pip install ".[cluster]"`).

    ptprof analyze RUN --scheduler tcp://HOST:8786   # a running cluster (dask scheduler + dask worker ...)
    ptprof analyze RUN --scheduler local:4           # a LocalCluster of 4 worker processes started here

The map runs where the data is: each task names a trace path, which the workers open on the cluster's shared
filesystem (the same path on every machine); only `MapTask`s (a few hundred bytes) go out and `RankSummary`s
(12-30 KB) come back. Each worker runs one task at a time per thread it has; with `local:N` every worker has one
thread (the map holds the GIL for most of its pure-numpy work, and a rank per process bounds memory).
"""
from __future__ import annotations

import os
import re

_LOCAL = re.compile(r"^local(?::(\d{1,4}))?$")


def available() -> str | None:
    """None when distributed imports, else why not (one line)."""
    try:
        import distributed  # noqa: F401
    except ImportError as exc:
        return f"Dask distributed is not installed ({exc}); pip install \".[cluster]\""
    return None


class DaskExecutor:
    name = "dask"

    def __init__(self, scheduler: str, timeout_s: float = 30.0) -> None:
        why = available()
        if why:
            raise ImportError(why)
        from distributed import Client, LocalCluster
        self._cluster = None
        m = _LOCAL.match(scheduler.strip())
        if m:
            n = int(m.group(1) or 0) or (os.cpu_count() or 1)
            self._cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                                         silence_logs=40)
            self.client = Client(self._cluster, timeout=timeout_s)
        elif scheduler.startswith(("tcp://", "tls://", "ucx://", "inproc://")):
            self.client = Client(scheduler, timeout=timeout_s)
        else:
            raise ValueError("expected tcp://HOST:PORT or local:N")
        info = self.client.scheduler_info()
        self.workers = max(1, sum(int(w.get("nthreads", 1)) for w in info.get("workers", {}).values()))
        self.name = f"dask {scheduler}"

    def map_unordered(self, fn, tasks, weight=None):  # each Dask worker has its own memory: no weights
        from distributed import as_completed
        tasks = list(tasks)
        futures = self.client.map(fn, tasks, pure=False)
        pos = {f.key: i for i, f in enumerate(futures)}
        try:
            for fut in as_completed(futures):
                yield pos[fut.key], fut.result()
        finally:
            self.client.cancel([f for f in futures if not f.done()])

    def call(self, fn, *args):
        return self.client.submit(fn, *args, pure=False).result()

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            if self._cluster is not None:
                self._cluster.close()
