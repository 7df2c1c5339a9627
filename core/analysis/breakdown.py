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

The step windows come in as an argument (`windows`: a `StepWindows`); by default they are
`core.analysis.steps.breakdown_windows` (each step's GPU span, tiling the GPU timeline, where it has GPU work;
its ProfilerStep span otherwise), so another step definition plugs in without touching this module.
`default_windows` stays the ProfilerStep spans (CPU-side per-step counts use it).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core import resource_files
from core.analysis.derived import cached
from core.analysis.intervals import Intervals
from core.analysis.step_windows import StepWindows
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


def default_windows(model: TraceModel) -> StepWindows:
    """The ProfilerStep windows (CPU-side per-step counts)."""
    return step_windows(model)


def gpu_default_windows(model: TraceModel) -> StepWindows:
    """The breakdown's default: windows on the GPU timeline (core.analysis.step_times)."""
    return breakdown_windows(model)


def _windows_key(windows: StepWindows | None) -> str:
    if windows is None:
        return "steps"
    return "w" + str(hash((windows.t0_ns.tobytes(), windows.t1_ns.tobytes())))


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


def dataloader_intervals(model: TraceModel) -> Intervals:
    """Where the CPU is inside DataLoader `__next__`."""
    return _named_intervals(model, event_names.is_dataloader_next)


def compile_windows(model: TraceModel) -> Intervals:
    """Disjoint intervals where torch.compile itself runs (dynamo tracing, inductor, autotuning; cached)."""
    return cached(model, "compile_windows", lambda: _named_intervals(model, event_names.is_compile_event))


def _named_intervals(model: TraceModel, predicate) -> Intervals:
    s = model.slices
    named = np.isin(s.name, model.strings.ids_matching(predicate))
    return Intervals.union_of(s.ts_ns[named], s.ts_ns[named] + s.dur_ns[named])


def sync_drain_intervals(model: TraceModel) -> Intervals:
    """[sync start, next GPU activity after the sync) for every host sync during which the GPU finished work."""
    s = model.slices
    ids = np.array([model.strings.find(n) for n in SYNC_NAMES])
    sync = np.isin(s.name, ids[ids >= 0]) & (s.kind == Kind.RUNTIME)
    call_start, call_end = s.ts_ns[sync], s.ts_ns[sync] + s.dur_ns[sync]
    busy = gpu_busy_union(model)
    if not len(call_start) or not len(busy):
        return Intervals.empty()
    drained = (np.searchsorted(busy.end_ns, call_end, side="right")
               > np.searchsorted(busy.end_ns, call_start, side="right"))
    after = np.searchsorted(busy.start_ns, call_end, side="right")
    next_busy = np.where(after < len(busy), busy.start_ns[np.minimum(after, len(busy) - 1)], call_end)
    return Intervals.union_of(call_start[drained], np.maximum(next_busy, call_end)[drained])


def step_breakdown(model: TraceModel, kernel_wait_max_ns: int = DEFAULT_KERNEL_WAIT_MAX_NS,
                   windows: StepWindows | None = None) -> StepBreakdown:
    """Per-step breakdown; `windows` defaults to the steps' GPU-side windows (gpu_default_windows)."""
    key = f"breakdown:{kernel_wait_max_ns}:{_windows_key(windows)}"
    return cached(model, key, lambda: _breakdown(model, kernel_wait_max_ns,
                                                 gpu_default_windows(model) if windows is None else windows))


@dataclass(frozen=True, slots=True)
class IdlePieces:
    """GPU idle intervals over the whole trace, by cause (disjoint sorted unions, int64 ns)."""

    dataloader: Intervals
    compile: Intervals
    comm: Intervals
    sync: Intervals
    host_wait: Intervals
    kernel_wait: Intervals
    other: Intervals


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
                windows: StepWindows | None = None) -> IdlePieces | None:
    """The GPU idle of the trace split by cause (None without GPU activity); cached per model."""
    key = f"idle_pieces:{kernel_wait_max_ns}:{_windows_key(windows)}"
    return cached(model, key, lambda: _idle_pieces(model, kernel_wait_max_ns,
                                                   gpu_default_windows(model) if windows is None else windows))


def _idle_pieces(model: TraceModel, kw_max: int, windows: StepWindows) -> IdlePieces | None:
    busy = gpu_busy_union(model)
    if not len(busy):
        return None
    s = model.slices
    # idle gaps over the whole span, split by cause in precedence order: dataloader, compile, collectives,
    # sync, then host wait / kernel wait
    span_t0 = int(min(np.min(windows.t0_ns), busy.start_ns[0])) if len(windows) else int(busy.start_ns[0])
    span_t1 = int(max(np.max(windows.t1_ns), busy.end_ns[-1])) if len(windows) else int(busy.end_ns[-1])
    idle = busy.gaps(span_t0, span_t1)
    dataloader = idle.intersect(dataloader_intervals(model))
    rest = idle.subtract(dataloader)
    compiling = rest.intersect(_named_intervals(model, event_names.is_compile_event))
    rest = rest.subtract(compiling)
    comm = rest.intersect(_named_intervals(model, event_names.is_collective_op))
    rest = rest.subtract(comm)
    sync = rest.intersect(sync_drain_intervals(model))
    rest = rest.subtract(sync)
    # HTA's rule per original gap: host wait when the GPU work that ends the gap was launched after the
    # gap began (the CPU had not queued it); kernel wait when it was already queued
    gpu = np.flatnonzero(np.isin(s.kind, np.asarray(GPU_KINDS, np.int8)))
    gpu = gpu[np.argsort(s.ts_ns[gpu], kind="stable")]
    gpu_ts = s.ts_ns[gpu]
    next_gpu = np.searchsorted(gpu_ts, idle.end_ns, side="left")  # the GPU work that ends each gap
    found = (next_gpu < len(gpu)) & (gpu_ts[np.minimum(next_gpu, len(gpu) - 1)] == idle.end_ns)
    launch = np.where(found, launch_ts_of_gpu(model)[gpu[np.minimum(next_gpu, len(gpu) - 1)]], -1)
    gap_len = idle.end_ns - idle.start_ns
    gap_host = np.where(launch >= 0, launch > idle.start_ns, gap_len > kw_max)
    gap_host |= ~found  # nothing follows inside the span: the CPU never queued more work
    gap_long = gap_len >= kw_max  # HTA: kernel wait only under consecutive_kernel_delay, else "other"
    gap_of_rest = np.searchsorted(idle.start_ns, rest.start_ns, side="right") - 1
    host = gap_host[gap_of_rest] if len(rest) else np.zeros(0, bool)
    long = gap_long[gap_of_rest] if len(rest) else np.zeros(0, bool)
    kernel = ~host & ~long
    other = ~host & long

    def pick(keep: np.ndarray) -> Intervals:
        return Intervals(rest.start_ns[keep], rest.end_ns[keep])

    return IdlePieces(dataloader=dataloader, compile=compiling, comm=comm, sync=sync, host_wait=pick(host),
                      kernel_wait=pick(kernel), other=pick(other))


def _breakdown(model: TraceModel, kw_max: int, windows: StepWindows) -> StepBreakdown:
    number, w0, w1 = windows.number, windows.t0_ns, windows.t1_ns
    n_steps = len(w0)
    s = model.slices
    dataloader = dataloader_intervals(model)
    cpu_steps = default_windows(model)  # a CPU-side share: inside the ProfilerStep windows
    dl_cpu = (dataloader.covered(cpu_steps.t0_ns, cpu_steps.t1_ns) if len(cpu_steps) == n_steps
              else dataloader.covered(w0, w1))
    zero = np.zeros(n_steps, np.int64)
    pieces = idle_pieces(model, kw_max, windows)
    if pieces is None:
        return StepBreakdown(number, w0, w1 - w0, zero, zero, zero, zero, zero, zero, zero, zero, zero, zero, dl_cpu,
                             False)
    kernel = s.kind == Kind.KERNEL
    compute_kernel = kernel & ~comm_kernel_mask(model)
    compute_time = Intervals.union_of(s.ts_ns[compute_kernel], s.ts_ns[compute_kernel] + s.dur_ns[compute_kernel])
    kernel_time = Intervals.union_of(s.ts_ns[kernel], s.ts_ns[kernel] + s.dur_ns[kernel])
    busy = gpu_busy_union(model).covered(w0, w1)
    compute = compute_time.covered(w0, w1)
    any_kernel = kernel_time.covered(w0, w1)

    def cov(piece: Intervals) -> np.ndarray:
        return piece.covered(w0, w1)

    return StepBreakdown(number=number, ts_ns=w0, dur_ns=w1 - w0, compute_ns=compute, comm_ns=any_kernel - compute,
                         memcpy_ns=busy - any_kernel, dataloader_ns=cov(pieces.dataloader),
                         compile_ns=cov(pieces.compile), comm_wait_ns=cov(pieces.comm), sync_wait_ns=cov(pieces.sync),
                         host_wait_ns=cov(pieces.host_wait), kernel_wait_ns=cov(pieces.kernel_wait),
                         other_idle_ns=cov(pieces.other), dataloader_cpu_ns=dl_cpu,
                         has_gpu=True)


def idle_gaps(model: TraceModel, t0_ns: int, t1_ns: int) -> Intervals:
    """GPU idle intervals inside [t0_ns, t1_ns) (for evidence and time ranges)."""
    return gpu_busy_union(model).gaps(t0_ns, t1_ns)
