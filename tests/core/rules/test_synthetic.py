"""Rules that no shared trace triggers, on small Kineto traces written here in the real event format
(same categories, arg names and pid/tid conventions as the H200 traces): they must fire when the
pattern is there, and the same trace without the pattern must stay quiet."""
from __future__ import annotations

import re

import kineto_events
from kineto_events import x as _x

from core.rules import analyze
from core.trace.loader import load

GIB = 2**30


def _write(tmp_path, events, name="t.json", **top):
    return kineto_events.write(tmp_path / name, events, device="H200", total_mem=140 * GIB, **top)


def _steps(n=3, step_us=1000):
    return [_x(f"ProfilerStep#{i}", "user_annotation", i * step_us, step_us - 10) for i in range(n)]


def _optimizer(ts, n_kernels, kernel_name, corr0, cls="Adam"):
    ev = [_x(f"Optimizer.step#{cls}.step", "user_annotation", ts, 400)]
    for k in range(n_kernels):
        t = ts + 5 + k * 20
        ev.append(_x("cudaLaunchKernel", "cuda_runtime", t, 5, correlation=corr0 + k))
        ev.append(_x(kernel_name, "kernel", t + 10, 4, pid=0, tid=7, correlation=corr0 + k, stream=7, device=0))
    return ev


def _rules(path):
    return {f.rule for f in analyze(load(path, use_cache=False)).findings}


def test_single_tensor_optimizer(tmp_path):
    per_param = "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(int)"
    ev = _steps()
    for i in range(3):
        ev += _optimizer(i * 1000 + 100, 18, per_param, corr0=100 * i + 1)
    assert "single_tensor_optimizer" in _rules(_write(tmp_path, ev))
    foreach = "void at::native::multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>>(int)"
    ev = _steps()
    for i in range(3):
        ev += _optimizer(i * 1000 + 100, 18, foreach, corr0=100 * i + 1)
    assert "single_tensor_optimizer" not in _rules(_write(tmp_path, ev, "b.json"))


def test_single_tensor_optimizer_names_only_arguments_that_exist(tmp_path):
    """LBFGS (its step runs the closure's forward and backward) and user optimizers have no foreach/fused
    argument: no finding that would tell the user to pass one. Adagrad has foreach but no CUDA fused."""
    per_param = "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(int)"
    for cls in ("LBFGS", "SparseAdam", "MyShampoo"):
        ev = _steps()
        for i in range(3):
            ev += _optimizer(i * 1000 + 100, 18, per_param, corr0=100 * i + 1, cls=cls)
        assert "single_tensor_optimizer" not in _rules(_write(tmp_path, ev, f"{cls}.json")), cls
    ev = _steps()
    for i in range(3):
        ev += _optimizer(i * 1000 + 100, 18, per_param, corr0=100 * i + 1, cls="Adagrad")
    found = [f for f in analyze(load(_write(tmp_path, ev, "adagrad.json"), use_cache=False)).findings
             if f.rule == "single_tensor_optimizer"]
    assert len(found) == 1 and "Adagrad(..., foreach=True)" in found[0].fix and "fused" not in found[0].fix


def test_sync_memcpy_and_allocator_churn(tmp_path):
    ev = _steps()
    for i in range(3):
        ev.append(_x("cudaMemcpy", "cuda_runtime", i * 1000 + 50, 80, correlation=10 + i))
        ev.append(_x("Memcpy HtoD (Pinned -> Device)", "gpu_memcpy", i * 1000 + 60, 30, pid=0, tid=7,
                     correlation=10 + i, bytes=4096, stream=7, device=0))
        ev.append(_x("cudaMalloc", "cuda_runtime", i * 1000 + 300, 200, correlation=20 + i))
    got = _rules(_write(tmp_path, ev))
    assert {"sync_memcpy", "allocator_churn"} <= got


def _mem(ts, alloc, reserved):
    return {"ph": "i", "s": "t", "name": "[memory]", "ts": ts, "pid": 1, "tid": 1,
            "args": {"Device Type": 1, "Device Id": 0, "Addr": 1, "Bytes": 1024, "Total Allocated": alloc,
                     "Total Reserved": reserved}}


def test_memory_near_capacity_and_growth(tmp_path):
    ev = _steps(4)
    ev.append(_x("k", "kernel", 10, 5, pid=0, tid=7, correlation=1, stream=7, device=0))
    for i in range(4):  # allocated grows 1 GiB per step, reserved reaches 99 % of 140 GiB
        ev.append(_mem(i * 1000 + 900, (10 + i) * GIB, int(139.0 * GIB)))
    got = _rules(_write(tmp_path, ev))
    assert {"memory_near_capacity", "memory_growth"} <= got
    ev = _steps(4) + [_x("k", "kernel", 10, 5, pid=0, tid=7, correlation=1, stream=7, device=0)]
    ev += [_mem(i * 1000 + 900, 10 * GIB, 20 * GIB) for i in range(4)]  # flat and far from full
    got = _rules(_write(tmp_path, ev, "flat.json"))
    assert not {"memory_near_capacity", "memory_growth"} & got


def test_rank_imbalance(tmp_path):
    d = tmp_path / "ranks"
    d.mkdir()
    for rank, step_us in ((0, 1000), (1, 1500)):
        ev = [_x(f"ProfilerStep#{i}", "user_annotation", i * step_us, step_us - 10) for i in range(3)]
        ev.append(_x("k", "kernel", 10, 5, pid=0, tid=7, correlation=1, stream=7, device=0))
        _write(d, ev, f"rank{rank}.pt.trace.json",
               distributedInfo={"backend": "nccl", "rank": rank, "world_size": 2})
    result = analyze(load(d, use_cache=False))
    f = next(f for f in result.findings if f.rule == "rank_imbalance")
    assert f.title.startswith("[rank 1] slowest rank") and re.search(r"\b5[01] % longer", f.title)
    assert f.model_index == 1 and "rank 0" in f.title
