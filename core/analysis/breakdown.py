"""Per-step "where does the time go": GPU compute, memcpy, and the idle time split by its cause.

Every step window is divided so the parts add up to the step duration:
  compute_ns      compute kernels running (union over streams; every kernel that is not communication)
  comm_ns         only communication kernels running (NCCL / RCCL / HCCL collectives; no compute kernel)
  memcpy_ns       only copies/memsets running (no kernel)
  dataloader_ns   GPU idle while the CPU is in DataLoader `__next__`
  compile_ns      GPU idle while torch.compile itself runs (dynamo / inductor / autotuning)
  comm_wait_ns    GPU idle while a CPU-side collective runs (gloo / c10d ops)
  sync_wait_ns    GPU idle after a host synchronisation drained the queue (until the next GPU work)
  host_wait_ns    other GPU idle where the CPU had not queued the next GPU work yet: its launch (the runtime
                  call linked by correlation) started after the GPU went idle
  kernel_wait_ns  other GPU idle although the next work was already launched, in a gap shorter than
                  `kernel_wait_max_ns` (launch / back-to-back kernel latency)
  other_idle_ns   other GPU idle although the next work was already launched, in a gap of at least
                  `kernel_wait_max_ns` (waits on events / other streams / the host that the trace does not name)
The host wait / kernel wait / other split is HTA's idle time breakdown (hta/analyzers/breakdown_analysis.py
`_analyze_idle_time_for_stream`: host wait when the next kernel's runtime call started after the previous
kernel ended; else kernel wait when the gap is under `consecutive_kernel_delay` (30 µs); else other), applied
to the gaps of the GPU busy union rather than per stream, after our named causes took their share; a gap
whose next GPU event has no launch link falls back to its length (at least `kernel_wait_max_ns`: host wait).
Communication kernels are HTA's `CommunicateKernelGroupingPattern` (names starting nccl / rccl / hccl, or
holding ncclKernel / ncclDevKernel); compute takes priority where both run (HTA's temporal breakdown).
CPU-only traces get has_gpu=False and all GPU parts zero; dataloader_cpu_ns (CPU time in DataLoader
`__next__`) is filled for every trace.

The step windows come in as an argument (`windows`: (number, t0_ns, t1_ns)); by default they are
`core.analysis.steps.breakdown_windows` (each step's GPU span, tiling the GPU timeline, where it has GPU work;
its ProfilerStep span otherwise), so another step definition plugs in without touching this module.
`default_windows` stays the ProfilerStep spans (CPU-side per-step counts use it).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core import resource_files
from core.analysis import intervals
from core.analysis.derived import cached
from core.analysis.steps import breakdown_windows, gpu_busy_union, step_windows
from core.trace import event_names
from core.trace.model import GPU_KINDS, FlowKind, Kind, TraceModel

SYNC_NAMES = event_names.SYNC_CALLS
# the one kernel-wait bound (HTA's consecutive_kernel_delay): resources/rules.toml [gpu_idle] kernel_wait_max_ns
DEFAULT_KERNEL_WAIT_MAX_NS = int(resource_files.load_toml("rules.toml")["gpu_idle"]["kernel_wait_max_ns"])

PARTS = ("compute_ns", "comm_ns", "memcpy_ns", "dataloader_ns", "compile_ns", "comm_wait_ns", "sync_wait_ns",
         "host_wait_ns", "kernel_wait_ns", "other_idle_ns")


def comm_kernel_mask(model: TraceModel) -> np.ndarray:
    """Per slice row: a communication (collective) kernel (cached per model)."""
    def compute():
        s = model.slices
        ids = model.strings.ids_matching(event_names.is_comm_kernel)
        return (s.kind == Kind.KERNEL) & np.isin(s.name, ids)
    return cached(model, "comm_kernel_mask", compute)


Windows = tuple  # (number int64, t0_ns int64, t1_ns int64)


def default_windows(model: TraceModel) -> Windows:
    number, w0, w1, _ = step_windows(model)
    return np.asarray(number, np.int64), np.asarray(w0, np.int64), np.asarray(w1, np.int64)


def gpu_default_windows(model: TraceModel) -> Windows:
    """The breakdown's default: windows on the GPU timeline (core.analysis.step_times)."""
    number, w0, w1, _ = breakdown_windows(model)
    return np.asarray(number, np.int64), np.asarray(w0, np.int64), np.asarray(w1, np.int64)


def _windows_key(windows: Windows | None) -> str:
    if windows is None:
        return "steps"
    return "w" + str(hash((np.asarray(windows[1], np.int64).tobytes(), np.asarray(windows[2], np.int64).tobytes())))


@dataclass(frozen=True, slots=True)
class StepBreakdown:
    number: np.ndarray  # int64 step number (-1: whole trace)
    ts_ns: np.ndarray
    dur_ns: np.ndarray
    compute_ns: np.ndarray
    comm_ns: np.ndarray
    memcpy_ns: np.ndarray
    dataloader_ns: np.ndarray
    compile_ns: np.ndarray
    comm_wait_ns: np.ndarray
    sync_wait_ns: np.ndarray
    host_wait_ns: np.ndarray
    kernel_wait_ns: np.ndarray
    other_idle_ns: np.ndarray
    dataloader_cpu_ns: np.ndarray  # CPU time inside DataLoader __next__ (inside the ProfilerStep window)
    has_gpu: bool

    def __len__(self) -> int:
        return len(self.number)

    @property
    def idle_ns(self) -> np.ndarray:
        return (self.dataloader_ns + self.compile_ns + self.comm_wait_ns + self.sync_wait_ns + self.host_wait_ns
                + self.kernel_wait_ns + self.other_idle_ns)

    @property
    def busy_ns(self) -> np.ndarray:
        return self.compute_ns + self.comm_ns + self.memcpy_ns

    def parts(self) -> dict[str, np.ndarray]:
        return {p: getattr(self, p) for p in PARTS}

    def totals(self) -> dict[str, int]:
        return {p: int(getattr(self, p).sum()) for p in PARTS} | {"dur_ns": int(self.dur_ns.sum())}


def dataloader_intervals(model: TraceModel) -> tuple[np.ndarray, np.ndarray]:
    s = model.slices
    ids = model.strings.ids_matching(event_names.is_dataloader_next)
    m = np.isin(s.name, ids)
    return intervals.union(s.ts_ns[m], s.ts_ns[m] + s.dur_ns[m])


def compile_windows(model: TraceModel) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint intervals where torch.compile itself runs (dynamo tracing, inductor, autotuning; cached)."""
    return cached(model, "compile_windows", lambda: _named_intervals(model, event_names.is_compile_event))


def _named_intervals(model: TraceModel, predicate) -> tuple[np.ndarray, np.ndarray]:
    s = model.slices
    m = np.isin(s.name, model.strings.ids_matching(predicate))
    return intervals.union(s.ts_ns[m], s.ts_ns[m] + s.dur_ns[m])


def sync_drain_intervals(model: TraceModel) -> tuple[np.ndarray, np.ndarray]:
    """[sync start, next GPU activity after the sync) for every host sync during which the GPU finished work."""
    s = model.slices
    ids = np.array([model.strings.find(n) for n in SYNC_NAMES])
    m = np.isin(s.name, ids[ids >= 0]) & (s.kind == Kind.RUNTIME)
    t0, t1 = s.ts_ns[m], s.ts_ns[m] + s.dur_ns[m]
    us, ue = gpu_busy_union(model)
    if not len(t0) or not len(us):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    drained = np.searchsorted(ue, t1, side="right") > np.searchsorted(ue, t0, side="right")
    i = np.searchsorted(us, t1, side="right")
    nxt = np.where(i < len(us), us[np.minimum(i, len(us) - 1)], t1)
    return intervals.union(t0[drained], np.maximum(nxt, t1)[drained])


def step_breakdown(model: TraceModel, kernel_wait_max_ns: int = DEFAULT_KERNEL_WAIT_MAX_NS,
                   windows: Windows | None = None) -> StepBreakdown:
    """Per-step breakdown; `windows` (number, t0_ns, t1_ns) defaults to the ProfilerStep windows."""
    key = f"breakdown:{kernel_wait_max_ns}:{_windows_key(windows)}"
    return cached(model, key, lambda: _breakdown(model, kernel_wait_max_ns,
                                                 gpu_default_windows(model) if windows is None else windows))


@dataclass(frozen=True, slots=True)
class IdlePieces:
    """GPU idle intervals over the whole trace, by cause (disjoint sorted unions, int64 ns)."""

    dataloader: tuple[np.ndarray, np.ndarray]
    compile: tuple[np.ndarray, np.ndarray]
    comm: tuple[np.ndarray, np.ndarray]
    sync: tuple[np.ndarray, np.ndarray]
    host_wait: tuple[np.ndarray, np.ndarray]
    kernel_wait: tuple[np.ndarray, np.ndarray]
    other: tuple[np.ndarray, np.ndarray]


def launch_ts_of_gpu(model: TraceModel) -> np.ndarray:
    """Per slice row: the start of the CPU runtime call that launched it (LAUNCH flow), -1 if none."""
    def compute():
        s, f = model.slices, model.flows
        out = np.full(len(s), -1, np.int64)
        launch = f.kind == FlowKind.LAUNCH
        out[f.dst[launch]] = s.ts_ns[f.src[launch]]
        return out
    return cached(model, "launch_ts_of_gpu", compute)


def idle_pieces(model: TraceModel, kernel_wait_max_ns: int = DEFAULT_KERNEL_WAIT_MAX_NS,
                windows: Windows | None = None) -> IdlePieces | None:
    """The GPU idle of the trace split by cause (None without GPU activity); cached per model."""
    key = f"idle_pieces:{kernel_wait_max_ns}:{_windows_key(windows)}"
    return cached(model, key, lambda: _idle_pieces(model, kernel_wait_max_ns,
                                                   gpu_default_windows(model) if windows is None else windows))


def _idle_pieces(model: TraceModel, kw_max: int, windows: Windows) -> IdlePieces | None:
    _, w0, w1 = windows
    bs, be = gpu_busy_union(model)
    if not len(bs):
        return None
    s = model.slices
    dl_s, dl_e = dataloader_intervals(model)
    # idle gaps over the whole span, split by cause in precedence order: dataloader, compile, collectives,
    # sync, then host wait / kernel wait
    t0 = int(min(np.min(w0), bs[0])) if len(w0) else int(bs[0])
    t1 = int(max(np.max(w1), be[-1])) if len(w1) else int(be[-1])
    gs, ge = intervals.gaps(bs, be, t0, t1)
    dls, dle = intervals.intersect(gs, ge, dl_s, dl_e)
    rs, re_ = intervals.subtract(gs, ge, dls, dle)
    cws, cwe = _named_intervals(model, event_names.is_compile_event)
    cps, cpe = intervals.intersect(rs, re_, cws, cwe)
    rs, re_ = intervals.subtract(rs, re_, cps, cpe)
    cms, cme = _named_intervals(model, event_names.is_collective_op)
    cos, coe = intervals.intersect(rs, re_, cms, cme)
    rs, re_ = intervals.subtract(rs, re_, cos, coe)
    ss, se = sync_drain_intervals(model)
    sys_, sye = intervals.intersect(rs, re_, ss, se)
    os_, oe = intervals.subtract(rs, re_, sys_, sye)
    # HTA's rule per original gap: host wait when the GPU work that ends the gap was launched after the
    # gap began (the CPU had not queued it); kernel wait when it was already queued
    gpu = np.flatnonzero(np.isin(s.kind, np.asarray(GPU_KINDS, np.int8)))
    gpu = gpu[np.argsort(s.ts_ns[gpu], kind="stable")]
    g_ts = s.ts_ns[gpu]
    j = np.searchsorted(g_ts, ge, side="left")
    found = (j < len(gpu)) & (g_ts[np.minimum(j, len(gpu) - 1)] == ge)
    launch = np.where(found, launch_ts_of_gpu(model)[gpu[np.minimum(j, len(gpu) - 1)]], -1)
    gap_host = np.where(launch >= 0, launch > gs, (ge - gs) > kw_max)
    gap_host |= ~found  # nothing follows inside the span: the CPU never queued more work
    gap_long = (ge - gs) >= kw_max  # HTA: kernel wait only under consecutive_kernel_delay, else "other"
    gi = np.searchsorted(gs, os_, side="right") - 1
    host = gap_host[gi] if len(os_) else np.zeros(0, bool)
    long = gap_long[gi] if len(os_) else np.zeros(0, bool)
    kernel = ~host & ~long
    other = ~host & long
    return IdlePieces(dataloader=(dls, dle), compile=(cps, cpe), comm=(cos, coe), sync=(sys_, sye),
                      host_wait=(os_[host], oe[host]), kernel_wait=(os_[kernel], oe[kernel]),
                      other=(os_[other], oe[other]))


def _breakdown(model: TraceModel, kw_max: int, windows: Windows) -> StepBreakdown:
    number, w0, w1 = (np.asarray(a, np.int64) for a in windows)
    n = len(w0)
    s = model.slices
    dl_s, dl_e = dataloader_intervals(model)
    _, c0, c1 = default_windows(model)  # a CPU-side share: inside the ProfilerStep windows
    dl_cpu = intervals.covered(dl_s, dl_e, c0, c1) if len(c0) == n else intervals.covered(dl_s, dl_e, w0, w1)
    z = np.zeros(n, np.int64)
    p = idle_pieces(model, kw_max, windows)
    if p is None:
        return StepBreakdown(number, w0, w1 - w0, z, z, z, z, z, z, z, z, z, z, dl_cpu, False)
    bs, be = gpu_busy_union(model)
    km = s.kind == Kind.KERNEL
    comm_rows = comm_kernel_mask(model)
    cm = km & ~comm_rows
    ks, ke = intervals.union(s.ts_ns[cm], s.ts_ns[cm] + s.dur_ns[cm])
    as_, ae = intervals.union(s.ts_ns[km], s.ts_ns[km] + s.dur_ns[km])
    busy = intervals.covered(bs, be, w0, w1)
    compute = intervals.covered(ks, ke, w0, w1)
    any_kernel = intervals.covered(as_, ae, w0, w1)

    def cov(pair):
        return intervals.covered(pair[0], pair[1], w0, w1)

    return StepBreakdown(number=number, ts_ns=w0, dur_ns=w1 - w0, compute_ns=compute, comm_ns=any_kernel - compute,
                         memcpy_ns=busy - any_kernel, dataloader_ns=cov(p.dataloader), compile_ns=cov(p.compile),
                         comm_wait_ns=cov(p.comm), sync_wait_ns=cov(p.sync), host_wait_ns=cov(p.host_wait),
                         kernel_wait_ns=cov(p.kernel_wait), other_idle_ns=cov(p.other), dataloader_cpu_ns=dl_cpu,
                         has_gpu=True)


def idle_gaps(model: TraceModel, t0_ns: int, t1_ns: int) -> tuple[np.ndarray, np.ndarray]:
    """GPU idle intervals inside [t0_ns, t1_ns) (for evidence and time ranges)."""
    bs, be = gpu_busy_union(model)
    return intervals.gaps(bs, be, t0_ns, t1_ns)
