"""Big .json.gz traces: decompress in the parent while forked workers already decode chunks.

Decompression (ISA-L, ~0.75 GB/s here) is serial; decoding is parallel. Instead of inflating the
whole file first, the parent inflates into an anonymous *shared* mapping sized from the gzip
trailer (ISIZE), which the workers forked beforehand see, and hands out each chunk as soon as its
end separator has arrived. When the file does not fit that plan (no fork, multi-member gzip or
> 4 GiB, not Kineto's layout, corrupt or truncated stream), `decode_streamed` returns None having
left nothing running, and the caller takes the ordinary path (which also produces the errors).
"""
from __future__ import annotations

import gc
import logging
import mmap
import multiprocessing as mp
import os
import zlib
from collections.abc import Generator
from pathlib import Path

from core.trace import gunzip, io, kineto, parallel
from core.trace.limits import max_inflate_bytes
from core.trace.merge import Merged

log = logging.getLogger(__name__)

BLOCK = 4 << 20  # inflate granularity
MARGIN = 1 << 20  # look for a separator only this far behind what has arrived



Streamed = tuple[mmap.mmap, kineto.Document, Merged]


def decode_streamed(path: Path) -> Generator[float, None, Streamed | None]:
    size = io.isize(path)
    if parallel.scan_available():  # the C scanner: inflating first, then threads, is quicker
        return None
    if size is None or parallel.start_method() != "fork" or os.environ.get("PTPROF_GZ_STREAM", "1") == "0":
        return None
    if size > max_inflate_bytes():  # the ordinary path refuses it with the reason
        return None
    workers = parallel.worker_count(size, "fork")
    if not workers:
        return None
    chunk_bytes = int(min(kineto.CHUNK_BYTES, max(4 << 20, size // (workers * parallel.CHUNKS_PER_WORKER))))
    shm = mmap.mmap(-1, size + 1)
    ok = False
    pool = None
    views: list = [None]
    gc_was = gc.isenabled()
    gc.disable()
    try:
        parallel._BUF = shm
        pool = mp.get_context("fork").Pool(workers, initializer=parallel._init_worker, initargs=(None,))
        pending: list = []
        bounds: list[tuple[int, int]] = []
        pos, cut, start = 0, None, None
        view = views[0] = memoryview(shm)
        try:
            d = io._zlib.decompressobj(wbits=31)  # zlib objects: ~1.7x the speed of igzip's file reader
            with open(path, "rb") as fh:
                if not gunzip.short_header(fh):  # a 10 MB FNAME: the ordinary path's reader (gunzip.py)
                    return None
                fh.seek(0)
                while not d.eof:
                    data = d.unconsumed_tail or fh.read(BLOCK)
                    room = size + 1 - pos
                    if not data or room <= 0:
                        break
                    got = d.decompress(data, min(BLOCK, room))
                    view[pos:pos + len(got)] = got
                    pos += len(got)
                    if not got:
                        continue
                    if start is None:
                        m = kineto._TE_KEY.search(shm, 0, min(pos, 4 << 20))
                        if m is None:
                            if pos >= (4 << 20) or pos >= size:
                                return None
                            continue
                        start = m.end() - 1
                        cut = start + 1
                    while pos - cut > chunk_bytes + MARGIN:
                        sep = kineto._EVENT_SEP.search(shm, cut + chunk_bytes, pos)
                        if sep is None:
                            break
                        bounds.append((cut, sep.start() + 1))
                        pending.append(pool.apply_async(parallel._work, ((cut, sep.start() + 1, False, None),)))
                        cut = sep.end() - 1
                    yield 0.5 * pos / size
                if not d.eof or d.unused_data or fh.read(1):
                    return None  # truncated, or several gzip members: the ordinary path
        # corrupt / truncated: the ordinary path reports it
        except (OSError, EOFError, ValueError, zlib.error, io._IsalError) as exc:
            log.info("streamed gunzip of %s stopped (%s); using the ordinary path", path.name, exc)
            return None
        view.release()
        if pos != size or start is None:
            return None
        doc = kineto.locate(memoryview(shm)[:pos])
        if doc is None or doc.events_start != start or not doc.complete or (bounds and bounds[-1][1] > doc.events_end):
            return None
        end = doc.events_end - 1
        if cut < end:
            bounds.append((cut, end))
            pending.append(pool.apply_async(parallel._work, ((cut, end, True, None),)))
        log.info("decoding %d chunks of %s in %d workers while inflating", len(bounds), path.name, workers)
        total = max(1, doc.events_end - doc.events_start)
        results = (r.get() for r in pending)
        gen = parallel.collect(results, bounds, shm, doc.events_start, total)
        try:
            while True:
                frac = next(gen)
                yield 0.5 + 0.5 * frac
        except StopIteration as stop:
            merged = stop.value
        ok = True
        return shm, doc, merged
    finally:
        parallel._BUF = None
        parallel._PIN.clear()
        if pool is not None:
            pool.terminate()
            pool.join()
        if views[0] is not None:
            views[0].release()
        if not ok:
            try:
                shm.close()
            except BufferError:  # a view is still alive (an exception traceback): freed with it
                pass
        if gc_was:
            gc.enable()
