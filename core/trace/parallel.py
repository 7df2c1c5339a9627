"""Decode the chunks of a traceEvents array, in worker processes for big files, in order.

`decode_chunks(...)` is a generator: it yields the fraction of bytes decoded so far and returns
the chunks' columns merged (core.trace.merge) as they arrived, in file order. Closing it (a cancelled load)
terminates the workers at once.

Workers get the bytes without copies where possible: with the "fork" start method (the default when
the loading process has a single thread, as the CLI does) they inherit the buffer; otherwise a plain
file is mmapped by each worker and a decompressed buffer is sent chunk by chunk.
A chunk whose cut was bad (a separator inside a string) fails in its worker; it is then decoded again
in the parent merged with the following chunk. The last chunk of a truncated file is salvaged.
"""
from __future__ import annotations

import gc
import itertools
import logging
import mmap
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Generator, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from core import forkserver
from core.env import env_int
from core.trace import io, kineto
from core.trace.alloc import tune_malloc
from core.trace.columns import ChunkColumns, scan_available, scan_columns
from core.trace.kineto import CORRUPT_MARK
from core.trace.merge import Merged, Merger
from core.trace.pieces import decode_chunk_columns, decode_range

log = logging.getLogger(__name__)

MIN_THREADED_BYTES = 8 << 20  # below this one scan in the calling thread is quicker
THREAD_BYTES = 8 << 20  # one scanner thread per this many bytes of events (up to the cores)
CHUNKS_PER_THREAD = 3  # threads pick chunks from one queue: little balancing is needed
AHEAD_PER_THREAD = 3  # chunks submitted ahead of the merge, per scanner thread
MIN_PARALLEL_BYTES = 24 << 20  # below this, process start-up costs more than it saves (fork)
MIN_PARALLEL_BYTES_SPAWN = 96 << 20  # spawn/forkserver start-up is ~0.3 s per worker here
MAX_WORKERS = 16
CHUNKS_PER_WORKER = env_int("PTPROF_CHUNKS_PER_WORKER", 6, 1, 1000)  # load balance vs per-chunk cost

_BUF = None  # the document bytes in a worker (inherited on fork, or mmapped by _init_worker)
_PIN: list = []  # see decode_chunk_columns
_DROP = [False]  # _BUF is a file mmap: drop its pages from the worker's RSS after each chunk


def workers_env() -> int | None:
    """PTPROF_WORKERS (0-256) when set; anything else is one warning and the automatic count."""
    value = env_int("PTPROF_WORKERS", -1, lo=0, hi=256)
    return None if value < 0 else value


def worker_count(n_bytes: int, method: str) -> int:
    env = workers_env()
    if env is not None:  # 0 or 1: decode in this process
        return env if env > 1 else 0
    cores = _cores()
    threshold = MIN_PARALLEL_BYTES if method == "fork" else MIN_PARALLEL_BYTES_SPAWN
    if cores < 2 or n_bytes < threshold:
        return 0
    return min(cores, MAX_WORKERS, max(2, n_bytes // (8 << 20)))


def start_method() -> str:
    """fork when it is safe (main thread, no other threads, POSIX), else forkserver (Linux) or spawn."""
    methods = mp.get_all_start_methods()
    # a load in a GUI worker (QThread: not the main thread, maybe not counted by threading) or next
    # to other Python threads must not fork a multi-threaded process
    if ("fork" in methods and threading.active_count() == 1 and sys.platform != "darwin"
            and threading.current_thread() is threading.main_thread()):
        return "fork"
    return "forkserver" if "forkserver" in methods else "spawn"


def _init_worker(path: str | None) -> None:
    global _BUF
    # a fork inherits the parent's handlers: an ignored or caught SIGTERM would make Pool.terminate()
    # (a cancelled load) wait forever on this worker; SIGINT is the parent's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.disable()
    tune_malloc()
    if path is not None:
        _DROP[0] = True
        with open(path, "rb") as fh:
            _BUF = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)


def _work(task) -> ChunkColumns | None:
    a, b, last, payload = task
    try:
        if payload is None:
            return decode_range(_BUF, a, b, last, _PIN)
        return decode_chunk_columns(payload, last, _PIN)
    except ValueError:
        return None  # bad cut: the parent merges this range with the next
    finally:
        if payload is None and _DROP[0]:  # drop the file pages from this RSS
            _drop_pages(_BUF, a, b)


def _drop_pages(buf: mmap.mmap, a: int, b: int) -> None:
    lo = a - a % mmap.PAGESIZE
    try:
        buf.madvise(mmap.MADV_DONTNEED, lo, b - lo)
    except (AttributeError, OSError, ValueError):
        pass


def thread_count(n_bytes: int) -> int:
    """Scanner threads for n_bytes of events (0: one chunk in the calling thread)."""
    env = workers_env()
    if env is not None:
        return env if env > 1 else 0
    if n_bytes < MIN_THREADED_BYTES:
        return 0
    # chunks are >= 4 MB (each costs ~3 ms of GIL-held Python: row selection, merge); on the 16-core
    # H200 host gpt_big (136 MB) loads in 1.0-1.5 s with 1 thread, 1.05 s with 4, 0.72-0.78 s with 16
    return min(_cores(), MAX_WORKERS, max(2, n_bytes // THREAD_BYTES))


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS / Windows
        return os.cpu_count() or 1


def _scan_chunk(buf, a: int, b: int, drop: bool) -> ChunkColumns | None:
    out = scan_columns(buf, a, b)
    if drop:  # a file mapping: its pages would stay in this process's RSS until the load ends
        _drop_pages(buf, a, b)
    return out


def decode_threaded(buf, doc: kineto.Document, path: Path) -> Generator[float, None, Merged]:
    """The C scanner releases the GIL: chunks are scanned by threads of this process, with no
    process start-up, no copies of the buffer and no pickled results (2-3x less CPU than worker
    processes). A chunk the scanner refuses (non-standard JSON, a bad cut) comes back None and
    `collect` decodes it on the Python path in this thread."""
    total = max(1, doc.events_end - doc.events_start)
    threads = thread_count(total)
    drop = io.is_file_map(buf)  # file pages can be dropped and read back; inflated ones cannot
    chunk_bytes = kineto.CHUNK_BYTES if threads < 2 else \
        int(min(kineto.CHUNK_BYTES, max(4 << 20, total // (threads * CHUNKS_PER_THREAD))))
    bounds = kineto.chunk_bounds(buf, doc, chunk_bytes)
    gc_was = gc.isenabled()
    gc.disable()
    try:
        if threads < 2 or len(bounds) < 2:
            results: Iterator = (_scan_chunk(buf, a, b, drop) for a, b in bounds)
            return (yield from collect(results, bounds, buf, doc.events_start, total))
        log.info("scanning %d chunks of %s in %d threads", len(bounds), path.name, threads)
        with ThreadPoolExecutor(min(threads, len(bounds)), thread_name_prefix="ptprof-scan") as pool:
            # a bounded window of chunks in flight: a scanned chunk holds its scanner buffers until the
            # merge has copied its rows, so the scanners may run only a few chunks ahead of it
            pending: deque = deque()
            todo = iter(bounds)

            def results() -> Iterator:
                for a, b in itertools.islice(todo, threads * AHEAD_PER_THREAD):
                    pending.append(pool.submit(_scan_chunk, buf, a, b, drop))
                while pending:
                    f = pending.popleft()
                    nxt = next(todo, None)
                    if nxt is not None:
                        pending.append(pool.submit(_scan_chunk, buf, *nxt, drop))
                    yield f.result()
            try:
                return (yield from collect(results(), bounds, buf, doc.events_start, total))
            finally:
                for f in pending:  # a cancelled load: drop what has not started
                    f.cancel()
    finally:
        if gc_was:
            gc.enable()


def decode_chunks(buf, doc: kineto.Document, path: Path, is_mmap: bool) -> Generator[float, None, Merged]:
    global _BUF
    if scan_available():
        return (yield from decode_threaded(buf, doc, path))
    total = max(1, doc.events_end - doc.events_start)
    method = start_method()
    workers = worker_count(total, method)
    chunk_bytes = kineto.CHUNK_BYTES if not workers else \
        int(min(kineto.CHUNK_BYTES, max(4 << 20, total // (workers * CHUNKS_PER_WORKER))))
    bounds = kineto.chunk_bounds(buf, doc, chunk_bytes)
    if len(bounds) < 2:
        workers = 0
    n = len(bounds)
    tasks = [(a, b, k == n - 1, None) for k, (a, b) in enumerate(bounds)]
    pool = None
    gc_was = gc.isenabled()
    gc.disable()
    try:
        if workers:
            pool = _start_pool(method, min(workers, n), buf, is_mmap, path)
        if pool is not None:
            if method != "fork" and not is_mmap:
                tasks = ((a, b, last, kineto.chunk_text(buf, a, b)) for a, b, last, _ in tasks)
            results: Iterator = pool.imap(_work, tasks)
            log.info("decoding %d chunks of %s in %d %s workers", n, path.name, min(workers, n), method)
        else:
            results = (_work_local(buf, t) for t in tasks)
        return (yield from collect(results, bounds, buf, doc.events_start, total))
    finally:
        _BUF = None
        _DROP[0] = False
        _PIN.clear()
        if pool is not None:
            _stop_pool(pool)
        if gc_was:
            gc.enable()


def _start_pool(method: str, processes: int, buf, is_mmap: bool, path: Path):
    """The worker pool, or None when it cannot start: the process may be out of pids or descriptors, or
    hold a forkserver that died (its waitpid raises ChildProcessError, seen under heavy load); the file is
    then decoded in this process, which is slower but gives the same model."""
    global _BUF
    ctx = mp.get_context(method)
    if method == "forkserver":
        forkserver.revive()  # one killed and collected elsewhere would fail every pool after it (ECHILD)
    try:
        if method == "fork":
            _BUF = buf
            _DROP[0] = is_mmap
            return ctx.Pool(processes, initializer=_init_worker, initargs=(None,))
        return ctx.Pool(processes, initializer=_init_worker, initargs=(str(path) if is_mmap else None,))
    except OSError as exc:  # ChildProcessError, EAGAIN, EMFILE
        _BUF = None
        _DROP[0] = False
        log.warning("decoding %s in this process: worker pool did not start (%s: %s)", path.name,
                    type(exc).__name__, exc)
        return None


POOL_STOP_S = 15.0


def _stop_pool(pool) -> None:
    """`Pool.terminate()` + `join()`, bounded. terminate() SIGTERMs the workers; one killed while it
    writes a result (a cancelled load: nobody reads results any more) dies holding the result queue's
    write lock, and CPython's terminate() then waits for that lock forever in the pool's task handler.
    So terminate runs in a helper thread; when it has not returned within a second, the workers are
    killed, the locks a dead worker holds are freed and its half-written bytes drained. Past
    POOL_STOP_S the pool is left to the process's exit (logged) rather than hanging the caller."""
    done = threading.Event()

    def stop() -> None:
        try:
            pool.terminate()
            pool.join()
        except Exception:  # noqa: BLE001 - a pool that fails to stop is logged below, never raised
            log.debug("stopping the worker pool failed", exc_info=True)
        finally:
            done.set()

    threading.Thread(target=stop, name="ptprof-pool-stop", daemon=True).start()
    start = time.monotonic()
    deadline = start + POOL_STOP_S
    unjammed = False
    while not done.wait(0.25):
        if time.monotonic() < start + 1.0:
            continue  # terminate() takes well under a second when nothing is jammed
        procs = list(getattr(pool, "_pool", ()) or ())
        for p in procs:  # terminate() may be stuck before it signals them
            if p.exitcode is None:
                p.kill()
                p.join(1.0)
        if all(p.exitcode is not None for p in procs):
            _unjam(pool, result_lock=not unjammed)
            unjammed = True
        if time.monotonic() > deadline:
            log.warning("the decode workers' pool did not stop in %.0f s; it ends with the process", POOL_STOP_S)
            return


def _unjam(pool, result_lock: bool) -> None:
    """Free the locks a dead worker can hold: the task queue's read lock (an idle worker waits for a
    task holding it) and, when `result_lock`, the result queue's write lock (a worker killed
    mid-result). Only called once every worker is dead, so no valid holder is left but the stopping
    thread itself. The result lock is looked at once per stop: a jammed one has its half-written
    result drained *before* it is released — after the release, terminate() writes the result
    handler's sentinel into that pipe, and a drain then would steal it and leave terminate() waiting
    for the handler forever (seen once under load in CI)."""
    rlock = getattr(getattr(pool, "_inqueue", None), "_rlock", None)
    if rlock is not None and not rlock.acquire(timeout=0.1):
        _release(rlock)  # held by a dead worker, or by terminate() itself, which never releases it
    elif rlock is not None:
        rlock.release()
    wlock = getattr(getattr(pool, "_outqueue", None), "_wlock", None)
    if not result_lock or wlock is None:
        return
    if wlock.acquire(timeout=0.25):  # free: nothing is half-written, nothing to drain
        wlock.release()
        return
    try:  # jammed by a dead worker: nobody writes the pipe until the lock is released
        fd = pool._outqueue._reader.fileno()
        os.set_blocking(fd, False)
        try:
            while os.read(fd, 1 << 16):
                pass
        except BlockingIOError:
            pass
        finally:
            os.set_blocking(fd, True)
    except (AttributeError, OSError, ValueError):
        pass
    _release(wlock)


def _release(lock) -> None:
    try:
        lock.release()
    except ValueError:  # released already
        pass


def collect(results: Iterator, bounds: list[tuple[int, int]], buf, start: int, total: int) -> Generator[float, None, Merged]:
    """Chunk results in file order, merged as they arrive; a failed chunk (bad cut) is decoded again
    here, merged with the chunks that follow until the merged range decodes (the last is salvaged)."""
    out = Merger()
    pending = None
    n = len(bounds)
    for k, res in enumerate(results):
        a, b = bounds[k]
        if res is None or pending is not None:
            a = a if pending is None else pending
            text = kineto.chunk_text(buf, a, b)
            try:
                # a first failure may be a bad cut (a separator inside a string): merged with the
                # next chunk it decodes; a second one is corrupt data: salvage what decodes
                res = decode_chunk_columns(text, last=k == n - 1, salvage=pending is not None or k == n - 1)
                pending = None
            except ValueError:
                pending = a
                continue
            finally:
                del text
            a += _leading_blank(buf, a, b)  # chunk_text strips it: offsets count from the first event
        _file_offsets(res, a)
        if not out.n_chunks:  # row columns sized from the first chunk's density (grown if short)
            out.expect_rows = expected_rows(len(res.rows["ts"]), b - a, total)
        out.add(res)
        del res
        yield (b - start) / total
    return out.finish()


def expected_rows(rows: int, nbytes: int, total: int) -> int:
    """Rows of the whole events array, estimated from one chunk's (1.5x: an overestimate costs only
    untouched address space, a short one a copy of what was merged so far)."""
    return int(rows / max(nbytes, 1) * total * 1.5) + 4096


def _leading_blank(buf, a: int, b: int) -> int:
    mv = memoryview(buf)
    k = a
    while k < b and mv[k] in b" \t\r\n,":
        k += 1
    return k - a


def _file_offsets(res: ChunkColumns, a: int) -> None:
    """Skipped-event marks carry offsets in the `[`-prefixed chunk text: make them file offsets."""
    if any(w.startswith(CORRUPT_MARK) for w in res.warnings):
        res.warnings[:] = [f"{CORRUPT_MARK}{int(w[len(CORRUPT_MARK):]) + a - 1}" if w.startswith(CORRUPT_MARK) else w
                           for w in res.warnings]


def _work_local(buf, task) -> ChunkColumns | None:
    a, b, last, _ = task
    try:
        return decode_range(buf, a, b, last, _PIN)
    except ValueError:
        return None
