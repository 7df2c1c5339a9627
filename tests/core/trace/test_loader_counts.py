"""Counts on every real trace (tests/data/traces + PTPROF_SHARED_TRACES) equal what plain `json` counts."""
from __future__ import annotations

import gzip
import json
from collections import Counter

import numpy as np
import pytest
from helpers import shared_trace, trace_names

from core.trace.loader import load
from core.trace.model import Kind

GZ_TRACES = trace_names("*.pt.trace.json.gz")


def plain_counts(path) -> Counter:
    doc = json.loads(gzip.open(path).read())
    c = Counter()
    for e in doc["traceEvents"]:
        c["events"] += 1
        if e.get("ph") == "X":
            c[e.get("cat")] += 1
            if e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith("ProfilerStep#"):
                c["steps"] += 1
        if e.get("name") == "[memory]":
            c["memory"] += 1
    return c


@pytest.mark.parametrize("name", GZ_TRACES)
def test_counts_match_plain_json(name):
    path = shared_trace(name)
    expected = plain_counts(path)
    ts = load(path, use_cache=False)
    m = ts.primary
    assert m.counts.events == expected["events"]
    assert m.counts.kernels == expected["kernel"]
    assert m.counts.memcpy == expected["gpu_memcpy"]
    assert m.counts.memset == expected["gpu_memset"]
    assert m.counts.cpu_ops == expected["cpu_op"]
    assert m.counts.python == expected["python_function"]
    assert m.counts.memory == expected["memory"]
    assert len(m.memory) == expected["memory"]
    assert len(m.steps) == expected["steps"]
    # every complete event became a slice
    n_complete = sum(v for k, v in expected.items() if k not in ("events", "memory", "steps"))
    assert len(m.slices) == n_complete
    assert not ts.all_warnings, ts.all_warnings


def test_ddp2_loads_as_two_ranks():
    ts = load(shared_trace("gpu_ddp2"), use_cache=False)
    assert ts.ranks == [0, 1]
    assert len(ts.models) == 2
    for m in ts.models:
        assert m.meta.distributed_info["world_size"] == 2
    # one time base: both ranks start within a second of each other
    starts = [int(m.slices.ts_ns.min()) for m in ts.models]
    assert min(starts) == 0 and max(starts) < 1_000_000_000


def test_model_invariants_gpu_issues():
    m = load(shared_trace("gpu_issues.pt.trace.json.gz"), use_cache=False).primary
    s = m.slices
    assert s.ts_ns.dtype == np.int64 and s.dur_ns.dtype == np.int64
    assert s.ts_ns.min() == 0 or len(m.memory) and m.memory.ts_ns.min() == 0
    assert (s.dur_ns >= 0).all()
    # rows sorted by track then ts
    assert (np.diff(s.track) >= 0).all()
    for t in range(len(m.tracks)):
        r = m.track_rows(t)
        assert (np.diff(s.ts_ns[r]) >= 0).all()
    # launches: every kernel has a CPU launch via correlation
    launches = m.flows.kind == 0
    kernel_rows = np.flatnonzero(s.kind == Kind.KERNEL)
    assert np.isin(kernel_rows, m.flows.dst[launches]).mean() > 0.99
    assert (s.kind[m.flows.src[launches]] >= Kind.RUNTIME).all()
    # forward -> backward flows exist (70 fwdbwd pairs in the file)
    assert (m.flows.kind == 1).sum() == 70
    # steps are ProfilerStep#N, in order
    assert m.steps.number.tolist() == sorted(m.steps.number.tolist())
    assert all(m.name(r).startswith("ProfilerStep#") for r in m.steps.slice)
    # steps have their own row; python frames too; ops nest: each row's start lies inside a row one level up
    from core.trace.model import TrackKind
    assert m.tracks.kind[s.track[m.steps.slice[0]]] == TrackKind.STEPS
    ops_track = int(np.flatnonzero((m.tracks.kind == TrackKind.CPU_THREAD))[0])
    r = m.track_rows(ops_track)
    ts, end, dep = s.ts_ns[r], s.ts_ns[r] + s.dur_ns[r], s.depth[r]
    for i in range(0, len(ts), 7):
        if dep[i] == 0:
            continue
        parents = np.flatnonzero((dep[:i] == dep[i] - 1) & (ts[:i] <= ts[i]) & (end[:i] >= end[i]))
        assert len(parents), (i, m.name(r.start + i))
    # the device and its memory come from deviceProperties
    assert m.devices == [0]
    assert m.meta.device_total_memory(0) == 150109880320
    assert m.meta.profiler_options["with_stack"] == 1
    # string columns: input shapes kept as raw JSON text
    conv = np.flatnonzero(s.name == m.strings.find("aten::conv2d"))
    assert len(conv) and m.strings[s.input_dims[conv[0]]].startswith("[[")


def test_gpu_lanes_keep_overlapping_kernels():
    from core.trace.build import assign_lanes
    ts = np.array([0, 10, 20, 100], dtype=np.int64)
    dur = np.array([50, 5, 50, 10], dtype=np.int64)
    depth = np.zeros(4, dtype=np.int16)
    assign_lanes(ts, dur, np.array([0, 4]), np.array([True]), depth)
    assert depth.tolist() == [0, 1, 1, 0]


def test_depth_vectorised_matches_stack():
    from core.trace.build import compute_depth
    rng = np.random.default_rng(0)
    # random properly nested intervals on 3 tracks
    rows = []
    for t in range(3):
        def gen(a, b, d, t=t):  # this track
            x = a
            while x < b and len(rows) < 3000:
                w = int(rng.integers(0, max(1, (b - x) // 2) + 1))
                rows.append((t, x, w, d))
                if w > 4 and d < 8:
                    gen(x + 1, x + w - 1, d + 1)
                x += w + int(rng.integers(0, 3))
        gen(0, 10_000, 0)
    rows.sort(key=lambda r: (r[0], r[1], -r[2]))
    arr = np.array(rows, dtype=np.int64)
    offsets = np.searchsorted(arr[:, 0], np.arange(4))
    depth = compute_depth(arr[:, 1], arr[:, 2], offsets)
    # reference: explicit stack
    ref = []
    for t in range(3):
        stack = []
        for _, s, d, _ in [r for r in rows if r[0] == t]:
            while stack and stack[-1] <= s and not (stack[-1] == s and d == 0 and False):
                stack.pop()
            ref.append(len(stack))
            stack.append(s + d)
    assert depth.tolist() == ref
