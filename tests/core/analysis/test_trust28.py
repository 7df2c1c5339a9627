"""Issue 28's arithmetic and health fixes on small synthetic traces: cuDNN RNN memsets are not lost launch
records, most GPU work without a launch record is a warning, fp32 on TF32 tensor cores divides by the TF32
peak (and says so)."""
from __future__ import annotations

import kineto_events
import pytest
from kineto_events import x as _x

from core.analysis import health
from core.analysis.flops import step_flops
from core.trace.loader import load


def _flow(cid, ts_src, ts_dst, tid_dst=7):
    return [{"ph": "s", "id": cid, "pid": 1, "tid": 1, "ts": ts_src, "cat": "ac2g", "name": "ac2g"},
            {"ph": "f", "id": cid, "pid": 0, "tid": tid_dst, "ts": ts_dst, "cat": "ac2g", "name": "ac2g", "bp": "e"}]


def _load(tmp_path, ev, name="t.json", device="NVIDIA H100 80GB HBM3"):
    return load(kineto_events.write(tmp_path / name, ev, device=device), use_cache=False)


def _rnn_steps(memsets_in_rnn: bool):
    ev, cid = [], 1
    for i in range(4):
        t = i * 1000
        ev.append(_x(f"ProfilerStep#{i}", "user_annotation", t, 900))
        ev.append(_x("aten::_cudnn_rnn" if memsets_in_rnn else "aten::something", "cpu_op", t + 10, 400))
        for k in range(5):  # memsets cuDNN calls without launching GPU work
            ev.append(_x("cudaMemsetAsync", "cuda_runtime", t + 20 + 10 * k, 5, correlation=10_000 + 10 * i + k))
        ev.append(_x("cudaLaunchKernel", "cuda_runtime", t + 100, 5, correlation=cid))
        ev.append(_x("RNN_blockPersist_fp_LSTM", "kernel", t + 120, 300, pid=0, tid=7, correlation=cid,
                     device=0, stream=7))
        ev += _flow(cid, t + 100, t + 120)
        cid += 1
    return ev


def test_cudnn_rnn_memsets_are_not_lost_launch_records(tmp_path):
    codes = {h.code for h in health.check(_load(tmp_path, _rnn_steps(True)))}
    assert "launch_without_gpu" not in codes
    # the same memsets outside a cuDNN RNN op are still reported
    codes = {h.code for h in health.check(_load(tmp_path, _rnn_steps(False), "u.json"))}
    assert "launch_without_gpu" in codes


def test_most_gpu_work_without_launch_records_is_a_warning(tmp_path):
    ev = []
    for i in range(3):
        t = i * 1000
        ev.append(_x(f"ProfilerStep#{i}", "user_annotation", t, 900))
        ev.append(_x("aten::mm", "cpu_op", t + 10, 50))
        for k in range(4):
            ev.append(_x(f"k{k}", "kernel", t + 100 + 100 * k, 80, pid=0, tid=7, device=0, stream=7))
    hs = [h for h in health.check(_load(tmp_path, ev)) if h.code == "gpu_without_launch"]
    assert hs and hs[0].severity == "warning" and hs[0].count == 12


def _gemm_trace(tmp_path, kernel):
    ev = []
    for i in range(2):
        t = i * 1000
        ev.append(_x(f"ProfilerStep#{i}", "user_annotation", t, 1000))
        ev.append(_x("aten::mm", "cpu_op", t + 20, 50, **{"Input Dims": [[4096, 4096], [4096, 4096]],
                                                          "Input type": ["float", "float"]}))
        ev.append(_x(kernel, "kernel", t + 100, 700, pid=0, tid=7, device=0, stream=7))
    return _load(tmp_path, ev, name=f"{len(kernel)}.json").primary


def test_mfu_of_fp32_on_tf32_tensor_cores_uses_the_tf32_peak(tmp_path):
    tf32 = step_flops(_gemm_trace(tmp_path, "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32"))
    plain = step_flops(_gemm_trace(tmp_path, "ampere_sgemm_128x64_nn"))
    assert tf32.fp32_math == "tf32" and plain.fp32_math == "fp32"
    # same FLOPs and time: the MFU differs by the peaks' ratio (H100 SXM: 494.7 vs 67 TFLOP/s)
    assert tf32.mfu_pct[0] * tf32.peak_tflops["tf32"] == pytest.approx(plain.mfu_pct[0] * plain.peak_tflops["fp32"])
    assert tf32.mfu_pct[0] < plain.mfu_pct[0] / 5


def test_older_kinetos_runtime_category_gets_launch_links(tmp_path):
    """cat "Runtime" (older Kineto) for cudaLaunchKernel: its kernels are linked, so launch delay and the
    launch-bound / host-wait split have data."""
    from core.analysis.metrics import rank_metrics
    from core.trace.model import FlowKind
    ev = []
    for i in range(3):
        t = i * 1000
        ev.append(_x(f"ProfilerStep#{i}", "user_annotation", t, 900))
        ev.append(_x("cudaLaunchKernel", "Runtime", t + 100, 5, correlation=i + 1))
        ev.append(_x("k", "Kernel", t + 110, 50, pid=0, tid=7, correlation=i + 1, device=0, stream=7))
    m = _load(tmp_path, ev).primary
    assert int((m.flows.kind == FlowKind.LAUNCH).sum()) == 3
    assert rank_metrics(m).launch_delay_us["launches"] == 3
