"""numpy's OpenBLAS without a thread pool in ptprof's own processes.

Loading numpy's OpenBLAS starts a worker thread per extra core, and each spins (sched_yield in a loop)
for a while before it sleeps: on the 2-core VM that was 0.27 CPU-s of a 1.1 GB `ptprof info --no-cache`
(2.44 -> 2.17 CPU-s, medians of 7 alternated runs), taken from the scanner threads. ptprof never calls
BLAS, so its own processes (the CLI, the window, the window's loader child) load OpenBLAS with one
thread. OpenBLAS reads `OPENBLAS_NUM_THREADS` once, when it is loaded: the variable is set only around
numpy's first import and removed again, so the training scripts ptprof starts inherit the user's
environment unchanged. A value the user set is left as it is.
"""
from __future__ import annotations

import os
import sys

_VARS = ("OPENBLAS_NUM_THREADS",)


def one_blas_thread() -> None:
    """Import numpy with OpenBLAS on one thread (call before anything imports numpy; no-op after)."""
    if "numpy" in sys.modules:
        return
    added = [k for k in _VARS if k not in os.environ]
    for k in added:
        os.environ[k] = "1"
    try:
        import numpy  # noqa: F401  (OpenBLAS reads the variable as it loads)
    finally:
        for k in added:
            os.environ.pop(k, None)
