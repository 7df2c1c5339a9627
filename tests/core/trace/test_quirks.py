"""Real-world Kineto / Chrome-trace quirks, on small synthetic traces written here."""
from __future__ import annotations

import json

import numpy as np
import pytest

from core.trace.loader import load
from core.trace.model import Kind, TrackKind

BASE_NS = 1_700_000_000_000_000_000


def write(tmp_path, events, name="t.pt.trace.json", raw: str | None = None, **top):
    path = tmp_path / name
    doc = {"schemaVersion": 1, **top, "traceEvents": events, "traceName": name}
    path.write_text(raw if raw is not None else json.dumps(doc, indent=1))
    return path


def X(name, ts, dur=1.0, cat="cpu_op", pid=1, tid=1, **args):
    ev = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        ev["args"] = args
    return ev


def test_unquoted_na_values(tmp_path):
    events = [X("aten::mm", 10.0, 5.0, **{"External id": 3}), X("aten::add", 20.0, 1.0)]
    text = json.dumps({"traceEvents": events}, indent=1).replace('"External id": 3', '"External id": N/A')
    ts = load(write(tmp_path, None, raw=text), use_cache=False)
    m = ts.primary
    assert len(m.slices) == 2
    assert (m.slices.external_id == -1).all()
    assert any("N/A" in w for w in ts.all_warnings)


def test_record_window_end_outlier_is_dropped(tmp_path):
    events = [X("a", 1000.0, 10.0), X("b", 1020.0, 5.0),
              {"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": 9.9e12}]
    m = load(write(tmp_path, events), use_cache=False).primary
    assert len(m.instants) == 0
    assert m.span_ns == (0, 25_000)


def test_string_pid_tid_make_a_spans_track(tmp_path):
    events = [X("op", 5.0, 1.0), X("PyTorch Profiler (0)", 0.0, 100.0, cat="Trace", pid="Spans", tid="PyTorch Profiler"),
              {"ph": "i", "s": "g", "name": "Iteration Start", "pid": "Traces", "tid": "Trace PyTorch Profiler", "ts": 0.0}]
    m = load(write(tmp_path, events), use_cache=False).primary
    spans = np.flatnonzero(m.tracks.kind == TrackKind.SPANS)
    assert len(spans) == 1 and m.tracks.pid[spans[0]] < 0
    row = m.track_rows(int(spans[0]))
    assert m.name(row.start) == "PyTorch Profiler (0)" and m.slices.kind[row.start] == Kind.TRACE
    assert len(m.instants) == 1


def test_events_without_dur_and_begin_end_pairs(tmp_path):
    events = [{"ph": "X", "cat": "cpu_op", "name": "nodur", "pid": 1, "tid": 1, "ts": 3.0},
              {"ph": "B", "cat": "user_annotation", "name": "outer", "pid": 1, "tid": 2, "ts": 10.0},
              {"ph": "B", "cat": "user_annotation", "name": "inner", "pid": 1, "tid": 2, "ts": 12.0},
              {"ph": "E", "pid": 1, "tid": 2, "ts": 15.5},
              {"ph": "E", "pid": 1, "tid": 2, "ts": 20.0},
              {"ph": "E", "pid": 1, "tid": 3, "ts": 21.0}]
    ts = load(write(tmp_path, events), use_cache=False)
    m = ts.primary
    names = {m.name(i): (int(m.slices.ts_ns[i]), int(m.slices.dur_ns[i]), int(m.slices.depth[i])) for i in range(len(m.slices))}
    assert names["nodur"] == (0, 0, 0)
    assert names["outer"] == (7_000, 10_000, 0)
    assert names["inner"] == (9_000, 3_500, 1)
    warnings = " ".join(ts.all_warnings)
    assert "no duration" in warnings and "without a partner" in warnings


def test_ns_resolution_float_timestamps(tmp_path):
    events = [X("a", 1000.000, 0.001), X("b", 1000.123456, 1.5), X("c", 1002.5, 0.0005)]
    m = load(write(tmp_path, events, baseTimeNanoseconds=BASE_NS), use_cache=False).primary
    got = {m.name(i): (int(m.slices.ts_ns[i]), int(m.slices.dur_ns[i])) for i in range(3)}
    assert got["a"] == (0, 1)
    assert got["b"] == (123, 1500)  # 123.456 ns rounds to 123
    assert got["c"][0] == 2500
    assert m.meta.base_unix_ns == BASE_NS + 1_000_000


def test_instant_and_counter_events(tmp_path):
    events = [X("a", 0.0, 10.0),
              {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "marker", "pid": 1, "tid": 1, "ts": 4.0},
              {"ph": "C", "name": "queue", "pid": 1, "tid": 1, "ts": 2.0, "args": {"depth": 3, "bytes": 1.5e3}},
              {"ph": "C", "name": "queue", "pid": 1, "tid": 1, "ts": 6.0, "args": {"depth": 5, "label": "x"}},
              {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 5.0,
               "args": {"Total Reserved": 2048, "Total Allocated": 1024, "Bytes": 512, "Device Id": 0,
                        "Device Type": 1, "Addr": 12345}}]
    m = load(write(tmp_path, events), use_cache=False).primary
    assert len(m.instants) == 1 and m.strings[m.instants.name[0]] == "marker" and m.instants.ts_ns[0] == 4000
    c = m.counters
    series = [m.strings[s] for s in c.series]
    assert sorted(zip(series, c.ts_ns.tolist(), c.value.tolist())) == [
        ("queue/bytes", 2000, 1500.0), ("queue/depth", 2000, 3.0), ("queue/depth", 6000, 5.0)]
    mem = m.memory
    assert len(mem) == 1 and mem.total_allocated[0] == 1024 and mem.bytes[0] == 512 and mem.device[0] == 0
    assert mem.track[0] >= 0 and m.tracks.kind[mem.track[0]] == TrackKind.CPU_THREAD


def test_absolute_microsecond_traces_are_rebased(tmp_path):
    t0_us = 1_700_000_000_000_000.0  # µs since the epoch, no baseTimeNanoseconds (older Kineto)
    events = [X("a", t0_us + 5.0, 2.0), X("b", t0_us + 10.0, 2.0)]
    ts = load(write(tmp_path, events), use_cache=False)
    m = ts.primary
    assert m.slices.ts_ns.tolist() == [0, 5000]
    assert ts.base_unix_ns == 1_700_000_000_000_005_000  # exact (through a float: ...005_120; issue 28)


def test_overlapping_kernels_on_one_stream_are_all_kept(tmp_path):
    k = dict(cat="kernel", pid=0, tid=7)
    events = [X("k1", 0.0, 50.0, **k, stream=7, device=0, correlation=1),
              X("k2", 10.0, 5.0, **k, stream=7, device=0, correlation=2),
              X("k3", 20.0, 50.0, **k, stream=7, device=0, correlation=3),
              X("cudaLaunchKernel", 0.0, 1.0, cat="cuda_runtime", correlation=1),
              X("cudaLaunchKernel", 9.0, 1.0, cat="cuda_runtime", correlation=2)]
    m = load(write(tmp_path, events), use_cache=False).primary
    gpu = np.flatnonzero(m.slices.kind == Kind.KERNEL)
    assert len(gpu) == 3
    assert sorted(m.slices.depth[gpu].tolist()) == [0, 1, 1]
    assert m.devices == [0]
    launch = m.flows.kind == 0
    assert sorted(m.name(d) for d in m.flows.dst[launch]) == ["k1", "k2"]


def test_bare_array_and_compact_json(tmp_path):
    events = [X("a", 1.0, 2.0), X("b", 2.0, 0.5)]
    p1 = tmp_path / "bare.json"
    p1.write_text(json.dumps(events))
    p2 = tmp_path / "compact.json"
    p2.write_text(json.dumps({"traceEvents": events}, separators=(",", ":")))
    for p in (p1, p2):
        m = load(p, use_cache=False).primary
        assert [m.name(i) for i in range(len(m.slices))] == ["a", "b"]


def test_tiny_chunks_with_separators_inside_strings(tmp_path, monkeypatch):
    """Chunk cuts land everywhere, including inside names that contain the separator text."""
    from core.trace import kineto
    events = [X(f"op{i}" + ('},\n  {"fake": 1' if i % 7 == 0 else ""), float(i), 0.5, **{"External id": i})
              for i in range(400)]
    path = write(tmp_path, events)
    whole = load(path, use_cache=False).primary
    monkeypatch.setattr(kineto, "CHUNK_BYTES", 300)
    chunked = load(path, use_cache=False)
    m = chunked.primary
    assert not chunked.all_warnings
    for col, arr in whole.slices.columns().items():
        if col in ("name", "cat"):
            assert whole.strings.lookup(arr) == m.strings.lookup(getattr(m.slices, col))
        else:
            np.testing.assert_array_equal(arr, getattr(m.slices, col), err_msg=col)


@pytest.mark.parametrize("pid", [1, 2**40 + 3])
def test_metadata_names_threads(tmp_path, pid):
    events = [X("a", 1.0, 2.0, pid=pid, tid=9),
              {"ph": "M", "name": "thread_name", "pid": pid, "tid": 9, "args": {"name": "trainer"}},
              {"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": 9, "args": {"sort_index": 3}}]
    m = load(write(tmp_path, events), use_cache=False).primary
    t = int(m.slices.track[0])
    assert m.track_label(t) == "trainer" and m.tracks.sort_index[t] == 3


def test_null_and_huge_arg_values(tmp_path):
    py = dict(cat="python_function")
    events = [X("root", 0.0, 10.0, **py, **{"Python id": 1, "Python parent id": None}),
              X("child", 1.0, 5.0, **py, **{"Python id": 2, "Python parent id": 1}),
              X("big", 2.0, 1.0, **py, **{"Python id": 2**60 + 7, "Python parent id": 2})]
    m = load(write(tmp_path, events), use_cache=False).primary
    got = {m.name(i): (int(m.slices.python_id[i]), int(m.slices.python_parent_id[i])) for i in range(3)}
    assert got == {"root": (1, -1), "child": (2, 1), "big": (2**60 + 7, 2)}
