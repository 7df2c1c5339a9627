"""Parity metrics (core.analysis.metrics): exact on synthetic traces, and equal to HTA's own numbers (within 1 %)
on the shared traces where the definitions agree (HTA with its µs rounding off, on HTA's window)."""
from __future__ import annotations

import contextlib
import io

import kineto_events
import numpy as np
import pytest
from helpers import hta_importable, shared_trace
from kineto_events import kernel as _gpu, x as _x

from core.analysis import metrics as mt
from core.analysis.metrics import rank_metrics
from core.trace.loader import load
from core.trace.model import Kind


def _load(tmp_path, events):
    return load(kineto_events.write(tmp_path / "t.json", events), use_cache=False).primary


def test_metrics_on_a_synthetic_trace(tmp_path):
    ev = [_x("ProfilerStep#1", "user_annotation", 0, 1000)]
    # three launches on stream 7: queue 1, 2, 3 while the first has not started
    ev += [_x("cudaLaunchKernel", "cuda_runtime", 10 + 10 * i, 5, correlation=i + 1) for i in range(3)]
    ev += [_gpu("gemm", 100, 100, 1), _gpu("gemm", 200, 2, 2), _gpu("gemm", 210, 100, 3)]
    # an all-reduce on stream 20 half overlapped by compute (250-310 of 250-370)
    ev += [_x("cudaLaunchKernel", "cuda_runtime", 60, 5, correlation=9),
           _gpu("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", 250, 120, 9,
                stream=20)]
    ev += [_x("cudaMemcpyAsync", "cuda_runtime", 400, 5, correlation=11),
           _gpu("Memcpy HtoD (Pinned -> Device)", 500, 10, 11, cat="gpu_memcpy", bytes=100_000_000)]
    r = rank_metrics(_load(tmp_path, ev))
    assert r.overlap_pct == pytest.approx(100 * 60 / 120)
    q7 = next(q for q in r.queue_length if q["stream"] == 7)
    # samples: +1 +1 +1 -1 -1 -1 (kernels), then +1 -1 (the copy) -> 1 2 3 2 1 0 1 0
    assert q7 == {"device": 0, "stream": 7, "mean": pytest.approx(10 / 8), "max": 3}
    # delays: kernel start - launch end: 100-15, 200-25, 210-35, 250-65, 500-405 (µs)
    delays = np.array([85, 175, 175, 185, 95])
    assert r.launch_delay_us["launches"] == 5
    assert r.launch_delay_us["p50"] == pytest.approx(np.percentile(delays, 50))
    assert r.launch_delay_us["p95"] == pytest.approx(np.percentile(delays, 95))
    assert r.kernels_shorter_than_launch == 1  # the 2 µs kernel after a 5 µs launch call
    assert r.memcpy_gbps == [{"direction": "HtoD", "memory": "Pinned -> Device", "count": 1, "bytes": 100_000_000,
                              "dur_us": 10.0, "gbps": 10_000.0}]
    assert r.to_json()["rank"] == 0 and r.device == "NVIDIA H200"


def test_no_communication_kernels_means_no_overlap(tmp_path):
    ev = [_x("ProfilerStep#1", "user_annotation", 0, 100), _x("cudaLaunchKernel", "cuda_runtime", 1, 2,
                                                              correlation=1), _gpu("k", 5, 5, 1)]
    r = rank_metrics(_load(tmp_path, ev))
    assert r.overlap_pct is None and r.tflops is None and r.mfu_pct is None


# --- against HTA ---------------------------------------------------------------------------------------

def _hta(path):
    from hta.configs.env_options import HTAEnvOptions
    opts = HTAEnvOptions.instance()
    before = opts.disable_ns_rounding()
    opts.set_disable_ns_rounding(True)  # HTA floors ts to whole µs by default; compare at ns precision
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            from hta.trace_analysis import TraceAnalysis
            ta = TraceAnalysis(trace_files={0: str(path)}, trace_dir="/")
            queue = ta.get_queue_length_summary(ranks=[0])
            launch = ta.get_cuda_kernel_launch_stats(ranks=[0], visualize=False)[0]
            _, kernels = ta.get_gpu_kernel_breakdown(visualize=False, duration_ratio=1.0, num_kernels=1 << 30)
            df = ta.t.get_trace(0)
            names = ta.t.symbol_table.get_sym_table()
            kernel_cat = ta.t.symbol_table.get_sym_id_map()["kernel"]
            rows = df[df["cat"] == kernel_cat].groupby("name")["dur"].sum()
            kernel_rows = {names[int(i)]: float(v) for i, v in rows.items()}
    finally:
        opts.set_disable_ns_rounding(before)
    return queue, launch, kernels, kernel_rows


def _hta_window(m):
    """HTA keeps the CPU events that start before the last ProfilerStep event and the GPU work they launched.
    "ProfilerStep event" includes Kineto's GPU-side copies (cat gpu_user_annotation: HTA reads them without a
    stream, as CPU events), which can start after the last CPU ProfilerStep (gpu_ddp2, gpu_memory, gpt_big)."""
    s = m.slices
    steps = np.isin(s.name, m.strings.ids_matching(lambda n: n.startswith("ProfilerStep#")))
    return (-(1 << 62), int(s.ts_ns[steps].max()))


def _compare_with_hta(path, hta_kernels="breakdown"):
    m = load(path, use_cache=False).primary
    queue, launch, kernels, kernel_rows = _hta(path)
    span = _hta_window(m)
    ours_q = {q["stream"]: q for q in mt.queue_lengths(m, span)}
    for (_, stream), row in queue.iterrows():
        assert ours_q[int(stream)]["mean"] == pytest.approx(row[("queue_length", "mean")], rel=0.01)
        assert ours_q[int(stream)]["max"] == row[("queue_length", "max")]
    delays, shorter = mt.launch_delays(m, span)
    hta_delay = launch["launch_delay"].to_numpy(float)
    assert delays["launches"] == pytest.approx(len(hta_delay), rel=0.01)
    assert delays["p50"] == pytest.approx(np.percentile(hta_delay, 50), rel=0.01)
    assert delays["p95"] == pytest.approx(np.percentile(hta_delay, 95), rel=0.01)
    assert delays["mean"] == pytest.approx(hta_delay.mean(), rel=0.01)
    assert shorter == pytest.approx(int((launch.gpu_duration < launch.cpu_duration).sum()), rel=0.01)
    # kernel totals per name in HTA's window: the "match HTA to 0.000 %" regression
    s, f = m.slices, m.flows
    launched_in = np.zeros(len(s), bool)
    link = f.kind == 0
    launched_in[f.dst[link][s.ts_ns[f.src[link]] < span[1]]] = True
    rows = np.flatnonzero((s.kind == Kind.KERNEL) & launched_in)  # kernels (HTA's memory rows are copies/memsets)
    ours = {}
    for name, dur in zip(m.strings.lookup(s.name[rows]), s.dur_ns[rows].tolist()):
        ours[name] = ours.get(name, 0) + dur
    if hta_kernels == "breakdown":
        kernels = kernels[kernels["kernel_type"] != "MEMORY"]
        theirs = dict(zip(kernels["name"], kernels["sum (us)"]))
    else:  # HTA's own kernel rows (its kernel breakdown also sums CPU ops of the same name: see the caller)
        theirs = kernel_rows
    assert set(ours) == set(theirs)
    worst = max(abs(ours[n] / 1000.0 - theirs[n]) / max(theirs[n], 1e-9) for n in ours)
    assert worst < 5e-6  # 0.000 %
    assert sum(ours.values()) / 1000.0 == pytest.approx(sum(theirs.values()), rel=5e-6)
    return ours, kernels


# every GPU rank of the shared traces (tests/data/traces); gpt_big (slow, optional) below
HTA_TRACES = ["gpu_issues.pt.trace.json.gz", "gpu_clean.pt.trace.json.gz", "gpu_dataloader.pt.trace.json.gz",
              "gpu_memory.pt.trace.json.gz", "gpu_minimal_opts.pt.trace.json.gz", "gpu_ddp2/rank0.pt.trace.json.gz",
              "gpu_ddp2/rank1.pt.trace.json.gz"]


@pytest.mark.skipif(not hta_importable(), reason="traceinsight (hta) not importable here")
@pytest.mark.parametrize("name", HTA_TRACES)
def test_matches_hta_on_shared_traces(name):
    _compare_with_hta(shared_trace(name))


@pytest.mark.slow
@pytest.mark.skipif(not hta_importable(), reason="traceinsight (hta) not importable here")
def test_matches_hta_on_gpt_big():
    _compare_with_hta(shared_trace("gpu_gpt_big.pt.trace.json.gz"))


@pytest.mark.skipif(not hta_importable(), reason="traceinsight (hta) not importable here")
def test_matches_hta_kernel_rows_on_a_compiled_trace():
    """torch.compile traces: Inductor wraps each Triton launch in a CPU op named like the kernel, and HTA's
    kernel breakdown sums those CPU ops into the kernel's row (triton_red_fused_sum_1: 1.20 ms of kernels +
    7.83 ms of CPU ops). Our totals equal HTA's kernel rows; its breakdown is larger by exactly those CPU ops."""
    ours, breakdown = _compare_with_hta(shared_trace("gpu_compile_small.pt.trace.json.gz"), hta_kernels="kernel_rows")
    theirs = dict(zip(breakdown["name"], breakdown["sum (us)"]))
    assert theirs["triton_red_fused_sum_1"] > 5 * ours["triton_red_fused_sum_1"] / 1000.0


@pytest.mark.skipif(not hta_importable(), reason="traceinsight (hta) not importable here")
def test_overlap_matches_hta_on_an_nccl_trace(tmp_path):
    """No shared trace has NCCL kernels: a small Kineto-format one with compute and all-reduce kernels on two
    streams, overlapping at fractional µs."""
    rng = np.random.default_rng(1)
    ev, corr = [], 1
    for i in range(4):
        t = i * 2000.0
        ev.append(_x(f"ProfilerStep#{i}", "user_annotation", t, 1990.0))
        for k in range(8):
            ev.append(_x("cudaLaunchKernel", "cuda_runtime", t + 5 + k * 40.5, 3.25, correlation=corr))
            ev.append(_gpu("sm90_xmma_gemm_bf16", t + 100 + k * 180.25, float(rng.integers(60, 170)) + 0.375, corr))
            corr += 1
        for k in range(3):
            ev.append(_x("cudaLaunchKernel", "cuda_runtime", t + 400 + k * 30.5, 4.5, correlation=corr))
            ev.append(_gpu("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
                           t + 150 + k * 520.125, 300.5, corr, stream=20))
            corr += 1
    m = _load(tmp_path, ev)
    from hta.configs.env_options import HTAEnvOptions
    opts = HTAEnvOptions.instance()
    before = opts.disable_ns_rounding()
    opts.set_disable_ns_rounding(True)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            from hta.trace_analysis import TraceAnalysis
            ta = TraceAnalysis(trace_files={0: str(tmp_path / "t.json")}, trace_dir="/")
            theirs = float(ta.get_comm_comp_overlap(visualize=False)["comp_comm_overlap_pctg"].iloc[0])
    finally:
        opts.set_disable_ns_rounding(before)
    assert mt.overlap_pct(m, _hta_window(m)) == pytest.approx(theirs, rel=0.01)
    assert 0 < rank_metrics(m).overlap_pct < 100
