"""HTA adapter: tables on GPU traces, a typed 'unavailable' reason (never an exception) otherwise."""
from __future__ import annotations

from dataclasses import replace

import pytest
from helpers import hta_importable, shared_trace

from core.analysis import hta
from core.trace.loader import load

pytest.importorskip("pandas")



@pytest.mark.skipif(not hta_importable(), reason="traceinsight (hta) not importable here")
def test_gpu_trace_gives_tables():
    ts = load(shared_trace("gpu_issues.pt.trace.json.gz"), use_cache=False)
    report = hta.run_hta(ts)
    assert report.unavailable is None
    temporal = report["temporal_breakdown"]
    assert temporal.ok and "idle_time_pctg" in temporal.table.columns
    assert report["idle_time_breakdown"].ok
    assert report["kernel_breakdown"].ok
    launch = report["kernel_launch_stats"]
    assert launch.ok and {"cpu_duration", "gpu_duration", "launch_delay"} <= set(launch.table.columns)
    assert hta.launch_summary(launch.table)["launches"] > 1000
    # single rank: overlap explains why it is empty instead of failing
    assert not report["comm_comp_overlap"].ok and "single rank" in report["comm_comp_overlap"].unavailable


def test_cpu_only_and_stepless_traces_are_unavailable_with_a_reason():
    cpu = load(shared_trace("cpu_train.pt.trace.json.gz"), use_cache=False)
    r = hta.run_hta(cpu)
    assert r.unavailable and "CPU-only" in r.unavailable
    assert all(not x.ok and x.unavailable for x in r.results.values())
    compiled = load(shared_trace("cpu_compile.pt.trace.json.gz"), use_cache=False)
    assert "CPU-only" in hta.run_hta(compiled).unavailable


def test_size_limit_and_missing_files():
    ts = load(shared_trace("gpu_minimal_opts.pt.trace.json.gz"), use_cache=False)
    assert "limit" in hta.check_available(ts, max_bytes=10)
    moved = replace(ts, models=tuple(replace(m, path="/nonexistent/x.json") for m in ts.models))
    assert "not on disk" in hta.run_hta(moved).unavailable


def test_hta_exceptions_become_reasons(monkeypatch):
    if not hta_importable():
        pytest.skip("hta not importable")
    import hta.trace_analysis as ta_mod

    def boom(self, *a, **k):
        raise TypeError("Cannot setitem on a Categorical with a new category")

    monkeypatch.setattr(ta_mod.TraceAnalysis, "get_temporal_breakdown", boom)
    ts = load(shared_trace("gpu_minimal_opts.pt.trace.json.gz"), use_cache=False)
    report = hta.run_hta(ts, analyses=("temporal_breakdown", "idle_time_breakdown"))
    assert "TypeError" in report["temporal_breakdown"].unavailable
    assert report["idle_time_breakdown"].ok


def test_size_guard_uses_the_decompressed_size():
    """gpu_issues is ~0.3 MB gzipped but ~5 MB of JSON: the guard must see the JSON HTA will parse."""
    path = shared_trace("gpu_issues.pt.trace.json.gz")
    ts = load(path, use_cache=False)
    import os
    packed, raw = os.path.getsize(path), hta.decompressed_size(str(path))
    assert raw > 10 * packed
    limit = (packed + raw) // 2  # the compressed size passes this limit, the decompressed one does not
    reason = hta.check_available(ts, max_bytes=limit)
    assert reason is not None and "limit" in reason and f"{raw / 2**20:.0f} MiB" in reason
    assert hta.check_available(ts, max_bytes=raw + 1) in (None, "HTA is not installed (pip install traceinsight)")
