"""Critical-path replay and what-if savings: synthetic loops with known answers, every shared trace, and the
H200 before/after pairs' step times (tests/data/device/pairs, measured unprofiled in timings.json; their savings:
test_fresh_pairs.py)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import shared_trace
from synth_loops import loop, write

from core.analysis.critical_path import composition, replay_input, simulate, validate
from core.analysis.step_times import step_times
from core.rules import analyze
from core.trace.loader import load

PAIRS = Path(__file__).resolve().parents[2] / "data" / "device" / "pairs"


def _analysis(path):
    return analyze(load(path, use_cache=False))


def _saving(a, rule):
    hits = [f for f in a.findings if f.rule == rule and f.saving_ns is not None]
    assert hits, f"no priced {rule} finding"
    return sum(f.saving_ns for f in hits), max(hits, key=lambda f: f.saving_ns)


def test_gpu_bound_loop_sync_costs_about_nothing(tmp_path):
    # 20 x 400 µs kernels per step, one .item() at the end: the CPU waits ~8 ms per step, yet the GPU is never
    # idle for more than the relaunch: removing the sync saves < 2 % of the step
    ev, _ = loop(steps=6, kernels=20, kernel_us=400.0, syncs=1)
    a = _analysis(write(tmp_path, ev))
    saving, f = _saving(a, "host_sync")
    step = a.summary["mean_step_ns"]
    assert f.impact_ns > 0.5 * step * 5  # the CPU-side cost the old rule billed
    assert saving < 0.02 * step and f.severity.label == "info"


def test_sync_with_cpu_work_after_it_costs_its_wait(tmp_path):
    # GPU work 2 ms, then a sync, then 3 ms of CPU work after the sync: overlapped, the step is ~3 ms, not ~5
    ev, _ = loop(steps=6, kernels=10, kernel_us=200.0, syncs=1, step_overhead_us=6000.0)
    a = _analysis(write(tmp_path, ev))
    saving, _ = _saving(a, "host_sync")
    assert 1_500_000 < saving < 2_300_000


def test_launch_bound_loop_gaps_are_on_the_cpu_path(tmp_path):
    # 200 x 2 µs kernels launched 20 µs apart: the GPU idles between them and the launches are the critical
    # path. One CUDA graph launch removes the launches but one, and the kernels run back to back: the step
    # shrinks from ~4 ms of launches to ~0.4 ms of kernels. The finding's own saving is torch.compile
    # (default mode)'s, which fuses only pointwise kernels and keeps a launch per kernel left (issue 28): it is
    # smaller, and the CUDA-graph figure is given apart (savings_by_fix)
    ev, _ = loop(steps=5, kernels=200, kernel_us=2.0, launch_us=18.0, latency_us=4.0)
    m = load(write(tmp_path, ev), use_cache=False).primary
    comp = composition(m)
    cpu_ns = step_times(m).cpu_ns
    assert set(comp.path.tolist()) == {"cpu"} and (comp.launch_ns > 0.8 * cpu_ns).all()
    a = analyze(load(write(tmp_path, ev, "b.json"), use_cache=False))
    lb = [f for f in a.findings if f.rule == "launch_bound"]
    assert lb
    for f in lb:
        by_fix = dict(f.savings_by_fix)
        assert 0.6 * float(cpu_ns.mean()) < by_fix["cuda_graphs"] < float(cpu_ns.mean())
        assert 0 < f.saving_ns == by_fix["compile"] <= by_fix["cuda_graphs"]


def test_pageable_copy_priced_at_the_traces_pinned_bandwidth(tmp_path):
    # a 64 MiB pageable copy at 10 GB/s (6.7 ms, blocking) per step and a pinned copy at 40 GB/s: the fix
    # prices the copy at 40 GB/s (1.7 ms) and makes it async: saving ~ 6.7 - 1.7 ms of a GPU-light step
    ev, _ = loop(steps=5, kernels=10, kernel_us=20.0, copy_mb=64.0, pageable_gbps=10.0, pinned_gbps=40.0)
    a = _analysis(write(tmp_path, ev))
    saving, f = _saving(a, "pageable_memcpy")
    assert "this trace's pinned copies" in f.estimate
    assert 4_000_000 < saving < 5_500_000


def test_replay_reproduces_the_measured_steps(tmp_path):
    for kw in ({"kernel_us": 500.0}, {"kernel_us": 2.0, "launch_us": 20.0}, {"syncs": 2}, {"sync_after": 5},
               {"copy_mb": 8.0}, {"data_us": 2000.0}):
        ev, _ = loop(steps=5, **kw)
        m = load(write(tmp_path, ev, "r.json"), use_cache=False).primary
        assert validate(m).error_pct < 3.0, kw


@pytest.mark.parametrize("name", ["gpu_issues.pt.trace.json.gz", "gpu_clean.pt.trace.json.gz",
                                  "gpu_gpt_big.pt.trace.json.gz", "gpu_dataloader.pt.trace.json.gz",
                                  "gpu_compile_small.pt.trace.json.gz", "gpu_memory.pt.trace.json.gz",
                                  "gpu_minimal_opts.pt.trace.json.gz", "cpu_train.pt.trace.json.gz", "gpu_ddp2"])
def test_shared_traces(name):
    ts = load(shared_trace(name))
    a = analyze(ts)
    for m in ts.models:
        t = step_times(m)
        assert (t.effective_ns >= t.cpu_ns).all()
        assert validate(m).error_pct < 5.0
    step = max(float(np.max(step_times(m).effective_ns)) for m in ts.models)
    for f in a.findings:
        if f.saving_ns is not None:
            assert 0 <= f.saving_ns <= step and f.estimate
    together = a.summary.get("all_fixes")
    if together:
        assert 0 <= together["saving_ns"] <= step


def test_pairs_gpu_true_step_times():
    timings = {r["variant"]: r["step_ms"] for r in json.loads((PAIRS / "timings.json").read_text())["results"]}
    for variant in ("gemm_bf16", "mlp_fp32", "copy_pageable", "copy_pinned", "mlp_bf16"):  # GPU-bound loops
        t = step_times(load(PAIRS / variant, use_cache=False).primary)
        eff = float(np.median(t.effective_ns)) / 1e6
        assert abs(eff - timings[variant]) <= 0.1 * timings[variant], (variant, eff, timings[variant])
        assert set(t.bound.tolist()) == {"gpu"}


STREAMS = Path(__file__).resolve().parents[2] / "data" / "device" / "streams"


def test_cross_stream_wait_is_on_the_critical_path():
    """H200: a side stream's GEMMs the compute stream waits for (tests/data/device/streams). Without the
    cudaStreamWaitEvent edges the replay ran both streams side by side (8-12 ms for a 15.1 ms step)."""
    from dataclasses import replace
    m = load(STREAMS / "side_stream", use_cache=False).primary
    rp = replay_input(m)
    assert len(rp.dep_dst) >= 4 and all(rp.op_track[rp.dep_dst] != rp.op_track[rp.dep_src])
    measured = rp.times.effective_ns
    replayed = simulate(rp).effective_ns
    assert np.all(np.abs(replayed - measured) <= 0.02 * measured)
    free = simulate(replace(rp, dep_dst=rp.dep_dst[:0], dep_src=rp.dep_src[:0])).effective_ns
    assert np.median(free) < 0.9 * np.median(measured)  # the edges are what makes it right


def test_fp32_whatif_across_streams_matches_the_measured_saving():
    timings = {r["variant"]: r["step_ms"] for r in json.loads((STREAMS / "timings.json").read_text())["results"]}
    measured = timings["side_stream"] - timings["side_stream_bf16"]  # 13.3 ms
    a = analyze(load(STREAMS / "side_stream", use_cache=False))
    (f,) = [f for f in a.findings if f.rule == "fp32_gemm"]
    assert abs(f.saving_ns / 1e6 - measured) <= 0.3 * measured, (f.saving_ns, measured)


def test_cross_stream_wait_without_cupti_sync_records(tmp_path):
    """A trace recorded without sync events (torch's default): the waiting stream is that of the next op
    the thread launches after the wait; the replay is as right."""
    import gzip
    (src,) = (STREAMS / "side_stream" / "traces").glob("*.gz")
    doc = json.loads(gzip.decompress(src.read_bytes()))
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("cat") != "cuda_sync"]
    path = tmp_path / "no_sync.pt.trace.json"
    path.write_text(json.dumps(doc))
    m = load(path, use_cache=False).primary
    rp = replay_input(m)
    assert len(rp.dep_dst) >= 4
    measured = rp.times.effective_ns
    assert np.all(np.abs(simulate(rp).effective_ns - measured) <= 0.02 * measured)


def test_gpu_lag_at_window_start_is_information_and_skew_a_warning(tmp_path):
    """Kernels running when the window opened (launched before it: a GPU that lags the CPU) are expected;
    a kernel that starts before its own launch call means the clocks disagree."""
    from core.analysis.health import check
    side = {h.code: h for h in check(load(STREAMS / "side_stream", use_cache=False))}
    assert side["outside_span"].severity == "info" and "clock_skew" not in side
    events, _ = loop(steps=4)
    kernel = next(e for e in events if e.get("cat") == "kernel")
    call = next(e for e in events if e.get("cat") == "cuda_runtime"
                and e["args"].get("correlation") == kernel["args"]["correlation"])
    kernel["ts"] = call["ts"] - 50.0  # 50 µs before its launch
    skew = {h.code: h for h in check(load(write(tmp_path, events), use_cache=False))}
    assert skew["clock_skew"].severity == "warning" and skew["clock_skew"].count == 1


def test_profiler_overhead_counts_kinetos_activities_not_user_code_named_overhead(tmp_path):
    """Kineto's overhead activities (cat "overhead") are the profiler's; a Python frame or a user annotation
    whose name holds "overhead" is the user's code (torch/_logging's get_structured_logging_overhead is in
    every with_stack trace) and was counted as profiler overhead, with the sum of row ids as its count."""
    from core.analysis.health import check
    events, _ = loop(steps=4)
    steps = sorted((e for e in events if e["name"].startswith("ProfilerStep#")), key=lambda e: e["ts"])
    first = steps[0]
    def x(name, cat, dur):
        return {"ph": "X", "name": name, "cat": cat, "ts": first["ts"] + 1.0, "dur": dur, "pid": 1, "tid": 1,
                "args": {}}
    total = sum(e["dur"] for e in steps)
    buffer_us = 0.02 * total  # 2 % of step time: an "info"
    events += [x("Activity Buffer Request", "overhead", buffer_us),
               x("torch/_logging/_internal.py(1356): get_structured_logging_overhead", "python_function",
                 0.5 * first["dur"]),
               x("measure_overhead", "user_annotation", 0.5 * first["dur"])]
    found = {h.code: h for h in check(load(write(tmp_path, events), use_cache=False))}
    h = found["profiler_overhead"]
    assert h.severity == "info" and h.count == 1
    assert f"{100 * buffer_us / total:.1f} %" in h.message
