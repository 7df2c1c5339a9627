"""Truncated traces (crashed runs, partial copies) load partially with a warning and keep every
complete event before the cut - raw .json cut anywhere, gzip of a cut file, and a cut .gz stream."""
from __future__ import annotations

import gzip
import json
import zlib

import pytest
from helpers import shared_trace

from core.trace.loader import load

SOURCE = "gpu_issues.pt.trace.json.gz"


def complete_events_before_cut(text: bytes) -> dict:
    """Reference: walk the events that are complete in `text` with the stdlib."""
    s = text.decode("utf-8", "replace")
    pos = s.index("[", s.index('"traceEvents"')) + 1
    dec = json.JSONDecoder()
    counts = {"X": 0, "memory": 0, "events": 0}
    while True:
        while pos < len(s) and s[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(s) or s[pos] == "]":
            return counts
        try:
            ev, pos = dec.raw_decode(s, pos)
        except json.JSONDecodeError:
            return counts
        counts["events"] += 1
        counts["X"] += ev.get("ph") == "X" and "ts" in ev
        counts["memory"] += ev.get("name") == "[memory]"


@pytest.fixture(scope="module")
def full_text() -> bytes:
    return gzip.open(shared_trace(SOURCE)).read()


def _check(ts, expected):
    m = ts.primary
    trunc = [w for w in ts.all_warnings if "truncated" in w]
    assert len(trunc) == 1, ts.all_warnings  # said once, with the whole file's count
    assert trunc[0].startswith("file is truncated (crashed run?): loaded ") and "complete events" in trunc[0]
    assert len(m.slices) == expected["X"]
    assert m.counts.events == expected["events"]
    assert len(m.memory) == expected["memory"]
    # what is there is sane: non-negative durations, sorted tracks
    assert (m.slices.dur_ns >= 0).all()


@pytest.mark.parametrize("fraction", [0.03, 0.31, 0.5, 0.77, 0.999])
def test_raw_json_cut(tmp_path, full_text, fraction):
    cut = full_text[: int(len(full_text) * fraction)]
    path = tmp_path / "cut.pt.trace.json"
    path.write_bytes(cut)
    expected = complete_events_before_cut(cut)
    assert expected["X"] > 0
    _check(load(path, use_cache=False), expected)


def test_cut_right_after_an_event_and_before_the_closing_bracket(tmp_path, full_text):
    end = full_text.rindex(b"]")
    for i, cut in enumerate([full_text[: full_text.index(b"},\n  {", len(full_text) // 2) + 2], full_text[:end]]):
        path = tmp_path / f"cut{i}.json"
        path.write_bytes(cut)
        _check(load(path, use_cache=False), complete_events_before_cut(cut))


@pytest.mark.parametrize("fraction", [0.2, 0.6, 0.95])
def test_gzip_of_cut_json(tmp_path, full_text, fraction):
    cut = full_text[: int(len(full_text) * fraction)]
    path = tmp_path / "cut.pt.trace.json.gz"
    path.write_bytes(gzip.compress(cut))
    _check(load(path, use_cache=False), complete_events_before_cut(cut))


@pytest.mark.parametrize("fraction", [0.25, 0.5, 0.9])
def test_cut_gzip_stream(tmp_path, fraction):
    data = shared_trace(SOURCE).read_bytes()
    cut = data[: int(len(data) * fraction)]
    path = tmp_path / "cut.pt.trace.json.gz"
    path.write_bytes(cut)
    inflated = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(cut)
    _check(load(path, use_cache=False), complete_events_before_cut(inflated))


def test_cut_inside_header_is_a_clean_error(tmp_path, full_text):
    from core.trace.model import TraceParseError
    path = tmp_path / "cut.json"
    path.write_bytes(full_text[: full_text.index(b'"traceEvents"') - 10])
    with pytest.raises(TraceParseError):
        load(path, use_cache=False)
