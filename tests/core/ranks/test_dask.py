"""The Dask distributed executor: a real LocalCluster of 2 workers, and a scheduler + worker started as separate
processes (as on a cluster), give the local pool's findings."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time

import pytest

pytest.importorskip("distributed", reason="Dask distributed is not installed (pip install \".[cluster]\")")

from helpers import REPO  # noqa: E402

from core.ranks import analyze_run  # noqa: E402
from core.ranks.dask_backend import DaskExecutor  # noqa: E402
from core.ranks.executor import LocalPool  # noqa: E402

pytestmark = pytest.mark.timeout(240)


def _key(ra):
    return [(f.rule, f.title, f.severity, f.saving_ns, f.time_ranges) for f in ra.analysis.findings]


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.setenv("PTPROF_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), str(REPO / "tests"), os.environ.get("PYTHONPATH", "")]))
    path = tmp_path / "run"
    shutil.copytree(REPO / "tests" / "data" / "multi" / "straggler", path)
    return path


def _local(run):
    ex = LocalPool(2)
    try:
        return analyze_run(run, ex, stored=False)
    finally:
        ex.close()


def test_local_cluster_of_two_workers(run):
    want = _local(run)
    ex = DaskExecutor("local:2")
    try:
        assert ex.workers == 2
        got = analyze_run(run, ex, stored=False)
    finally:
        ex.close()
    assert _key(got) == _key(want) and got.executor.startswith("dask")
    assert got.analysis.summary["per_rule"] == want.analysis.summary["per_rule"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_scheduler_and_worker_as_separate_processes(run, tmp_path):
    want = _local(run)
    port = _free_port()
    dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    env = dict(os.environ)
    procs = [subprocess.Popen(dask + ["--host", "127.0.0.1", "--port", str(port), "--dashboard-address", ":0"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", f"tcp://127.0.0.1:{port}",
                                       "--nworkers", "1", "--nthreads", "1", "--no-dashboard"],
                                      env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        ex = None
        deadline = time.monotonic() + 120
        while ex is None:
            try:
                ex = DaskExecutor(f"tcp://127.0.0.1:{port}", timeout_s=10)
            except (OSError, TimeoutError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
        try:
            ex.client.wait_for_workers(1, timeout=120)
            got = analyze_run(run, ex, stored=False)
        finally:
            ex.close()
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
    assert _key(got) == _key(want)


def test_cli_scheduler_errors_are_one_line(run, capsys):
    from core.cli import main
    assert main(["analyze", "--scheduler", "nowhere:1", str(run)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ptprof: --scheduler nowhere:1:") and err.count("\n") == 1
