"""FLOPs from recorded shapes, TFLOP/s and MFU per step."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from kineto_events import x as _x

from core.analysis.flops import device_peaks, op_flops, step_flops
from core.trace.loader import load

DATA = Path(__file__).resolve().parents[2] / "data"


def test_flops_match_torch_flop_counter_on_a_real_trace():
    """conv (strided, dilated; forward via mkldnn, backward with output_mask), addmm, mm (autograd's), bmm, matmul:
    equal to torch.utils.flop_counter's count of the same forward + backward, plus the CPU sdpa by formula."""
    expected = json.loads((DATA / "cpu_flops.expected.json").read_text())
    m = load(DATA / "cpu_flops.pt.trace.json.gz", use_cache=False).primary
    f = step_flops(m)
    assert len(f) == 3 and op_flops(m).uncounted == 0
    assert f.flops.tolist() == [expected["flops_per_step"] + expected["sdpa_flops_per_step"]] * 3
    assert not f.backward_estimated.any()
    assert np.isnan(f.mfu_pct).all() and (f.tflops > 0).all()  # CPU: no peak


@pytest.mark.parametrize("name, entry", [
    ("NVIDIA H200", "NVIDIA H200 (SXM)"), ("NVIDIA H200 NVL", "NVIDIA H200 NVL"),
    ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM"), ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe"),
    ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 (SXM4 / PCIe)"), ("NVIDIA A100 80GB PCIe", "NVIDIA A100 (SXM4 / PCIe)"),
    ("NVIDIA L4", "NVIDIA L4"), ("NVIDIA L40S", "NVIDIA L40S"), ("NVIDIA A10", "NVIDIA A10"),
    ("NVIDIA B200", "NVIDIA B200"), ("AMD Instinct MI300X", "AMD Instinct MI300X"),
    ("AMD Instinct MI250X", "AMD Instinct MI250X"), ("Tesla V100-SXM2-32GB", "NVIDIA V100"),
])
def test_device_peak_lookup(name, entry):
    got = device_peaks(name)
    assert got["name"] == entry and got["origin"]


def test_unknown_device_has_no_peak():
    assert device_peaks("NVIDIA L40") == {} and device_peaks("Some NPU 9000") == {}


def _mm_trace(tmp_path, device="NVIDIA H200", backward_shapes=True, name="t.json"):
    m_, k_, n_ = 4096, 4096, 4096
    ev = []
    for i in range(2):
        t = i * 1000
        ev.append(_x(f"ProfilerStep#{i}", "user_annotation", t, 1000))
        ev.append(_x("aten::linear", "cpu_op", t + 10, 100, **{"Input Dims": [[m_, k_], [n_, k_], []],
                                                               "Input type": ["c10::BFloat16"] * 2 + [""]}))
        ev.append(_x("aten::mm", "cpu_op", t + 20, 50, **{"Input Dims": [[m_, k_], [k_, n_]],
                                                          "Input type": ["c10::BFloat16"] * 2}))
        ev.append(_x("autograd::engine::evaluate_function: MmBackward0", "cpu_op", t + 300, 200, tid=2))
        if backward_shapes:
            ev.append(_x("aten::mm", "cpu_op", t + 310, 50, tid=2, **{"Input Dims": [[m_, n_], [n_, k_]],
                                                                       "Input type": ["c10::BFloat16"] * 2}))
        else:
            ev.append(_x("aten::mm", "cpu_op", t + 310, 50, tid=2))
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": device}] if device else [],
           "traceEvents": ev}  # Kineto's order: the header before the events
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return load(p, use_cache=False).primary


def test_mfu_is_achieved_over_the_dense_peak(tmp_path):
    f = step_flops(_mm_trace(tmp_path))
    per_mm = 2.0 * 4096 ** 3
    assert f.flops.tolist() == [2 * per_mm] * 2  # linear -> mm counted once, + the backward mm
    assert f.tflops == pytest.approx(2 * per_mm / 1e-3 / 1e12)
    assert f.mfu_pct == pytest.approx(100 * (2 * per_mm / 1e-3) / 989.5e12)
    assert f.peak_tflops["bf16"] == 989.5 and f.device == "NVIDIA H200"


def test_backward_without_shapes_gets_the_2x_rule(tmp_path):
    f = step_flops(_mm_trace(tmp_path, backward_shapes=False))
    assert f.backward_estimated.all()
    assert f.flops.tolist() == [3 * 2.0 * 4096 ** 3] * 2


def test_unknown_device_gives_tflops_only(tmp_path):
    f = step_flops(_mm_trace(tmp_path, device="Mystery Accelerator"))
    assert (f.tflops > 0).all() and np.isnan(f.mfu_pct).all() and f.peak_tflops == {}


def test_no_shapes_means_no_flops(tmp_path):
    p = tmp_path / "n.json"
    p.write_text(json.dumps({"traceEvents": [_x("ProfilerStep#1", "user_annotation", 0, 100),
                                             _x("aten::mm", "cpu_op", 10, 10)]}))
    f = step_flops(load(p, use_cache=False).primary)
    assert np.isnan(f.flops).all() and np.isnan(f.tflops).all()


PAIRS = DATA / "device" / "pairs"


def test_mfu_of_a_real_h200_gemm_loop_matches_its_unprofiled_step_time():
    """H200 bf16 GEMM loop of known FLOPs (tests/data/device/pairs/README.md: 4 bias-free Linear(8192, 8192),
    batch 8192: 11 GEMMs of 2 x 8192^3 per step); MFU within 5 % of FLOPs / unprofiled step time / peak. The CPU
    runs ahead of the GPU (1.6 ms ProfilerStep spans, 17.4 ms steps): the step time is the GPU span."""
    timings = {r["variant"]: r["step_ms"] for r in json.loads((PAIRS / "timings.json").read_text())["results"]}
    m = load(PAIRS / "gemm_bf16", use_cache=False).primary
    f = step_flops(m)
    assert f.device == "NVIDIA H200" and f.peak_tflops["bf16"] == 989.5
    assert f.flops.tolist() == [11 * 2.0 * 8192 ** 3] * len(f)
    truth_mfu = 100.0 * 11 * 2 * 8192 ** 3 / (timings["gemm_bf16"] / 1e3) / 989.5e12  # 70.1 %
    assert float(np.median(f.mfu_pct)) == pytest.approx(truth_mfu, rel=0.05)
    from core.analysis.metrics import rank_metrics
    assert rank_metrics(m).mfu_pct == pytest.approx(truth_mfu, rel=0.05)
