"""The model build scatters the arg columns on a second thread next to its sort and depth (loads of
PARALLEL_MIN_ROWS up to the big ones): the model must equal the one-thread build, and the thread
must never outlive the build or swallow an error."""
from __future__ import annotations

import threading

import pytest
from helpers import shared_trace

from core.trace import build
from core.trace.beside import Beside
from core.trace.loader import load


@pytest.mark.parametrize("name", ["gpu_compile_small.pt.trace.json.gz", "gpu_dataloader.pt.trace.json.gz",
                                  "cpu_train.pt.trace.json.gz"])
def test_the_threaded_build_gives_the_one_thread_model(models_equal, monkeypatch, name):
    path = shared_trace(name)
    used = []
    real = build._build_threads
    monkeypatch.setattr(build, "PARALLEL_MIN_ROWS", 0)
    monkeypatch.setattr(build, "_build_threads", lambda n: used.append(real(n)) or used[-1])
    monkeypatch.setattr(build.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    threaded = load(path, use_cache=False).primary
    assert used == [True]
    monkeypatch.setenv("PTPROF_WORKERS", "1")  # one thread asked for: the build runs in place
    alone = load(path, use_cache=False).primary
    assert used == [True, False]
    models_equal(threaded, alone)


def test_only_mid_sized_loads_on_two_cores_use_the_thread(monkeypatch):
    monkeypatch.delenv("PTPROF_WORKERS", raising=False)
    monkeypatch.setattr(build.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert not build._build_threads(build.PARALLEL_MIN_ROWS - 1)
    assert build._build_threads(build.PARALLEL_MIN_ROWS)
    assert not build._build_threads(build.TRIM_MIN_ROWS)  # big loads: peak memory first
    monkeypatch.setattr(build.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert not build._build_threads(build.PARALLEL_MIN_ROWS)


@pytest.mark.parametrize("threaded", [True, False])
def test_an_error_on_the_thread_reaches_the_caller(threaded):
    def fail():
        raise MemoryError("no room for the column")

    with Beside(threaded) as beside:
        job = beside.run(fail)
        with pytest.raises(MemoryError, match="no room"):
            job.result()


def test_leaving_the_block_waits_for_the_thread_even_when_the_caller_failed():
    release, done = threading.Event(), []

    def slow():
        release.wait(5)
        done.append(True)

    with pytest.raises(ValueError):
        with Beside(True) as beside:
            beside.run(slow)
            threading.Timer(0.2, release.set).start()
            raise ValueError("the depth failed")
    assert done == [True]
    assert not any(t.name == "ptprof-build" for t in threading.enumerate())


def test_in_place_runs_only_when_asked():
    calls = []
    with Beside(False) as beside:
        job = beside.run(lambda: calls.append(1) or 42)
        assert calls == []
        assert job.result() == 42 and calls == [1]
