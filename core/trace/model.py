"""Columnar, immutable trace model (modelled on Perfetto's tables and HTA's symbol table).

All timestamps are int64 nanoseconds relative to the owning TraceSet's time base
(`TraceSet.base_unix_ns` + ts_ns = wall-clock ns). Every string column holds ids into
`TraceModel.strings`. Slices are sorted by (track, ts_ns, -dur_ns); `SliceTable.track_offsets`
gives each track's row range, so per-track queries are a slice of the arrays.
"""
from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field, fields
from enum import IntEnum
from pathlib import Path
from typing import Any

import numpy as np

from core.compat import Weakrefable
from core.trace.devprops import device_props
from core.trace.slices import NONE, SliceTable  # noqa: F401 - NONE: "missing" in integer arg columns (-1)
from core.trace.strings import StringTable


class Kind(IntEnum):
    """What a slice is. Stored as int8 in SliceTable.kind."""

    OTHER = 0
    KERNEL = 1
    MEMCPY = 2
    MEMSET = 3
    CPU_OP = 4
    RUNTIME = 5  # cuda_runtime: cudaLaunchKernel, cudaMemcpyAsync, cudaStreamSynchronize ...
    DRIVER = 6  # cuda_driver: cuLaunchKernel ...
    PYTHON = 7  # python_function (with_stack=True)
    ANNOTATION = 8  # user_annotation: record_function, ProfilerStep#N
    GPU_ANNOTATION = 9  # gpu_user_annotation: record_function ranges projected on a stream
    TRACE = 10  # profiler's own spans (cat "Trace", pid "Spans")
    COLLECTIVE = 11  # cpu-side collective ops (c10d / nccl / gloo record functions)


GPU_KINDS = (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET)

# Every category Kineto writes (libkineto ActivityType.h `toString` names, plus the older capitalised and
# "operator"/"runtime" spellings) -> Kind. Device work: CUDA and ROCm (roctracer writes the CUDA names),
# XPU (same device names, xpu_runtime / xpu_driver), MTIA (mtia_ccp_events = device kernels, mtia_runtime =
# host launches), PrivateUse1 backends (kernel / gpu_memcpy on the device, privateuse1_runtime / _driver).
# One lookup for both decode paths (core.trace.colvals._kinds, on the scanner's and msgspec's columns).
CATEGORY_KIND: dict[str, Kind] = {
    "kernel": Kind.KERNEL,
    "Kernel": Kind.KERNEL,
    "mtia_ccp_events": Kind.KERNEL,
    "gpu_memcpy": Kind.MEMCPY,
    "Memcpy": Kind.MEMCPY,
    "gpu_memset": Kind.MEMSET,
    "Memset": Kind.MEMSET,
    "cpu_op": Kind.CPU_OP,
    "operator": Kind.CPU_OP,  # older Kineto
    "hpu_op": Kind.CPU_OP,  # Intel Gaudi: host-side ops of the HPU bridge
    "cuda_runtime": Kind.RUNTIME,
    "runtime": Kind.RUNTIME,
    "Runtime": Kind.RUNTIME,  # older Kineto: launch calls had no launch links (issue 28)
    "mtia_runtime": Kind.RUNTIME,
    "xpu_runtime": Kind.RUNTIME,
    "privateuse1_runtime": Kind.RUNTIME,
    "cuda_driver": Kind.DRIVER,
    "xpu_driver": Kind.DRIVER,
    "privateuse1_driver": Kind.DRIVER,
    "python_function": Kind.PYTHON,
    "user_annotation": Kind.ANNOTATION,
    "gpu_user_annotation": Kind.GPU_ANNOTATION,
    "trace": Kind.TRACE,
    "Trace": Kind.TRACE,
}
# Categories Kineto writes that are neither device work nor ops we model: kept as Kind.OTHER silently.
KNOWN_OTHER_CATEGORIES = frozenset({
    "external_correlation", "cpu_instant_event", "overhead", "mtia_insight", "mtia_counters", "cuda_sync",
    "cuda_event", "glow_runtime", "cuda_profiler_range", "collective_comm", "xpu_scope_profiler", "xpu_sync",
    "ac2g", "fwdbwd", "async", "ProfilerStep", "",
})


def unknown_categories(categories) -> list[str]:
    """The categories (of Kind.OTHER rows) that no Kineto version we know writes, sorted."""
    return sorted(c for c in set(categories) if c not in CATEGORY_KIND and c not in KNOWN_OTHER_CATEGORIES)


class TrackKind(IntEnum):
    CPU_THREAD = 0
    GPU_STREAM = 1
    GPU_ANNOTATION = 2
    SPANS = 3  # profiler spans, string pids ("Spans", "Traces")
    PYTHON = 4  # python_function frames of one CPU thread (with_stack=True), nested by their own stack
    STEPS = 5  # ProfilerStep#N annotations of one CPU thread (they overlap python frames and hooks)


class FlowKind(IntEnum):
    LAUNCH = 0  # CPU runtime call -> GPU kernel/memcpy/memset (correlation id)
    FWD_BWD = 1  # forward op -> backward op (sequence number / fwdbwd flow events)


def _cols(obj) -> dict[str, np.ndarray]:
    return {f.name: getattr(obj, f.name) for f in fields(obj) if isinstance(getattr(obj, f.name), np.ndarray)}


@dataclass(frozen=True, slots=True)
class TrackTable:
    kind: np.ndarray  # int8 TrackKind
    pid: np.ndarray  # int64 (string pids get negative synthetic ids)
    tid: np.ndarray  # int64 thread id, or stream id on GPU tracks
    device: np.ndarray  # int16 GPU device, NONE for CPU
    label: np.ndarray  # int32 string id: "thread 465 (pt_autograd_0)", "GPU 0 · stream 7"
    sort_index: np.ndarray  # int64 ordering hint from metadata events
    max_depth: np.ndarray  # int16 deepest depth/lane on the track

    def __len__(self) -> int:
        return len(self.kind)

    def columns(self) -> dict[str, np.ndarray]:
        return _cols(self)


@dataclass(frozen=True, slots=True)
class MemoryTable:
    """`[memory]` instant events (profile_memory=True), time ordered."""

    ts_ns: np.ndarray  # int64
    device: np.ndarray  # int16 device id (-1 = CPU)
    device_type: np.ndarray  # int8 (0 CPU, 1 CUDA)
    bytes: np.ndarray  # int64 (+alloc / -free)
    total_allocated: np.ndarray  # int64
    total_reserved: np.ndarray  # int64
    addr: np.ndarray  # int64
    track: np.ndarray  # int32 CPU thread that allocated

    def __len__(self) -> int:
        return len(self.ts_ns)

    def columns(self) -> dict[str, np.ndarray]:
        return _cols(self)


@dataclass(frozen=True, slots=True)
class InstantTable:
    """Other instant events (ph i/I/R/n): profiler markers, cpu_instant_event, ..."""

    ts_ns: np.ndarray
    track: np.ndarray
    name: np.ndarray

    def __len__(self) -> int:
        return len(self.ts_ns)

    def columns(self) -> dict[str, np.ndarray]:
        return _cols(self)


@dataclass(frozen=True, slots=True)
class CounterTable:
    """Counter samples (ph C events, NVML samples): one row per (series, time)."""

    ts_ns: np.ndarray  # int64
    series: np.ndarray  # int32 string id of "<name>/<key>"
    value: np.ndarray  # float64

    def __len__(self) -> int:
        return len(self.ts_ns)

    def columns(self) -> dict[str, np.ndarray]:
        return _cols(self)


@dataclass(frozen=True, slots=True)
class FlowTable:
    src: np.ndarray  # int64 slice row (CPU launch / forward op)
    dst: np.ndarray  # int64 slice row (GPU event / backward op)
    kind: np.ndarray  # int8 FlowKind

    def __len__(self) -> int:
        return len(self.src)

    def columns(self) -> dict[str, np.ndarray]:
        return _cols(self)


@dataclass(frozen=True, slots=True)
class StepTable:
    """`ProfilerStep#N` spans, time ordered."""

    number: np.ndarray  # int64 N
    ts_ns: np.ndarray  # int64
    dur_ns: np.ndarray  # int64
    slice: np.ndarray  # int64 row in SliceTable

    def __len__(self) -> int:
        return len(self.number)

    def columns(self) -> dict[str, np.ndarray]:
        return _cols(self)


@dataclass(frozen=True, slots=True)
class TraceMeta:
    trace_name: str = ""
    schema_version: int | None = None
    base_unix_ns: int = 0  # wall clock of this file's ts origin (baseTimeNanoseconds, or 0 for absolute µs traces)
    device_properties: tuple[dict, ...] = ()
    distributed_info: dict | None = None
    profiler_options: dict = field(default_factory=dict)  # with_stack, profile_memory, record_shapes, ...
    versions: dict = field(default_factory=dict)  # cuda_driver_version, cuda_runtime_version, cupti_version, ...
    extra: dict = field(default_factory=dict)  # any other top-level key (prof.add_metadata values land here)

    def device_total_memory(self, device: int) -> int | None:
        for p in self.device_properties:
            if p.get("id") == device:
                return p.get("totalGlobalMem")
        return None

    def to_json(self) -> dict:
        return {
            "trace_name": self.trace_name,
            "schema_version": self.schema_version,
            "base_unix_ns": self.base_unix_ns,
            "device_properties": list(self.device_properties),
            "distributed_info": self.distributed_info,
            "profiler_options": self.profiler_options,
            "versions": self.versions,
            "extra": self.extra,
        }

    @classmethod
    def from_json(cls, d: dict) -> TraceMeta:
        """From a cache entry's meta (not trusted: the same checks as a trace header's, wrong types dropped)."""
        def obj(v):
            return v if isinstance(v, dict) else {}
        return cls(
            trace_name=d.get("trace_name", "") if isinstance(d.get("trace_name", ""), str) else "",
            schema_version=d.get("schema_version"),
            base_unix_ns=int(d.get("base_unix_ns", 0)),
            device_properties=device_props(d.get("device_properties")),
            distributed_info=d.get("distributed_info") if isinstance(d.get("distributed_info"), dict) else None,
            profiler_options=obj(d.get("profiler_options")),
            versions=obj(d.get("versions")),
            extra=obj(d.get("extra")),
        )


@dataclass(frozen=True, slots=True)
class EventCounts:
    """Counts of input events by category (complete events only), as plain json would count them."""

    events: int = 0
    kernels: int = 0
    memcpy: int = 0
    memset: int = 0
    cpu_ops: int = 0
    python: int = 0
    runtime: int = 0
    memory: int = 0  # [memory] instant events

    def __add__(self, other: EventCounts) -> EventCounts:
        return EventCounts(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))


_SPANS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # TraceModel -> span_ns (models never change)
_SPANS_LOCK = threading.Lock()  # the load worker fills it, the UI thread and rule workers read it


@dataclass(frozen=True, slots=True, eq=False)
class TraceModel(Weakrefable):  # a key of weak maps (_SPANS, analyses)
    """One trace file (one rank, one profiler cycle)."""

    path: str
    rank: int
    strings: StringTable
    slices: SliceTable
    tracks: TrackTable
    memory: MemoryTable
    instants: InstantTable
    counters: CounterTable
    flows: FlowTable
    steps: StepTable
    meta: TraceMeta
    counts: EventCounts
    warnings: tuple[str, ...] = ()

    # --- convenience lookups (cheap; heavy queries live in core.trace.query) ---------------
    def name(self, row: int) -> str:
        return self.strings[self.slices.name[row]]

    def track_rows(self, track: int) -> slice:
        off = self.slices.track_offsets
        return slice(int(off[track]), int(off[track + 1]))

    def track_label(self, track: int) -> str:
        return self.strings[self.tracks.label[track]]

    @property
    def span_ns(self) -> tuple[int, int]:
        """(first start, last end), computed once per model (a pass over every slice: 60 ms at 4M
        slices, ~0.5 s at 37M; the window asks for it several times while it builds a view)."""
        with _SPANS_LOCK:
            got = _SPANS.get(self)
        if got is None:
            got = self._span_ns()
            with _SPANS_LOCK:
                _SPANS[self] = got
        return got

    def _span_ns(self) -> tuple[int, int]:
        """In row pieces: no n-sized ts + dur temporary (300 MB of fresh pages at 37M slices, 0.85 s of
        a warm `ptprof info` on the 10 GB trace)."""
        s = self.slices
        n = len(s)
        if n == 0:
            return (0, 0)
        piece = 1 << 22
        buf = np.empty(min(n, piece), dtype=np.int64)
        t0 = t1 = None
        for p0 in range(0, n, piece):
            ts = s.ts_ns[p0:p0 + piece]
            part = buf[:len(ts)]
            np.add(ts, s.dur_ns[p0:p0 + piece], out=part)
            lo, hi = int(ts.min()), int(part.max())
            t0, t1 = (lo, hi) if t0 is None else (min(t0, lo), max(t1, hi))
        return t0, t1

    @property
    def devices(self) -> list[int]:
        gpu = self.tracks.device[self.tracks.device >= 0]  # noqa: E501
        return sorted(set(gpu.tolist()))

    def kind_mask(self, *kinds: Kind) -> np.ndarray:
        return np.isin(self.slices.kind, np.asarray(kinds, dtype=np.int8))


class SetQueries:
    """What a set of per-rank models answers from its `models` and `warnings`: shared by TraceSet and the
    map/reduce's RunView (core/ranks/views.py), whose models are views of ranks held elsewhere."""

    __slots__ = ()

    @property
    def primary(self):
        return self.models[0]

    @property
    def ranks(self) -> list[int]:
        return sorted({m.rank for m in self.models})

    @property
    def counts(self) -> EventCounts:
        total = EventCounts()
        for m in self.models:
            total = total + m.counts
        return total

    @property
    def all_warnings(self) -> list[str]:
        out = list(self.warnings)
        for m in self.models:
            prefix = f"{Path(m.path).name}: " if len(self.models) > 1 else ""
            out.extend(prefix + w for w in m.warnings)
        return out


@dataclass(frozen=True, slots=True, eq=False)
class TraceSet(SetQueries, Weakrefable):  # a key of weak maps (analyses)
    """What a load returns: one or more TraceModels (ranks / workers / cycles) on one time base.

    base_unix_ns + ts_ns is wall clock for every model (so NVML samples align with the trace).
    """

    path: str
    models: tuple[TraceModel, ...]
    base_unix_ns: int = 0
    warnings: tuple[str, ...] = ()
    bundle: dict[str, Any] | None = None  # run.json of a run bundle, when loaded from one
    nvml: CounterTable | None = None  # NVML samples (bundle nvml.csv / sibling *.nvml.csv), ts_ns on the set's base
    nvml_strings: StringTable | None = None
    compile_info: dict | None = None  # bundle compile.json
    cache_hit: bool = False
    load_s: float = 0.0

    @property
    def span_ns(self) -> tuple[int, int]:
        spans = [m.span_ns for m in self.models if len(m.slices)]
        if not spans:
            return (0, 0)
        return min(s[0] for s in spans), max(s[1] for s in spans)


class TraceParseError(Exception):
    """Input that cannot be loaded as a trace. `reason` is one line, fit to show a user."""

    def __init__(self, path: str | Path, reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


class LoadCancelled(Exception):
    """Raised inside a load generator when its consumer asked it to stop."""
