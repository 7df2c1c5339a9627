"""Chunks decoded in cache-sized pieces (core.trace.pieces) give exactly the model of whole-chunk
decoding, on real traces; irregular pieces fall back to the whole-chunk path."""
from __future__ import annotations

import gzip

import pytest
from helpers import shared_trace

from core.trace import kineto, pieces
from core.trace.loader import load


def _whole_chunks(monkeypatch):
    monkeypatch.setattr(pieces, "PIECE_BYTES", 1 << 40)  # never split: the path before pieces existed


@pytest.mark.parametrize("name", ["gpu_gpt_big.pt.trace.json.gz", "gpu_issues.pt.trace.json.gz"])
def test_pieces_equal_whole_chunks(models_equal, monkeypatch, name):
    monkeypatch.setenv("PTPROF_WORKERS", "0")
    path = shared_trace(name)
    split = load(path, use_cache=False).primary
    _whole_chunks(monkeypatch)
    whole = load(path, use_cache=False).primary
    models_equal(split, whole)
    assert split.counts == whole.counts


@pytest.mark.parametrize("piece_kb", [4, 64])
def test_small_pieces_equal_whole_chunks(models_equal, monkeypatch, piece_kb):
    """Many pieces per chunk (flows, memory events, metadata spread over pieces) change nothing."""
    monkeypatch.setenv("PTPROF_WORKERS", "0")
    path = shared_trace("gpu_issues.pt.trace.json.gz")
    monkeypatch.setattr(pieces, "PIECE_BYTES", piece_kb << 10)
    split = load(path, use_cache=False).primary
    _whole_chunks(monkeypatch)
    models_equal(split, load(path, use_cache=False).primary)


def test_piece_bounds_cover_chunk_at_event_boundaries():
    text = gzip.open(shared_trace("gpu_issues.pt.trace.json.gz")).read()
    doc = kineto.locate(text)
    (a, b), *_ = kineto.chunk_bounds(text, doc, 1 << 30)
    chunk = bytes(kineto.chunk_view(text, a, b))
    bounds = pieces.piece_bounds(chunk, 1, len(chunk) - 1, 64 << 10)
    assert len(bounds) > 10
    assert bounds[0][0] == 1 and bounds[-1][1] == len(chunk) - 1
    for (_, end), (start, _) in zip(bounds, bounds[1:]):
        assert chunk[end - 1:end] == b"}" and chunk[start:start + 1] == b"{"
        assert chunk[end:start].strip() == b","
    n = sum(len(kineto._decode_events(b"[" + chunk[x:y] + b"]")) for x, y in bounds)
    assert n == len(kineto._decode_events(chunk))


def test_irregular_piece_falls_back_to_whole_chunk(models_equal, monkeypatch, tmp_path):
    """An unquoted N/A in one piece: the chunk takes the tolerant path, same result either way."""
    monkeypatch.setenv("PTPROF_WORKERS", "0")
    text = gzip.open(shared_trace("gpu_issues.pt.trace.json.gz")).read()
    at = text.index(b'"External id": ', len(text) // 2) + len(b'"External id": ')
    end = text.index(b",", at)
    path = tmp_path / "na.pt.trace.json"
    path.write_bytes(text[:at] + b"N/A" + text[end:])
    monkeypatch.setattr(pieces, "PIECE_BYTES", 64 << 10)
    split = load(path, use_cache=False)
    assert any("N/A" in w for w in split.all_warnings)
    _whole_chunks(monkeypatch)
    models_equal(split.primary, load(path, use_cache=False).primary)


def test_pieces_keep_every_event_shape(models_equal, monkeypatch, tmp_path):
    """B/E pairs, counters, instants, flows, metadata and string pids spread over many pieces."""
    import json
    monkeypatch.setenv("PTPROF_WORKERS", "0")
    events = [{"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "trainer"}}]
    for k in range(400):
        t = k * 100.0
        events += [
            {"ph": "X", "cat": "cpu_op", "name": f"aten::op{k % 7}", "pid": 1, "tid": 2, "ts": t, "dur": 50.0,
             "args": {"External id": k, "Input Dims": [[k % 3, 4]], "Input type": ["float"]}},
            {"ph": "B", "cat": "user_annotation", "name": "outer", "pid": 1, "tid": 3, "ts": t + 1},
            {"ph": "E", "pid": 1, "tid": 3, "ts": t + 9},
            {"ph": "C", "name": "queue", "pid": 1, "tid": 2, "ts": t + 2, "args": {"depth": k % 5}},
            {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 2, "ts": t + 3, "s": "t",
             "args": {"Total Allocated": k * 10, "Bytes": 8, "Device Id": 0, "Device Type": 1, "Addr": k}},
            {"ph": "s", "cat": "fwdbwd", "id": k, "pid": 1, "tid": 2, "ts": t},
            {"ph": "f", "cat": "fwdbwd", "id": k, "pid": 1, "tid": 2, "ts": t + 20, "bp": "e"},
            {"ph": "X", "cat": "Trace", "name": "span", "pid": "Spans", "tid": "PyTorch Profiler", "ts": t, "dur": 1.0},
        ]
    path = tmp_path / "shapes.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": events}, indent=2).replace("},\n    {", "},\n  {"))
    monkeypatch.setattr(pieces, "PIECE_BYTES", 8 << 10)
    split = load(path, use_cache=False)
    _whole_chunks(monkeypatch)
    whole = load(path, use_cache=False)
    models_equal(split.primary, whole.primary)
    assert len(split.primary.counters) == 400 and len(split.primary.memory) == 400
