"""ptprof's own processes load numpy's OpenBLAS on one thread (its pool spun 0.27 CPU-s of a 1.1 GB load
on two cores) without passing OPENBLAS_NUM_THREADS on to the scripts they start."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO

_PROBE = """
import json, os, sys
import {module}
import numpy
print(json.dumps({{"threads": len(os.listdir("/proc/self/task")),
                   "env": os.environ.get("OPENBLAS_NUM_THREADS")}}))
"""


def _probe(module: str, **env) -> dict:
    # OpenBLAS also reads OMP_NUM_THREADS and GOTO_NUM_THREADS (tests/conftest.py sets the first)
    base = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                                            "GOTO_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", _PROBE.format(module=module)], cwd=REPO, env={**base, **env},
                         capture_output=True, text=True, timeout=120, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


pytestmark = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")


@pytest.mark.parametrize("module", ["core.cli", "gui.load_process"])
def test_our_processes_load_openblas_without_its_threads_and_leave_the_environment_alone(module):
    got = _probe(module)
    assert got == {"threads": 1, "env": None}


def test_a_value_the_user_set_is_kept():
    assert _probe("core.cli", OPENBLAS_NUM_THREADS="3")["env"] == "3"


def test_without_it_openblas_would_start_threads_here():
    """The reason for core.blas, on this machine (skips where OpenBLAS would not start any)."""
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: OpenBLAS starts no pool")
    plain = _probe("json")
    if plain["threads"] == 1:
        pytest.skip("this numpy's BLAS starts no threads")
    assert plain["threads"] > 1
