"""Parallel decoding gives exactly the single-process model: scanner threads (the C scanner
releases the GIL) and, when the scanner is not built, worker processes (fork, spawn, streamed
gzip); cancelling a load stops its threads / workers at once."""
from __future__ import annotations

import gzip
import multiprocessing as mp
import os
import signal
import threading
import time

import pytest
from helpers import shared_trace

from core.trace import columns, gzstream, kineto, parallel
from core.trace.loader import iter_load, load

SOURCE = "gpu_dataloader.pt.trace.json.gz"  # 28 MB raw, 78k events


@pytest.fixture(scope="module")
def reference():
    return load(shared_trace(SOURCE), use_cache=False).primary


@pytest.fixture(scope="module")
def plain_copy(tmp_path_factory):
    path = tmp_path_factory.mktemp("plain") / "dataloader.pt.trace.json"
    path.write_bytes(gzip.open(shared_trace(SOURCE)).read())
    return path


@pytest.fixture
def force_workers(monkeypatch):
    """Worker processes: the path taken when the C scanner is not built."""
    monkeypatch.setattr(columns, "_DISABLED", True)
    monkeypatch.setenv("PTPROF_WORKERS", "2")
    monkeypatch.setattr(kineto, "CHUNK_BYTES", 3 << 20)
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES_SPAWN", 0)


# fork is used only in a single-threaded process: time these out by SIGALRM, not by pytest-timeout's thread
@pytest.fixture
def needs_fork():
    """The fork paths need a process with one thread (as the CLI is): run after GUI tests in the same
    process, their threads rightly make the loader choose forkserver, so these tests say so and skip."""
    others = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
    if others:
        pytest.skip(f"other threads alive ({', '.join(others[:3])}): the loader will not fork here")


def single_threaded(fn):
    return pytest.mark.usefixtures("needs_fork")(pytest.mark.timeout(method="signal")(fn))


@single_threaded
def test_fork_workers_on_plain_json(models_equal, force_workers, plain_copy, reference):
    assert parallel.start_method() == "fork"
    models_equal(load(plain_copy, use_cache=False).primary, reference)


@single_threaded
def test_streamed_gzip_equals_serial(models_equal, force_workers, monkeypatch, reference):
    calls = []
    real = gzstream.decode_streamed

    def spy(path):
        result = yield from real(path)
        calls.append(result is not None)
        return result

    monkeypatch.setattr(gzstream, "decode_streamed", spy)
    models_equal(load(shared_trace(SOURCE), use_cache=False).primary, reference)
    assert calls == [True]  # the streamed path really ran


@pytest.mark.parametrize("compressed", [False, True])
def test_spawn_workers(models_equal, force_workers, monkeypatch, plain_copy, reference, compressed):
    monkeypatch.setattr(parallel, "start_method", lambda: "spawn")
    path = shared_trace(SOURCE) if compressed else plain_copy
    models_equal(load(path, use_cache=False).primary, reference)


def test_truncated_file_with_workers(models_equal, force_workers, tmp_path, plain_copy):
    data = plain_copy.read_bytes()
    path = tmp_path / "cut.json"
    path.write_bytes(data[: int(len(data) * 0.83)])
    parallel_model = load(path, use_cache=False)
    import os
    os.environ["PTPROF_WORKERS"] = "0"
    serial = load(path, use_cache=False)
    models_equal(parallel_model.primary, serial.primary)
    assert any("truncated" in w for w in parallel_model.all_warnings)


@single_threaded  # fork workers, as in the CLI (a pytest-timeout thread would switch the loader to forkserver)
def test_cancel_stops_workers_promptly(models_equal, force_workers, plain_copy):
    gen = iter_load(plain_copy, use_cache=False)
    for _ in range(3):
        progress = next(gen)
    assert progress.stage in ("reading", "decoding")
    gen.close()  # returns once the workers are gone (they are killed, not asked)
    deadline = time.time() + 30
    while mp.active_children() and time.time() < deadline:
        time.sleep(0.05)
    assert not mp.active_children()


@single_threaded
def test_cancel_works_when_this_process_ignores_sigterm(models_equal, force_workers, plain_copy):
    """A fork worker inherits the parent's SIG_IGN (a host that ignores SIGTERM, or child code that ran
    in-process): the workers reset it, so a cancel still ends them instead of hanging in Pool.join."""
    old = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        gen = iter_load(plain_copy, use_cache=False)
        for _ in range(3):
            next(gen)
        gen.close()
    finally:
        signal.signal(signal.SIGTERM, old)
    deadline = time.time() + 30
    while mp.active_children() and time.time() < deadline:
        time.sleep(0.05)
    assert not mp.active_children()


@single_threaded
def test_cancel_streamed_gzip(models_equal, force_workers):
    gen = iter_load(shared_trace(SOURCE), use_cache=False)
    for _ in range(3):
        next(gen)
    gen.close()
    deadline = time.time() + 30
    while mp.active_children() and time.time() < deadline:
        time.sleep(0.05)
    assert not mp.active_children()


@pytest.mark.timeout(60)
def test_stopping_a_pool_a_dead_worker_jammed_returns_and_leaves_no_worker():
    """CPython's Pool.terminate() waits forever when a worker died holding the result queue's write
    lock (a worker SIGTERMed mid-result by a cancelled load: the xdist hang of issue 13). The loader's
    stop kills the workers, frees the lock and returns."""
    ctx = mp.get_context("fork")
    pool = ctx.Pool(2)
    assert list(pool.imap(abs, range(-5, 5))) == [5, 4, 3, 2, 1, 0, 1, 2, 3, 4]
    holder = ctx.Process(target=pool._outqueue._wlock.acquire)  # dies holding the lock
    holder.start()
    holder.join()
    t0 = time.monotonic()
    parallel._stop_pool(pool)
    assert time.monotonic() - t0 < parallel.POOL_STOP_S
    assert all(p.exitcode is not None for p in pool._pool)


class _Queues:
    """What `_unjam` reads of a pool: its two queues."""

    def __init__(self, ctx):
        self._inqueue = ctx.SimpleQueue()
        self._outqueue = ctx.SimpleQueue()


def test_unjam_never_drains_a_result_queue_whose_lock_is_free():
    """Once the lock is free, terminate() writes the result handler's sentinel into that pipe: a drain
    then would steal it and leave terminate() waiting for the handler until the stop gives up (the CI
    failure of this test's neighbour, stop 22)."""
    pool = _Queues(mp.get_context("fork"))
    pool._outqueue.put(None)  # the sentinel, not read yet
    parallel._unjam(pool, result_lock=True)
    assert pool._outqueue._reader.poll(1.0)
    assert pool._outqueue.get() is None
    assert pool._outqueue._reader.fileno() >= 0 and pool._outqueue.empty()


def test_unjam_drains_a_dead_writers_half_result_then_frees_its_lock():
    ctx = mp.get_context("fork")
    pool = _Queues(ctx)
    holder = ctx.Process(target=pool._outqueue._wlock.acquire)  # dies holding the lock
    holder.start()
    holder.join()
    pool._outqueue._writer.send_bytes(b"x" * 64)  # what a result looks like on the pipe...
    os.write(pool._outqueue._writer.fileno(), (1000).to_bytes(4, "big") + b"half")  # ...and a torn one
    parallel._unjam(pool, result_lock=True)
    pool._outqueue.put("after")  # the lock is free and the stream starts at a message again
    assert pool._outqueue.get() == "after"
    parallel._unjam(pool, result_lock=False)  # later rounds leave the result queue alone
    pool._outqueue.put(None)
    assert pool._outqueue.get() is None


# --- scanner threads ---------------------------------------------------------------------------------

needs_scanner = pytest.mark.skipif(not columns.scan_available(), reason="C scanner not built")


@pytest.fixture
def force_threads(monkeypatch):
    monkeypatch.setenv("PTPROF_WORKERS", "2")
    monkeypatch.setattr(kineto, "CHUNK_BYTES", 3 << 20)
    monkeypatch.setattr(parallel, "MIN_THREADED_BYTES", 0)
    monkeypatch.setattr(parallel, "CHUNKS_PER_THREAD", 4)
    used = []
    real = parallel.ThreadPoolExecutor

    def spy(n, **kw):
        used.append(n)
        return real(n, **kw)

    monkeypatch.setattr(parallel, "ThreadPoolExecutor", spy)
    return used


def _python_model(monkeypatch, path):
    with monkeypatch.context() as m:
        m.setattr(columns, "_DISABLED", True)
        m.setenv("PTPROF_WORKERS", "0")
        return load(path, use_cache=False)


@needs_scanner
@pytest.mark.parametrize("compressed", [False, True])
def test_scanner_threads_equal_python_model(models_equal, force_threads, plain_copy, reference, compressed):
    path = shared_trace(SOURCE) if compressed else plain_copy
    models_equal(load(path, use_cache=False).primary, reference)
    assert force_threads == [2]  # two threads really scanned the chunks


@needs_scanner
def test_chunk_the_scanner_refuses_takes_the_python_path(models_equal, force_threads, monkeypatch, tmp_path,
                                                         plain_copy):
    """Unquoted N/A (older Kineto) in one chunk: that chunk is decoded by msgspec's tolerant path,
    the others by the threads; the model and the warning are those of the Python path."""
    data = plain_copy.read_bytes()
    at = data.index(b'"Record function id": 0', len(data) // 2)
    path = tmp_path / "na.pt.trace.json"
    path.write_bytes(data[:at] + b'"Record function id": N/A' + data[at + len(b'"Record function id": 0'):])
    threaded = load(path, use_cache=False)
    assert force_threads == [2]
    python = _python_model(monkeypatch, path)
    models_equal(threaded.primary, python.primary)
    assert any("N/A" in w for w in threaded.all_warnings)


@needs_scanner
def test_truncated_file_with_threads(models_equal, force_threads, monkeypatch, tmp_path, plain_copy):
    data = plain_copy.read_bytes()
    path = tmp_path / "cut.json"
    path.write_bytes(data[: int(len(data) * 0.83)])
    monkeypatch.setattr(parallel, "CHUNKS_PER_THREAD", 1)  # same 3 MB chunks as the Python path: the
    threaded = load(path, use_cache=False)                 # warning counts the last chunk's events
    models_equal(threaded.primary, _python_model(monkeypatch, path).primary)
    assert any("truncated" in w for w in threaded.all_warnings)


@needs_scanner
def test_cancel_stops_scanner_threads_promptly(force_threads, plain_copy):
    gen = iter_load(plain_copy, use_cache=False)
    for _ in range(3):
        progress = next(gen)
    assert progress.stage in ("reading", "decoding")
    gen.close()  # joins the scan threads: a chunk in flight finishes (no wall-time bound: the machine may be loaded)
    assert not [t for t in threading.enumerate() if t.name.startswith("ptprof-scan")]


def test_a_pool_that_cannot_start_decodes_in_process(models_equal, force_workers, monkeypatch, plain_copy,
                                                      reference, caplog):
    """A forkserver that died (waitpid: ChildProcessError, seen under heavy load), or no pids / fds left:
    the file is decoded in this process, same model, one log line, no traceback."""
    class Broken:
        def Pool(self, *a, **k):
            raise ChildProcessError(10, "No child processes")

    monkeypatch.setattr(mp, "get_context", lambda method=None: Broken())
    with caplog.at_level("WARNING", logger=parallel.log.name):
        models_equal(load(plain_copy, use_cache=False).primary, reference)
    assert any("worker pool did not start" in r.getMessage() for r in caplog.records)
