"""Per-step "where does the time go": GPU compute, memcpy, and the idle time split by its cause.

Every step window (its GPU span where it has GPU work, else its CPU window: core.analysis.steps.breakdown_windows)
is divided so the parts add up to its duration:
  compute_ns      kernels running (union over streams)
  memcpy_ns       only copies/memsets running (no kernel)
  dataloader_ns   GPU idle while the CPU is in DataLoader `__next__`
  compile_ns      GPU idle while torch.compile itself runs (dynamo / inductor / autotuning)
  comm_wait_ns    GPU idle while a CPU-side collective runs (gloo / c10d ops)
  sync_wait_ns    GPU idle after a host synchronisation drained the queue (until the next GPU work)
  host_wait_ns    other GPU idle where the CPU had not queued the next GPU work yet: its launch (the runtime
                  call linked by correlation) started after the GPU went idle
  kernel_wait_ns  other GPU idle although the next work was already launched (launch / dependency latency)
The host-wait / kernel-wait split is HTA's idle time breakdown rule (host wait: the next kernel's runtime
call started after the previous kernel ended), applied to the gaps of the GPU busy union; a gap whose next
GPU event has no launch link falls back to its length (longer than `kernel_wait_max_ns`: host wait). CPU-only traces get has_gpu=False
and all GPU parts zero; dataloader_cpu_ns (CPU time in DataLoader `__next__`) is filled for every trace.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from core.analysis import intervals
from core.analysis.derived import cached
from core.analysis.steps import breakdown_windows, gpu_busy_union, step_windows
from core.trace.model import GPU_KINDS, FlowKind, Kind, TraceModel

SYNC_NAMES = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize")
DEFAULT_KERNEL_WAIT_MAX_NS = 30_000  # resources/rules.toml [gpu_idle] kernel_wait_max_ns (HTA default range)

PARTS = ("compute_ns", "memcpy_ns", "dataloader_ns", "compile_ns", "comm_wait_ns", "sync_wait_ns", "host_wait_ns",
         "kernel_wait_ns")


@dataclass(frozen=True, slots=True)
class StepBreakdown:
    number: np.ndarray  # int64 step number (-1: whole trace)
    ts_ns: np.ndarray
    dur_ns: np.ndarray
    compute_ns: np.ndarray
    memcpy_ns: np.ndarray
    dataloader_ns: np.ndarray
    compile_ns: np.ndarray
    comm_wait_ns: np.ndarray
    sync_wait_ns: np.ndarray
    host_wait_ns: np.ndarray
    kernel_wait_ns: np.ndarray
    dataloader_cpu_ns: np.ndarray  # CPU time inside DataLoader __next__ (inside the CPU step window)
    has_gpu: bool

    def __len__(self) -> int:
        return len(self.number)

    @property
    def idle_ns(self) -> np.ndarray:
        return self.dataloader_ns + self.compile_ns + self.comm_wait_ns + self.sync_wait_ns + self.host_wait_ns + self.kernel_wait_ns

    def parts(self) -> dict[str, np.ndarray]:
        return {p: getattr(self, p) for p in PARTS}

    def totals(self) -> dict[str, int]:
        return {p: int(getattr(self, p).sum()) for p in PARTS} | {"dur_ns": int(self.dur_ns.sum())}


def dataloader_intervals(model: TraceModel) -> tuple[np.ndarray, np.ndarray]:
    s = model.slices
    ids = model.strings.ids_matching(lambda n: n.startswith("enumerate(DataLoader)") and "__next__" in n)
    m = np.isin(s.name, ids)
    return intervals.union(s.ts_ns[m], s.ts_ns[m] + s.dur_ns[m])


COMPILE_PATTERN = re.compile(r"\(dynamo_timed\)$|^CachingAutotuner|compile_id=|^entire_frame_compile$|^backend_compile$"
                         r"|^inductor_compile$|^dynamo$|^compile_attempt_\d+$|^fx_codegen_and_compile$")


def _is_compile(name: str) -> bool:
    return COMPILE_PATTERN.search(name) is not None


def _is_collective(name: str) -> bool:
    return name.startswith(("gloo:", "nccl:", "c10d::", "record_param_comms")) or "all_reduce" in name


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


def step_breakdown(model: TraceModel, kernel_wait_max_ns: int = DEFAULT_KERNEL_WAIT_MAX_NS) -> StepBreakdown:
    return cached(model, f"breakdown:{kernel_wait_max_ns}", lambda: _breakdown(model, kernel_wait_max_ns))


@dataclass(frozen=True, slots=True)
class IdlePieces:
    """GPU idle intervals over the whole trace, by cause (disjoint sorted unions, int64 ns)."""

    dataloader: tuple[np.ndarray, np.ndarray]
    compile: tuple[np.ndarray, np.ndarray]
    comm: tuple[np.ndarray, np.ndarray]
    sync: tuple[np.ndarray, np.ndarray]
    host_wait: tuple[np.ndarray, np.ndarray]
    kernel_wait: tuple[np.ndarray, np.ndarray]


def launch_ts_of_gpu(model: TraceModel) -> np.ndarray:
    """Per slice row: the start of the CPU runtime call that launched it (LAUNCH flow), -1 if none."""
    def compute():
        s, f = model.slices, model.flows
        out = np.full(len(s), -1, np.int64)
        launch = f.kind == FlowKind.LAUNCH
        out[f.dst[launch]] = s.ts_ns[f.src[launch]]
        return out
    return cached(model, "launch_ts_of_gpu", compute)


def idle_pieces(model: TraceModel, kernel_wait_max_ns: int = DEFAULT_KERNEL_WAIT_MAX_NS) -> IdlePieces | None:
    """The GPU idle of the trace split by cause (None without GPU activity); cached per model."""
    return cached(model, f"idle_pieces:{kernel_wait_max_ns}", lambda: _idle_pieces(model, kernel_wait_max_ns))


def _idle_pieces(model: TraceModel, kw_max: int) -> IdlePieces | None:
    number, w0, w1, _ = breakdown_windows(model)
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
    cws, cwe = _named_intervals(model, _is_compile)
    cps, cpe = intervals.intersect(rs, re_, cws, cwe)
    rs, re_ = intervals.subtract(rs, re_, cps, cpe)
    cms, cme = _named_intervals(model, _is_collective)
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
    gi = np.searchsorted(gs, os_, side="right") - 1
    host = gap_host[gi] if len(os_) else np.zeros(0, bool)
    return IdlePieces(dataloader=(dls, dle), compile=(cps, cpe), comm=(cos, coe), sync=(sys_, sye),
                      host_wait=(os_[host], oe[host]), kernel_wait=(os_[~host], oe[~host]))


def _breakdown(model: TraceModel, kw_max: int) -> StepBreakdown:
    number, w0, w1, _ = breakdown_windows(model)
    w0 = np.asarray(w0, np.int64)
    w1 = np.asarray(w1, np.int64)
    n = len(w0)
    s = model.slices
    dl_s, dl_e = dataloader_intervals(model)
    _, c0, c1, _ = step_windows(model)  # a CPU-side share: inside the CPU step windows
    dl_cpu = intervals.covered(dl_s, dl_e, np.asarray(c0, np.int64), np.asarray(c1, np.int64))
    z = np.zeros(n, np.int64)
    p = idle_pieces(model, kw_max)
    if p is None:
        return StepBreakdown(np.asarray(number, np.int64), w0, w1 - w0, z, z, z, z, z, z, z, z, dl_cpu, False)
    bs, be = gpu_busy_union(model)
    km = s.kind == Kind.KERNEL
    ks, ke = intervals.union(s.ts_ns[km], s.ts_ns[km] + s.dur_ns[km])
    busy = intervals.covered(bs, be, w0, w1)
    compute = intervals.covered(ks, ke, w0, w1)

    def cov(pair):
        return intervals.covered(pair[0], pair[1], w0, w1)

    return StepBreakdown(number=np.asarray(number, np.int64), ts_ns=w0, dur_ns=w1 - w0, compute_ns=compute,
                         memcpy_ns=busy - compute, dataloader_ns=cov(p.dataloader), compile_ns=cov(p.compile),
                         comm_wait_ns=cov(p.comm), sync_wait_ns=cov(p.sync), host_wait_ns=cov(p.host_wait),
                         kernel_wait_ns=cov(p.kernel_wait), dataloader_cpu_ns=dl_cpu, has_gpu=True)


def idle_gaps(model: TraceModel, t0_ns: int, t1_ns: int) -> tuple[np.ndarray, np.ndarray]:
    """GPU idle intervals inside [t0_ns, t1_ns) (for evidence and time ranges)."""
    bs, be = gpu_busy_union(model)
    return intervals.gaps(bs, be, t0_ns, t1_ns)
