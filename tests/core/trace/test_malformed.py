"""Bad input: every class gives a TraceParseError with a one-line reason, and `ptprof info` exits 2
with one line on stderr - quickly, with bounded memory, never a traceback or a hang."""
from __future__ import annotations

import gzip
import os
import random
import resource
import time

import pytest

from core.cli import main
from core.trace.loader import load
from core.trace.model import TraceParseError


def _write(path, data: bytes):
    path.write_bytes(data)
    return path


def _gz(path, data: bytes):
    with gzip.open(path, "wb") as fh:
        fh.write(data)
    return path


CASES = {
    "not_json.json": lambda p: _write(p, b"hello, this is not json\n"),
    "json_not_trace.json": lambda p: _write(p, b'{"a": 1, "b": [1, 2, 3]}'),
    "trace_events_not_list.json": lambda p: _write(p, b'{"traceEvents": {"a": 1}}'),
    "array_of_numbers.json": lambda p: _write(p, b"[1, 2, 3]"),
    "empty.json": lambda p: _write(p, b""),
    "whitespace.json": lambda p: _write(p, b"  \n\n "),
    "corrupt.json.gz": lambda p: _write(p, b"\x1f\x8b\x08\x00" + random.Random(1).randbytes(5000)),
    "gzip_of_text.json.gz": lambda p: _gz(p, b"not json at all " * 1000),
    "binary_junk.json": lambda p: _write(p, random.Random(2).randbytes(200_000)),
    "nul_bytes.json": lambda p: _write(p, b"\x00" * 10_000),
    "utf16.json": lambda p: _write(p, '{"traceEvents": []}'.encode("utf-16")),
    "deeply_nested_array.json": lambda p: _write(p, b"[" * 200_000 + b"]" * 200_000),
    "deeply_nested_events.json": lambda p: _write(p, b'{"traceEvents": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"),
    "deeply_nested_object.json": lambda p: _write(p, b'{"a":' * 100_000 + b"1" + b"}" * 100_000),
    "huge_single_line_string.json": lambda p: _write(p, b'{"traceEvents": "' + b"a" * 40_000_000 + b'"}'),
    "huge_single_line_junk.json": lambda p: _write(p, b"x" * 40_000_000),
    "gzip_bomb.json.gz": lambda p: _gz(p, b'{"traceEvents": [' + b" " * (300 << 20)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_is_a_clean_error(tmp_path, name, capsys):
    path = CASES[name](tmp_path / name)
    t0 = time.perf_counter()
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(TraceParseError) as err:
        load(path, use_cache=False)
    assert time.perf_counter() - t0 < 20
    # bounded memory: never more than ~4x the input size plus a fixed allowance
    grew_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0
    assert grew_kb < 4 * os.path.getsize(path) / 1024 + 400_000
    reason = err.value.reason
    assert reason and "\n" not in reason and "Traceback" not in reason
    assert main(["info", str(path), "--no-cache"]) == 2
    out, errtext = capsys.readouterr()
    assert out == ""
    assert errtext.count("\n") == 1 and errtext.startswith("ptprof: ") and reason in errtext


def test_missing_path_and_empty_dir(tmp_path, capsys):
    with pytest.raises(TraceParseError, match="no such file"):
        load(tmp_path / "nope.json", use_cache=False)
    d = tmp_path / "logs"
    d.mkdir()
    (d / "readme.txt").write_text("x")
    with pytest.raises(TraceParseError, match="no trace files"):
        load(d, use_cache=False)
    assert main(["info", str(d)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_reasons_name_the_problem(tmp_path):
    def reason(name):
        with pytest.raises(TraceParseError) as err:
            load(CASES[name](tmp_path / name), use_cache=False)
        return err.value.reason

    assert "empty" in reason("empty.json")
    assert "not JSON" in reason("not_json.json")
    assert "traceEvents" in reason("json_not_trace.json")
    assert "gzip" in reason("corrupt.json.gz")
    assert "not a trace" in reason("gzip_bomb.json.gz")
