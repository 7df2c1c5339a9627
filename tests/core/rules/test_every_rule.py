"""Every rule runs without raising on every trace we have (issue 12 item 1): tests/data, the shared traces
and synthetic mixtures. Rules are called directly, not through `analyze` (which turns a raise into a
'check not run'), so an exception fails the test with its traceback."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import shared_trace
from kineto_events import x as _x

from core.rules import all_rules
from core.rules.base import RuleContext
from core.rules.config import load_config
from core.trace.loader import load

DATA = Path(__file__).resolve().parents[2] / "data"
GIB = 2**30
SHARED = ["cpu_compile.pt.trace.json.gz", "cpu_train.pt.trace.json.gz", "gpu_clean.pt.trace.json.gz",
          "gpu_compile_small.pt.trace.json.gz", "gpu_dataloader.pt.trace.json.gz", "gpu_gpt_big.pt.trace.json.gz",
          "gpu_issues.pt.trace.json.gz", "gpu_memory.pt.trace.json.gz", "gpu_minimal_opts.pt.trace.json.gz",
          "gpu_ddp2", "gpu_big_stack.pt.trace.json.xz"]


def run_every_rule(trace_set) -> int:
    ctx = RuleContext(trace_set, load_config())
    n = 0
    for r in all_rules():
        r.run(ctx)  # raises -> the test fails, with the traceback
        n += 1
    return n


def _data_traces() -> list[Path]:
    """Every run bundle (a folder with traces/) and every loose trace file anywhere under tests/data."""
    bundles = sorted(p.parent for p in DATA.rglob("traces") if p.is_dir())
    files = sorted(p for p in DATA.rglob("*.pt.trace.json*")
                   if p.is_file() and "traces" not in p.relative_to(DATA).parts[:-1])
    return files + bundles


@pytest.mark.parametrize("path", _data_traces(), ids=lambda p: str(p.relative_to(DATA)))
def test_every_rule_on_test_data(path):
    assert run_every_rule(load(path, use_cache=False)) == len(all_rules())


@pytest.mark.parametrize("name", SHARED)
def test_every_rule_on_shared_traces(name, loaded):
    assert run_every_rule(loaded(shared_trace(name))) == len(all_rules())


# ---- synthetic mixtures, in the Kineto event format of the H200 traces ----


def _steps(n=3, step_us=1000, tid=1):
    return [_x(f"ProfilerStep#{i}", "user_annotation", i * step_us, step_us - 10, tid=tid) for i in range(n)]


def _copy(ts, corr, direction, device=0, kind="Pageable"):
    name = (f"Memcpy HtoD ({kind} -> Device)" if direction == "HtoD" else f"Memcpy DtoH (Device -> {kind})")
    return [_x("aten::copy_", "cpu_op", ts, 60),
            _x("cudaMemcpyAsync", "cuda_runtime", ts + 5, 40, correlation=corr),
            _x(name, "gpu_memcpy", ts + 10, 30, pid=device, tid=7, correlation=corr, stream=7, device=device,
               bytes=1 << 20),
            _x("cudaStreamSynchronize", "cuda_runtime", ts + 46, 10, correlation=corr + 100000)]


def _kernel(ts, corr, device=0, name="void gemm_kernel(float*)", stream=7):
    return [_x("aten::mm", "cpu_op", ts, 20),
            _x("cudaLaunchKernel", "cuda_runtime", ts + 2, 5, correlation=corr),
            _x(name, "kernel", ts + 10, 50, pid=device, tid=stream, correlation=corr, stream=stream, device=device)]


def _doc(events, devices=1, **top):
    props = [{"id": d, "name": "NVIDIA H200", "totalGlobalMem": 140 * GIB} for d in range(devices)]
    return {"schemaVersion": 1, "deviceProperties": props, "traceEvents": events, **top}


def _both_directions():
    ev = _steps()
    for i in range(3):
        ev += _copy(i * 1000 + 100, 10 + i, "HtoD") + _copy(i * 1000 + 400, 20 + i, "DtoH")
        ev += _copy(i * 1000 + 700, 30 + i, "HtoD", kind="Pinned")
    return _doc(ev)


def _several_devices():
    ev = _steps()
    for i in range(3):
        for d in range(3):
            ev += _kernel(i * 1000 + 100 + d * 100, 100 * d + i + 1, device=d)
            ev += _copy(i * 1000 + 150 + d * 100, 500 + 100 * d + i, "HtoD" if d % 2 else "DtoH", device=d)
    return _doc(ev, devices=3)


def _cpu_only():
    ev = _steps()
    for i in range(3):
        ev += [_x("aten::mm", "cpu_op", i * 1000 + 100, 300), _x("aten::item", "cpu_op", i * 1000 + 500, 50),
               _x("aten::_local_scalar_dense", "cpu_op", i * 1000 + 505, 40)]
    return {"schemaVersion": 1, "traceEvents": ev}


def _no_steps():
    ev = []
    for i in range(5):
        ev += _kernel(i * 200, i + 1) + _copy(i * 200 + 100, 50 + i, "DtoH")
    return _doc(ev)


def _only_kernels():
    return _doc([_x("void k(float*)", "kernel", i * 100, 40, pid=0, tid=7, stream=7, device=0, correlation=i + 1)
                 for i in range(20)])


def _empty():
    return _doc([])


def _strange_values():
    """Values a tester fed the rules: a string totalGlobalMem, a huge byte count, a non-string device name."""
    ev = _steps() + _copy(100, 1, "HtoD") + _kernel(300, 2)
    ev[-1]["args"]["bytes"] = 10**30
    doc = _doc(ev)
    doc["deviceProperties"] = [{"id": 0, "name": 5, "totalGlobalMem": "lots"}]
    return doc


SYNTHETIC = {"both_copy_directions": _both_directions, "several_devices": _several_devices,
             "cpu_only": _cpu_only, "no_steps": _no_steps, "only_kernels": _only_kernels, "empty": _empty,
             "strange_values": _strange_values}


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_every_rule_on_synthetic_mixtures(name, tmp_path):
    p = tmp_path / f"{name}.pt.trace.json"
    p.write_text(json.dumps(SYNTHETIC[name]()))
    assert run_every_rule(load(p, use_cache=False)) == len(all_rules())


def test_every_rule_on_a_multi_rank_folder(tmp_path):
    for rank in range(2):
        doc = _both_directions()
        doc["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": 2}
        doc["traceEvents"] += _kernel(2500, 900, name="ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)")
        (tmp_path / f"rank{rank}.pt.trace.json").write_text(json.dumps(doc))
    ts = load(tmp_path, use_cache=False)
    assert len(ts.models) == 2
    assert run_every_rule(ts) == len(all_rules())


def test_pageable_copies_in_both_directions_give_two_findings(tmp_path):
    from core.rules.memcpy import pageable_memcpy
    p = tmp_path / "both.pt.trace.json"
    p.write_text(json.dumps(_both_directions()))
    out = pageable_memcpy.run(RuleContext(load(p, use_cache=False), load_config()))
    titles = sorted(f.title for f in out.findings)
    assert len(titles) == 2 and titles[0].startswith("Device→host") and titles[1].startswith("Host→device")


def test_a_failing_rule_is_one_line_not_a_traceback(tmp_path, capsys, caplog, monkeypatch):
    """The engine keeps its promise for a rule that still fails at run time: one 'check not run'
    line, no traceback (PTPROF_DEBUG=1 brings the traceback back, in the log)."""
    import logging

    from core.cli import main
    from core.rules import memcpy
    from core.rules.base import FnRule

    def broken(ctx):
        raise TypeError("'Source' object is not subscriptable")
    monkeypatch.setattr(memcpy, "RULES", (FnRule("pageable_memcpy", "broken on purpose", broken),))
    monkeypatch.delenv("PTPROF_DEBUG", raising=False)
    p = tmp_path / "both.pt.trace.json"
    p.write_text(json.dumps(_both_directions()))
    with caplog.at_level(logging.DEBUG, logger="core.rules"):
        main(["analyze", str(p), "--no-cache"])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert "pageable_memcpy: rule failed: TypeError: 'Source' object is not subscriptable" in captured.out
    assert not any(r.exc_info for r in caplog.records)
    caplog.clear()
    monkeypatch.setenv("PTPROF_DEBUG", "1")
    with caplog.at_level(logging.DEBUG, logger="core.rules"):
        main(["analyze", str(p), "--no-cache"])
    assert any(r.exc_info and r.exc_info[0] is TypeError for r in caplog.records)
