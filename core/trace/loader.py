"""`iter_load(path)`: the one way to open a trace. A generator: yields Progress, returns a TraceSet.

    gen = iter_load(path)
    try:
        while True:
            progress = next(gen)          # Progress(stage, fraction)
    except StopIteration as stop:
        trace_set = stop.value

Stop iterating (or call gen.close()) to cancel; nothing is left running. `load(path)` runs it to
the end. Errors are TraceParseError with a one-line reason.
"""
from __future__ import annotations

import gc
import mmap
import threading
import time
from collections.abc import Generator
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from core.generators import result_of
from core.trace import io
from core.trace.alloc import trim, tune_malloc
from core.trace.model import TraceModel, TraceParseError, TraceSet

TRIM_AFTER_ROWS = 1_000_000  # models this big give the load's freed heap pages back when built


@dataclass(frozen=True, slots=True)
class Progress:
    stage: str  # "reading", "decoding", "building", "cache"
    fraction: float  # 0..1 over the whole load
    detail: str = ""


def load(path: str | Path, use_cache: bool = True) -> TraceSet:
    return result_of(iter_load(path, use_cache=use_cache))


def iter_load(path: str | Path, use_cache: bool = True,
              deferred: list | None = None) -> Generator[Progress, None, TraceSet]:
    """`deferred`: a list that receives (source path, model) of every parsed file instead of writing it
    to the cache; the caller writes them (`cache.store_soon`) when it is ready to (the window: after
    its first-paint indexes)."""
    t0 = time.perf_counter()
    tune_malloc()
    found = io.discover(path)
    n_files = len(found.sources)
    models: list[TraceModel] = []
    failed: list[TraceParseError] = []
    hits = 0
    pinned = use_cache and n_files > 1
    if pinned:  # the run's own stores never evict its other files' entries (the bound scales with the input)
        from core.trace import cache
        cache.pin_run([s.path for s in found.sources])
    try:
        for i, src in enumerate(found.sources):
            lo, hi = i / n_files, (i + 1) / n_files
            try:
                model, hit = yield from _load_source(src, lo, hi, use_cache, deferred)
            except TraceParseError as exc:
                if n_files == 1:
                    raise
                failed.append(exc)  # one bad rank / cycle: load the others, say which failed
                yield Progress("reading", hi, src.path.name)
                continue
            hits += hit
            models.append(model)
    finally:
        if pinned:
            cache.pin_run(())
    if not models:
        first = failed[0]
        raise TraceParseError(found.root, f"none of the {n_files} trace files could be read "
                                          f"({Path(first.path).name}: {first.reason})")
    skipped = [f"{_rel(found.root, exc.path)}: not loaded ({exc.reason})" for exc in failed]
    trace_set = assemble(str(found.root), models, found, skipped)
    return _replace_timing(trace_set, time.perf_counter() - t0, hits == n_files)


def _rel(root: Path, path) -> str:
    try:
        return str(Path(path).relative_to(root))
    except ValueError:
        return Path(path).name


def _load_source(src: io.TraceSource, lo: float, hi: float, use_cache: bool,
                 deferred: list | None = None) -> Generator[Progress, None, tuple[TraceModel, bool]]:
    """One file's model (from the cache or parsed) and whether it was a cache hit."""
    model = None
    miss_why = None
    if use_cache:
        from core.trace import cache
        model = cache.load(src.path)
        miss_why = cache.unreadable_reason(src.path) if model is None else None
    if model is not None:
        yield Progress("cache", hi, src.path.name)
    hit = model is not None
    if model is None:
        try:
            model = yield from _load_file(src, lo, hi)
        except MemoryError:
            raise TraceParseError(src.path, "out of memory while loading this trace") from None
        if use_cache and deferred is not None:
            deferred.append((src.path, model))
        elif use_cache:
            from core.trace import cache
            yield Progress("cache", hi, src.path.name)
            cache.store_soon(src.path, model)
        if miss_why:  # a warm open that had to parse says so (not kept in the entry it rewrote)
            model = replace(model, warnings=tuple(model.warnings) + (miss_why,))
    if src.rank_hint is not None and model.meta.distributed_info is None:
        model = replace(model, rank=src.rank_hint)
    return model, hit


def _replace_timing(ts: TraceSet, load_s: float, cache_hit: bool) -> TraceSet:
    return replace(ts, load_s=load_s, cache_hit=cache_hit)


def _load_file(src: io.TraceSource, lo: float, hi: float) -> Generator[Progress, None, TraceModel]:
    # the parse path's modules (msgspec, multiprocessing) load only on a cache miss
    from core.trace import gzstream, kineto, parallel
    from core.trace.build import build_model

    path = src.path
    span = hi - lo
    yield Progress("reading", lo, path.name)
    streamed = yield from _scaled(gzstream.decode_streamed(path), "decoding", lo, span * 0.8, path.name)
    if streamed is not None:
        buf, doc, merged = streamed
    else:
        buf = io.read_bytes(path)
    closer = None
    try:
        if streamed is None:
            try:
                doc = kineto.locate(buf)
            except kineto.NotATrace as exc:
                raise TraceParseError(path, str(exc)) from None
            if doc is None:
                raise TraceParseError(path, _not_a_trace_reason(buf))
            yield Progress("decoding", lo + span * 0.05, path.name)
            merged = yield from _scaled(parallel.decode_chunks(buf, doc, path, io.is_file_map(buf)),
                                        "decoding", lo + span * 0.05, span * 0.75, path.name)
        warnings: list[str] = [] if doc.complete else ["file is truncated (crashed run?): loaded every complete event"]
        if doc.complete:  # the events array is closed: a last event that did not decode is corrupt, not cut off
            merged.warnings[:] = ["the last event is corrupt: skipped" if w.startswith("file is truncated") else w
                                  for w in merged.warnings]
        yield Progress("building", lo + span * 0.8, path.name)
        if isinstance(buf, mmap.mmap):  # the bytes are no longer needed: unmap them while building
            closer = _close_in_background(buf)
        gc_was = gc.isenabled()
        gc.disable()
        try:
            if merged.n_events == 0 and not doc.meta:
                raise TraceParseError(path, "no trace events found")
            model = build_model(merged, doc.meta, str(path), warnings)
            del merged
            if len(model.slices) >= TRIM_AFTER_ROWS:
                trim()  # the load's freed temporaries (scanner arenas too) need not stay in RSS
        finally:
            if gc_was:
                gc.enable()
    finally:
        if closer is not None:
            closer.join()
        elif isinstance(buf, mmap.mmap):
            _close(buf)
    yield Progress("building", hi, path.name)
    return model


def _close(buf: mmap.mmap) -> None:
    try:
        buf.close()
    except BufferError:  # a view is still alive somewhere; the mmap closes with it
        pass


def _close_in_background(buf: mmap.mmap) -> threading.Thread:
    """Unmapping a big buffer (30 ms for gpt_big's 136 MB) overlaps the model build: munmap runs
    without the GIL. Joined before the file's load returns, so no thread outlives it (forking
    workers for the next file needs a single-threaded process)."""
    t = threading.Thread(target=_close, args=(buf,), name="ptprof-unmap", daemon=True)
    t.start()
    return t


def _scaled(gen: Generator, stage: str, lo: float, span: float, detail: str):
    """Run a generator yielding fractions, re-yielding them as Progress; returns its value.
    Closing this generator closes `gen` (which stops its workers)."""
    try:
        while True:
            frac = next(gen)
            yield Progress(stage, lo + span * frac, detail)
    except StopIteration as stop:
        return stop.value
    finally:
        gen.close()


def _not_a_trace_reason(buf) -> str:
    head = bytes(memoryview(buf)[:256]).lstrip()
    if not head:
        return "file is empty"
    if head[:1] not in (b"{", b"["):
        return "not JSON (expected a PyTorch profiler trace, *.pt.trace.json[.gz])"
    return "JSON without traceEvents: not a PyTorch profiler / Chrome trace"


def assemble(root: str, models: list[TraceModel], found: io.Discovered | None = None,
             skipped: list[str] | None = None) -> TraceSet:
    """Put models on one time base (earliest model start = 0) and attach bundle extras.
    `skipped`: one warning per file of the folder that could not be read."""
    bases = [m.meta.base_unix_ns for m in models]
    base = min(bases) if bases else 0
    shifted = []
    for m in models:
        delta = m.meta.base_unix_ns - base if m.meta.base_unix_ns and base else 0
        shifted.append(shift_model(m, delta) if delta else m)
    shifted.sort(key=lambda m: (m.rank, m.path))
    warnings: list[str] = list(skipped or ())
    ranks = [m.rank for m in shifted]
    if len(shifted) > 1 and len(set(ranks)) != len(ranks) and found is not None and found.kind != "bundle" \
            and not all(io.cycle_of_name(Path(m.path).name) is not None for m in shifted):  # cycles, not workers
        warnings.append("several traces share one rank (TensorBoard workers/spans): shown side by side")
    extras = {}
    if found is not None:
        from core.trace import extras as ex
        extras = ex.load_extras(found, base)
    if extras.get("bundle") and any(not m.meta.device_properties for m in shifted):
        from core.trace.bundle_devices import device_properties
        props = device_properties(extras["bundle"])
        if props:  # a GPU trace without deviceProperties: the run's own record of its GPUs
            shifted = [replace(m, meta=replace(m.meta, device_properties=props))
                       if not m.meta.device_properties and _has_gpu(m) else m for m in shifted]
    return TraceSet(path=root, models=tuple(shifted), base_unix_ns=base, warnings=tuple(warnings), **extras)


def _has_gpu(m: TraceModel) -> bool:
    return bool(m.devices) or bool(len(m.memory) and (m.memory.device_type != 0).any())


def shift_model(m: TraceModel, delta_ns: int) -> TraceModel:
    d = np.int64(delta_ns)
    sl = m.slices.with_columns(ts_ns=m.slices.ts_ns + d)
    mem = replace(m.memory, ts_ns=m.memory.ts_ns + d)
    ins = replace(m.instants, ts_ns=m.instants.ts_ns + d)
    cnt = replace(m.counters, ts_ns=m.counters.ts_ns + d)
    st = replace(m.steps, ts_ns=m.steps.ts_ns + d)
    meta = replace(m.meta, base_unix_ns=m.meta.base_unix_ns - delta_ns)
    return replace(m, slices=sl, memory=mem, instants=ins, counters=cnt, steps=st, meta=meta)
