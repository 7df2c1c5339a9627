"""Synthetic training loops written as Kineto traces with known answers (critical path, step times).

`loop(...)` plays a loop forward with CUDA's semantics: the CPU launches kernels (each launch call takes
`launch_us` of CPU time), a kernel starts at max(its launch + `latency_us`, the previous kernel's end) on
one stream, a host sync blocks the CPU until every launched kernel is done; ProfilerStep#N brackets each
iteration. Optional: a pageable H2D copy per step (a synchronous cudaMemcpyAsync whose call lasts as
long as the copy), a DataLoader __next__ of `data_us` CPU time at the step start.
"""
from __future__ import annotations

from pathlib import Path

import kineto_events

GIB = 2**30


def _x(name, cat, ts, dur, pid=1, tid=1, **args):
    return kineto_events.x(name, cat, round(ts, 3), round(dur, 3), pid=pid, tid=tid, **args)


def loop(steps=8, kernels=20, kernel_us=50.0, launch_us=5.0, latency_us=4.0, cpu_gap_us=2.0, syncs=0,
         sync_after=None, copy_mb=0.0, pageable_gbps=10.0, pinned_gbps=None, data_us=0.0, step_overhead_us=20.0):
    """Events of a loop and the true step times (µs). syncs: host syncs per step at the step end (`.item()`);
    sync_after: launch a sync after that many kernels instead (mid-step)."""
    ev = []
    cpu = 0.0
    gpu_free = 0.0
    corr = 1
    step_starts = []

    def launch(name, dur_gpu, cat="kernel", gpu_name=None, **gargs):
        nonlocal cpu, gpu_free, corr
        ev.append(_x(name, "cuda_runtime", cpu, launch_us, correlation=corr))
        start = max(cpu + latency_us, gpu_free)
        ev.append(_x(gpu_name or "void gemm_kernel(float*)", cat, start, dur_gpu, pid=0, tid=7, correlation=corr,
                     stream=7, device=0, **gargs))
        gpu_free = start + dur_gpu
        corr += 1
        cpu += launch_us + cpu_gap_us

    def sync():
        nonlocal cpu, corr
        t0 = cpu
        end = max(cpu + 3.0, gpu_free + 2.0)
        ev.append(_x("aten::item", "cpu_op", t0 - 1, end - t0 + 2))
        ev.append(_x("cudaStreamSynchronize", "cuda_runtime", t0, end - t0, correlation=corr))
        corr += 1
        cpu = end + 2.0

    for i in range(steps):
        t_step = cpu
        step_starts.append(t_step)
        cpu += step_overhead_us / 2
        if data_us:
            ev.append(_x("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "user_annotation", cpu, data_us))
            cpu += data_us + 1
        if copy_mb:
            nbytes = int(copy_mb * 2**20)
            copy_us = nbytes / (pageable_gbps * 1e3)
            t0 = cpu
            start = max(cpu + latency_us, gpu_free)
            ev.append(_x("aten::copy_", "cpu_op", t0 - 0.5, start + copy_us - t0 + 2))
            ev.append(_x("cudaMemcpyAsync", "cuda_runtime", t0, start + copy_us - t0 + 1, correlation=corr))
            ev.append(_x("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", start, copy_us, pid=0, tid=7,
                         correlation=corr, stream=7, device=0, bytes=nbytes))
            gpu_free = start + copy_us
            corr += 1
            cpu = start + copy_us + 2
            if pinned_gbps:  # a pinned copy of the same size elsewhere in the step (the trace's own bandwidth)
                launch("cudaMemcpyAsync", nbytes / (pinned_gbps * 1e3), cat="gpu_memcpy",
                       gpu_name="Memcpy HtoD (Pinned -> Device)", bytes=nbytes)
        for k in range(kernels):
            launch("cudaLaunchKernel", kernel_us)
            if sync_after is not None and k + 1 == sync_after:
                sync()
        if sync_after is None:
            for _ in range(syncs):
                sync()
        cpu += step_overhead_us / 2
        ev.append(_x(f"ProfilerStep#{i}", "user_annotation", t_step, cpu - t_step))
    return ev, step_starts


def write(tmp_path: Path, events, name="loop.json") -> Path:
    return kineto_events.write(Path(tmp_path) / name, events, total_mem=140 * GIB,
                               props={"computeMajor": 9, "computeMinor": 0})
