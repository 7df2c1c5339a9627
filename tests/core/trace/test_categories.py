"""Accelerator categories: every one Kineto writes maps to a kind; an unknown one is a load warning, and the
trace is then not called CPU-only."""
from __future__ import annotations

import json

from core.rules import analyze
from core.trace.loader import load
from core.trace.model import Kind


def _trace(tmp_path, kernel_cat, runtime_cat, name="t.json"):
    ev = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 500}]
    for i in range(5):
        ev.append({"ph": "X", "cat": runtime_cat, "name": "runFunction - job_prep_and_submit_for_execution",
                   "pid": 1, "tid": 1, "ts": 10 + 50 * i, "dur": 5, "args": {"correlation": i + 1}})
        ev.append({"ph": "X", "cat": kernel_cat, "name": f"mtia_kernel_{i}", "pid": 0, "tid": 3, "ts": 20 + 50 * i,
                   "dur": 30, "args": {"correlation": i + 1, "device": 0, "stream": 3}})
    p = tmp_path / name
    p.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ev}))
    return p


def test_mtia_kernels_load_as_device_work(tmp_path):
    m = load(_trace(tmp_path, "mtia_ccp_events", "mtia_runtime"), use_cache=False).primary
    assert int((m.slices.kind == Kind.KERNEL).sum()) == 5 and m.devices == [0]
    assert int((m.slices.kind == Kind.RUNTIME).sum()) == 5
    assert len(m.flows) >= 5  # launches linked by correlation
    assert not any("unknown category" in w for w in m.warnings)
    result = analyze(load(_trace(tmp_path, "mtia_ccp_events", "mtia_runtime", "b.json"), use_cache=False))
    assert not any(f.hint for f in result.findings)
    assert not any("CPU-only" in n.reason for n in result.not_run)


def test_unknown_device_category_is_a_load_warning_not_cpu_only(tmp_path):
    ts = load(_trace(tmp_path, "npu_kernel", "npu_runtime"), use_cache=False)
    warned = [w for w in ts.all_warnings if "unknown category" in w]
    assert any("'npu_kernel'" in w and w.startswith("5 events") for w in warned)
    assert any("'npu_runtime'" in w for w in warned)
    result = analyze(ts)
    assert not any(f.hint for f in result.findings)
    reasons = " ".join(n.reason for n in result.not_run)
    assert "CPU-only" not in reasons and "unknown categories: npu_kernel" in reasons


def test_known_non_device_categories_do_not_warn(tmp_path):
    ts = load(_trace(tmp_path, "kernel", "cuda_runtime"), use_cache=False)
    assert not any("unknown category" in w for w in ts.all_warnings)
