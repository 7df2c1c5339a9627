"""Parity metrics (the numbers HTA computes, by ptprof on the columns; HTA stays the optional deep dive).

One `RankMetrics` per trace file (rank), with HTA's definitions where HTA has the metric:
  overlap_pct        communication kernel time overlapped by compute kernels / communication kernel time
                     (HTA get_comm_comp_overlap: both merged into unions; compute = kernels that are neither
                     communication nor memory); None without communication kernels
  queue_length       per GPU stream: mean and max of outstanding GPU operations, sampled at every change
                     (+1 when a launch call starts, -1 when its GPU work starts: HTA get_queue_length_summary,
                     whose `describe()` averages the samples, not over time)
  launch_delay_us    GPU start - end of the launch call, clipped at 0 (HTA get_cuda_kernel_launch_stats, memory
                     events included): p50 / p95 / mean; kernels_shorter_than_launch = GPU duration < launch call
  memcpy_gbps        per direction (HtoD, DtoH, DtoD, ...) and memory kind (Pageable -> Device, ...): bytes / busy
                     time of those copies (GB/s = 1e9 B/s; Kineto's own per-copy "memory bandwidth (GB/s)")
  tflops, mfu_pct    all steps' FLOPs / all steps' time (core.analysis.flops: step time = the longer of the
                     window and the GPU span of its work; MFU against the dense peak)
Every metric covers the step windows (first step start to last step end: GPU work by its start, launch
pairs by the launch call's start; the whole trace without steps). HTA's window differs (docs/architecture.md,
"Step window"): it keeps CPU events before the last ProfilerStep's start and the GPU work they launched.
Queue length and launch delay use HTA's launch calls (cudaLaunchKernel, cudaLaunchKernelExC, cuLaunchKernel,
cuLaunchKernelEx, cudaMemcpyAsync, cudaMemsetAsync, hip*, MTIA's runFunction); launch delay takes the subset
HTA's launch stats take (no cuLaunchKernel* / hip*).
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

import numpy as np

from core.analysis.breakdown import comm_kernel_mask
from core.analysis.derived import cached
from core.analysis.intervals import Intervals
from core.analysis.step_windows import StepWindows
from core.trace.model import GPU_KINDS, FlowKind, Kind, TraceModel, TraceSet

MTIA_LAUNCH = "runFunction - job_prep_and_submit_for_execution"
QUEUE_LAUNCHES = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "cudaMemcpyAsync",
                  "cudaMemsetAsync", MTIA_LAUNCH, "hipLaunchKernel", "hipExtModuleLaunchKernel", "hipMemsetAsync",
                  "hipMemcpyAsync", "hipMemcpyWithStream")
DELAY_LAUNCHES = ("cudaLaunchKernel", "cudaLaunchKernelExC", MTIA_LAUNCH, "cudaMemcpyAsync", "cudaMemsetAsync")
MEMCPY_NAME = re.compile(r"^Memcpy (\w+)(?: \((.+)\))?")


@dataclass(frozen=True, slots=True)
class RankMetrics:
    rank: int
    overlap_pct: float | None
    queue_length: list[dict] = field(default_factory=list)  # {"device", "stream", "mean", "max"}
    launch_delay_us: dict = field(default_factory=dict)  # {"p50", "p95", "mean", "launches"}
    kernels_shorter_than_launch: int = 0
    memcpy_gbps: list[dict] = field(default_factory=list)  # {"direction", "memory", "count", "bytes", "dur_us", "gbps"}
    tflops: float | None = None
    mfu_pct: float | None = None
    device: str = ""
    mfu_peak: str = ""  # the peak fp32 FLOPs were divided by: "tf32" (TF32 tensor cores) or "fp32"

    def to_json(self) -> dict:
        return asdict(self)


def _num(v: float) -> float | None:
    return None if v is None or not np.isfinite(v) else round(float(v), 4)


def overlap_pct(model: TraceModel, span: tuple[int, int]) -> float | None:
    s = model.slices
    inside = (s.ts_ns >= span[0]) & (s.ts_ns < span[1])
    comm = comm_kernel_mask(model) & inside
    comp = (s.kind == Kind.KERNEL) & ~comm_kernel_mask(model) & inside
    if not comm.any():
        return None
    comm_time = Intervals.union_of(s.ts_ns[comm], s.ts_ns[comm] + s.dur_ns[comm])
    compute_time = Intervals.union_of(s.ts_ns[comp], s.ts_ns[comp] + s.dur_ns[comp])
    total = comm_time.total_ns()
    return 100.0 * comm_time.overlap_ns(compute_time) / total if total else None


def _launch_pairs(model: TraceModel, names: tuple[str, ...], span: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """(launch call rows, GPU rows) of the LAUNCH flows whose call is one of `names` and starts in span."""
    s, f = model.slices, model.flows
    ids = np.array([model.strings.find(n) for n in names])
    launch = (f.kind == FlowKind.LAUNCH) & np.isin(s.name[f.src], ids[ids >= 0])
    launch &= np.isin(s.kind[f.dst], np.asarray(GPU_KINDS, np.int8))
    launch &= (s.ts_ns[f.src] >= span[0]) & (s.ts_ns[f.src] < span[1])
    return f.src[launch], f.dst[launch]


def queue_lengths(model: TraceModel, span: tuple[int, int]) -> list[dict]:
    s = model.slices
    src, dst = _launch_pairs(model, QUEUE_LAUNCHES, span)
    out = []
    if not len(src):
        return out
    stream = s.at("stream", dst).astype(np.int64)
    device = s.at("device", dst).astype(np.int64)
    for dev, st in sorted(set(zip(device.tolist(), stream.tolist()))):
        m = (device == dev) & (stream == st)
        ts = np.concatenate([s.ts_ns[src[m]], s.ts_ns[dst[m]]])
        step = np.concatenate([np.ones(int(m.sum()), np.int64), -np.ones(int(m.sum()), np.int64)])
        order = np.lexsort((-step, ts))  # a launch and a start at one instant: the launch first
        length = np.cumsum(step[order])
        out.append({"device": int(dev), "stream": int(st), "mean": round(float(length.mean()), 4),
                    "max": int(length.max())})
    return out


def launch_delays(model: TraceModel, span: tuple[int, int]) -> tuple[dict, int]:
    s = model.slices
    src, dst = _launch_pairs(model, DELAY_LAUNCHES, span)
    if not len(src):
        return {}, 0
    delay_ns = np.maximum(s.ts_ns[dst] - (s.ts_ns[src] + s.dur_ns[src]), 0)
    shorter = int((s.dur_ns[dst] < s.dur_ns[src]).sum())
    p50, p95 = np.percentile(delay_ns, [50, 95]) / 1000.0
    return {"p50": round(float(p50), 3), "p95": round(float(p95), 3),
            "mean": round(float(delay_ns.mean()) / 1000.0, 3), "launches": int(len(src))}, shorter


def memcpy_bandwidth(model: TraceModel, span: tuple[int, int]) -> list[dict]:
    s = model.slices
    rows = s.present_rows("bytes")
    rows = rows[(s.kind[rows] == Kind.MEMCPY) & (s.at("bytes", rows) >= 0) & (s.ts_ns[rows] >= span[0])
                & (s.ts_ns[rows] < span[1])]
    groups: dict[tuple[str, str], list[int]] = {}
    for sid in np.unique(s.name[rows]).tolist():
        mt = MEMCPY_NAME.match(model.strings[sid])
        key = (mt.group(1), mt.group(2) or "") if mt else (model.strings[sid], "")
        groups.setdefault(key, []).append(sid)
    out = []
    for (direction, memory), ids in sorted(groups.items()):
        r = rows[np.isin(s.name[rows], ids)]
        nbytes, dur = int(s.at("bytes", r).sum()), int(s.dur_ns[r].sum())
        out.append({"direction": direction, "memory": memory, "count": int(len(r)), "bytes": nbytes,
                    "dur_us": round(dur / 1000.0, 3), "gbps": round(nbytes / dur, 3) if dur else None})
    return out


def rank_metrics(model: TraceModel, windows: StepWindows | None = None) -> RankMetrics:
    """Every metric of one trace file (cached per model for the default step windows)."""
    if windows is not None:
        return _rank_metrics(model, windows)
    return cached(model, "rank_metrics", lambda: _rank_metrics(model, None))


def _rank_metrics(model: TraceModel, windows: StepWindows | None) -> RankMetrics:
    from core.analysis.flops import step_flops
    f = step_flops(model, windows)
    from core.analysis.breakdown import default_windows
    from core.analysis.flops import step_time_ns
    steps = default_windows(model) if windows is None else windows
    dur_s = step_time_ns(model, steps) / 1e9
    total_s = float(dur_s.sum())
    tflops = float(np.nansum(f.flops)) / total_s / 1e12 if total_s > 0 and not np.isnan(f.flops).all() else None
    mfu = float(np.sum(f.mfu_pct * dur_s) / total_s) if total_s > 0 and not np.isnan(f.mfu_pct).any() else None
    span = (int(np.min(steps.t0_ns)), int(np.max(steps.t1_ns))) if len(steps) else model.span_ns
    delays, shorter = launch_delays(model, span)
    gspan = _gpu_span(model, span) if windows is None else span
    return RankMetrics(rank=int(model.rank), overlap_pct=_num(overlap_pct(model, gspan)),
                       queue_length=queue_lengths(model, span), launch_delay_us=delays,
                       kernels_shorter_than_launch=shorter, memcpy_gbps=memcpy_bandwidth(model, gspan),
                       tflops=_num(tflops), mfu_pct=_num(mfu), device=f.device,
                       mfu_peak=f.fp32_math if mfu is not None else "")


def _gpu_span(model: TraceModel, span: tuple[int, int]) -> tuple[int, int]:
    """The steps' span on the GPU timeline: a GPU-bound loop runs its last steps' GPU work (copies included)
    after the last CPU step ended; counting GPU work by where it starts inside the CPU span lost them
    (memcpy GB/s -6.5 % against HTA). From the first step's own GPU work to the end of the last's."""
    from core.analysis.step_times import step_times
    t = step_times(model)
    if t.synthetic or not len(t) or not t.has_gpu:
        return span
    has = t.gpu_ns > 0
    if not has.any():
        return span
    return (int(min(span[0], t.gpu_t0_ns[has].min())), int(max(span[1], t.gpu_t1_ns[has].max())))


def trace_metrics(trace_set: TraceSet) -> list[RankMetrics]:
    got = getattr(trace_set, "report_parts", None)  # a run view (core/ranks/views.py): its workers' numbers
    if got is not None:
        return got("metrics")
    return [rank_metrics(m) for m in trace_set.models]


def format_metrics(metrics) -> list[str]:
    """One text line per rank (the CLI table, the Steps tab)."""
    lines = []
    for rm in metrics:
        parts = []
        if rm.tflops is not None:
            peak = " of the TF32 peak for fp32" if getattr(rm, "mfu_peak", "") == "tf32" else ""
            parts.append(f"{rm.tflops:.1f} TFLOP/s" + (f", MFU {rm.mfu_pct:.1f} %{peak}" if rm.mfu_pct is not None
                                                       else ""))
        if rm.overlap_pct is not None:
            parts.append(f"comm overlap {rm.overlap_pct:.1f} %")
        if rm.launch_delay_us:
            d = rm.launch_delay_us
            parts.append(f"launch delay p50 {d['p50']:.1f} µs / p95 {d['p95']:.1f} µs")
        if rm.queue_length:
            q = max(rm.queue_length, key=lambda x: x["mean"])
            parts.append(f"queue length mean {q['mean']:.1f} (max {q['max']}, stream {q['stream']})")
        if parts:
            lines.append(f"  metrics{f' rank {rm.rank}' if len(metrics) > 1 else ''}: " + "; ".join(parts))
    return lines
