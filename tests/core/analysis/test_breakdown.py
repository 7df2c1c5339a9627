"""Per-step time breakdown on real traces: the parts add up, and each trace's known character shows."""
from __future__ import annotations

import kineto_events
import numpy as np
import pytest
from helpers import shared_trace
from kineto_events import launched as _launched, x as _x

from core.analysis import intervals
from core.analysis.breakdown import PARTS, step_breakdown
from core.analysis.step_windows import StepWindows
from core.trace.loader import load

_CACHE: dict = {}


def _model(name):
    if name not in _CACHE:
        _CACHE[name] = load(shared_trace(name), use_cache=False).primary
    return _CACHE[name]


@pytest.mark.parametrize("name", ["gpu_issues.pt.trace.json.gz", "gpu_clean.pt.trace.json.gz",
                                  "gpu_dataloader.pt.trace.json.gz", "gpu_compile_small.pt.trace.json.gz",
                                  "gpu_minimal_opts.pt.trace.json.gz"])
def test_parts_sum_to_step_duration(name):
    b = step_breakdown(_model(name))
    assert b.has_gpu and len(b) >= 3
    total = sum(getattr(b, p) for p in PARTS)
    assert np.all(np.abs(total - b.dur_ns) <= 2)  # ns rounding at interval edges only
    assert all((getattr(b, p) >= 0).all() for p in PARTS)


def test_dataloader_trace_is_dominated_by_the_dataloader():
    b = step_breakdown(_model("gpu_dataloader.pt.trace.json.gz"))
    t = b.totals()
    assert t["dataloader_ns"] > 0.5 * t["dur_ns"]
    assert (b.dataloader_cpu_ns > 0.5 * b.dur_ns).all()


def test_compile_step_is_attributed_to_compile():
    b = step_breakdown(_model("gpu_compile_small.pt.trace.json.gz"))
    worst = int(np.argmax(b.dur_ns))  # the recompiling step (~3.9 s)
    assert b.compile_ns[worst] > 0.8 * b.dur_ns[worst]


def test_issues_trace_has_sync_wait_and_clean_has_none():
    assert step_breakdown(_model("gpu_issues.pt.trace.json.gz")).sync_wait_ns.sum() > 0
    assert step_breakdown(_model("gpu_clean.pt.trace.json.gz")).sync_wait_ns.sum() == 0


def test_cpu_only_trace_has_no_gpu_parts():
    b = step_breakdown(_model("cpu_train.pt.trace.json.gz"))
    assert not b.has_gpu
    assert all(getattr(b, p).sum() == 0 for p in PARTS)
    assert b.dataloader_cpu_ns.sum() > 0  # num_workers=0 DataLoader on the training thread


def test_intersect_and_subtract():
    a = (np.array([0, 10, 30]), np.array([5, 20, 40]))
    b = (np.array([3, 15]), np.array([12, 35]))
    s, e = intervals.intersect(*a, *b)
    assert list(zip(s.tolist(), e.tolist())) == [(3, 5), (10, 12), (15, 20), (30, 35)]
    s, e = intervals.subtract(*a, *b)
    assert list(zip(s.tolist(), e.tolist())) == [(0, 3), (12, 15), (35, 40)]
    z = np.zeros(0, np.int64)
    assert len(intervals.intersect(z, z, *b)[0]) == 0
    assert list(intervals.subtract(*b, z, z)[0]) == [3, 15]


def _kineto(tmp_path, events, name="t.json"):
    return load(kineto_events.write(tmp_path / name, events), use_cache=False).primary


def test_idle_split_has_hta_other_class(tmp_path):
    """HTA's three classes: launched after the GPU went idle = host wait; queued and < 30 µs = kernel wait;
    queued and >= 30 µs = other (was all 'kernel wait' before)."""
    ev = [_x("ProfilerStep#1", "user_annotation", 0, 1000)]
    ev += _launched("k0", 1, 10, 100, 1)  # busy 10-110
    ev += _launched("k1", 20, 120, 100, 2)  # queued, gap 110-120 (10 µs): kernel wait
    ev += _launched("k2", 30, 300, 100, 3)  # queued, gap 220-300 (80 µs): other
    ev += _launched("k3", 450, 460, 100, 4)  # launched at 450 after idle from 400: host wait 400-460
    b = step_breakdown(_kineto(tmp_path, ev))
    assert int(b.kernel_wait_ns[0]) == 10_000
    assert int(b.other_idle_ns[0]) == 80_000
    assert int(b.host_wait_ns[0]) == 60_000 + 10_000 + 440_000  # before k0 (launch at 1 > gap start 0), 400-460, tail
    total = sum(getattr(b, p) for p in PARTS)
    assert int(total[0]) == int(b.dur_ns[0])


def test_communication_kernels_are_their_own_category(tmp_path):
    ev = [_x("ProfilerStep#1", "user_annotation", 0, 1000)]
    ev += _launched("void at::native::vectorized_elementwise_kernel<4>()", 1, 10, 100, 1)  # 10-110 compute
    ev += _launched("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", 2, 60, 200, 2,
                    stream=20)  # 60-260: 50 µs overlapped, 150 µs exposed
    b = step_breakdown(_kineto(tmp_path, ev))
    assert int(b.compute_ns[0]) == 100_000
    assert int(b.comm_ns[0]) == 150_000
    assert int(b.memcpy_ns[0]) == 0
    total = sum(getattr(b, p) for p in PARTS)
    assert int(total[0]) == int(b.dur_ns[0])


def test_windows_come_in_as_an_argument(tmp_path):
    """The step windows are a seam: another definition (GPU-side steps) gives its own windows."""
    ev = [_x("ProfilerStep#1", "user_annotation", 0, 1000)]
    ev += _launched("k0", 1, 10, 100, 1)
    m = _kineto(tmp_path, ev)
    t0 = int(m.steps.ts_ns[0])
    custom = StepWindows.of([7], [t0 + 10_000], [t0 + 110_000])
    b = step_breakdown(m, windows=custom)
    assert b.number.tolist() == [7] and int(b.compute_ns[0]) == 100_000 and int(b.idle_ns[0]) == 0
    assert int(step_breakdown(m).dur_ns[0]) == 1_000_000  # default windows unchanged (separate cache key)


def test_gpu_idle_names_other_and_its_own_fix(tmp_path):
    from core.rules import analyze
    ev = []
    for i in range(3):
        t = i * 1000
        ev.append(_x(f"ProfilerStep#{i}", "user_annotation", t, 1000))
        for k in range(5):  # kernels queued early, each 150 µs after the previous one ends: "other"
            ev += _launched(f"k{k}", t + 1 + k, t + 5 + k * 190, 40, 100 * i + k + 1)
    m_path = tmp_path / "o.json"
    import json
    m_path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ev}))
    f = next(f for f in analyze(load(m_path, use_cache=False)).findings if f.rule == "gpu_idle")
    assert f.title.split("(")[1].startswith("other ")
    assert f.fix.startswith("other (") and "fusing small kernels will not help" in f.fix
