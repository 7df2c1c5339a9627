"""core.analysis.memory on real traces: series per device, peaks, totals, NVML series."""
from __future__ import annotations

import numpy as np
from helpers import shared_trace

from core.analysis.memory import counter_series, memory_series, peak_in_range, step_peaks
from core.trace.loader import load


def test_gpu_series_and_peak_match_raw_events():
    m = load(shared_trace("gpu_issues.pt.trace.json.gz"), use_cache=False).primary
    series = memory_series(m)
    assert [s.label for s in series] == ["GPU 0"]
    s = series[0]
    raw = m.memory.total_allocated[(m.memory.device_type == 1) & (m.memory.device == 0)]
    assert s.peak_allocated_bytes == raw.max() > 0
    assert len(s.ts_ns) == len(raw) and np.all(np.diff(s.ts_ns) >= 0)
    assert s.total_bytes == m.meta.device_properties[0]["totalGlobalMem"]
    assert 0 < s.peak_pct_of_total < 100
    assert peak_in_range(s, int(s.ts_ns[0]), int(s.ts_ns[-1])) == s.peak_allocated_bytes
    with_cpu = memory_series(m, include_cpu=True)
    assert with_cpu[-1].label == "CPU" and with_cpu[-1].total_bytes is None


def test_growing_memory_trace_has_increasing_step_peaks():
    m = load(shared_trace("gpu_memory.pt.trace.json.gz"), use_cache=False).primary
    s = memory_series(m)[0]
    peaks = step_peaks(s, m.steps.ts_ns, m.steps.dur_ns)
    assert len(peaks) == len(m.steps) >= 3
    assert peaks[-1] > peaks[0]  # logits appended every step (traces README)


def test_no_memory_events_gives_no_series():
    m = load(shared_trace("gpu_minimal_opts.pt.trace.json.gz"), use_cache=False).primary
    assert memory_series(m) == []


def test_nvml_counter_series():
    ts = load(shared_trace("gpu_issues.pt.trace.json.gz"), use_cache=False)
    series = {c.name: c for c in counter_series(ts.nvml, ts.nvml_strings)}
    assert "gpu0/gpu_util" in series
    util = series["gpu0/gpu_util"]
    assert len(util.ts_ns) > 3 and np.all(np.diff(util.ts_ns) >= 0)
    assert np.all((util.value >= 0) & (util.value <= 100))
