"""The C event scanner (core/trace/_scan.c) gives exactly the columns of the msgspec path, on every
shared trace and on hand-written edge cases; anything irregular goes back to the Python path."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import SAMPLE, shared_trace
from scan_helpers import _both, _canon

from core.trace import columns
from core.trace.columns import events_to_columns, scan_columns
from core.trace.loader import load

needs_scanner = pytest.mark.skipif(not columns.scan_available(), reason="C scanner not built (no compiler)")

SHARED = ["cpu_compile.pt.trace.json.gz", "cpu_train.pt.trace.json.gz", "gpu_clean.pt.trace.json.gz",
          "gpu_compile_small.pt.trace.json.gz", "gpu_dataloader.pt.trace.json.gz", "gpu_gpt_big.pt.trace.json.gz",
          "gpu_issues.pt.trace.json.gz", "gpu_memory.pt.trace.json.gz", "gpu_minimal_opts.pt.trace.json.gz",
          "gpu_ddp2"]


def _load(path, monkeypatch, scanner: bool):
    monkeypatch.setattr(columns, "_DISABLED", not scanner)
    return load(path, use_cache=False)


@needs_scanner
@pytest.mark.parametrize("name", SHARED)
def test_scanner_models_equal_python_models(models_equal, monkeypatch, name):
    path = shared_trace(name)
    monkeypatch.setenv("PTPROF_WORKERS", "0")  # both paths in this process
    fast, slow = _load(path, monkeypatch, True), _load(path, monkeypatch, False)
    assert len(fast.models) == len(slow.models)
    for a, b in zip(fast.models, slow.models):
        models_equal(a, b)


@needs_scanner
def test_big_inputs_scanned_by_threads_give_the_same_model(monkeypatch):
    """Big inputs are scanned in chunks by several threads: same model as one Python pass."""
    path = shared_trace("gpu_gpt_big.pt.trace.json.gz")
    monkeypatch.setenv("PTPROF_WORKERS", "2")
    fast = load(path, use_cache=False).primary
    monkeypatch.setenv("PTPROF_WORKERS", "0")
    slow = _load(path, monkeypatch, False).primary
    assert fast.counts == slow.counts
    np.testing.assert_array_equal(fast.slices.ts_ns, slow.slices.ts_ns)


@needs_scanner
def test_sample_loads_through_the_scanner():
    text = __import__("gzip").open(SAMPLE).read()
    start = text.index(b"[", text.index(b'"traceEvents"'))
    end = text.rindex(b"]") + 1
    assert scan_columns(text, start, end) is not None or b"N/A" in text[start:end]


# --- chunk level: both paths on the same bytes ------------------------------------------------------

def _events(*evs) -> bytes:
    return b",\n  ".join(e if isinstance(e, bytes) else json.dumps(e).encode() for e in evs)


EDGE = _events(
    {"ph": "X", "cat": "kernel", "name": "k\u00e9rnel<\"q\">\n\t\\/", "pid": 0, "tid": 7, "ts": 5106526177447.136,
     "dur": 1.5e1, "args": {"External id": 3, "correlation": 9, "stream": 7, "device": 0, "grid": [1, 2, 3],
                            "block": [128, 1, 1], "registers per thread": 32, "est. achieved occupancy %": 50,
                            "Ev Idx": [{"a": [1, "]}"]}, None, True, False, -0.5e-3]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm \U0001F600", "pid": "Spans", "tid": "Traces", "ts": 1,
     "dur": 2, "args": {"Input Dims": [[8192, 8192], []], "Input Strides": [[1, 8192]],
                        "Input type": ["float", ""], "Sequence number": None, "Call stack": "a.py(1): f;b.py(2): g",
                        "External id": None, "est. achieved occupancy %": None}},
    b'{"ph":"X","cat":"cpu_op","name":"exp","pid":1,"tid":1,"ts":1.00000000000000000001e3,"dur":0.1E-2,'
    b'"args":{"External id":12,"External id":13},"args":{"Python id":4}}',
    b'{"ph": "X", "name": "ascii\\u0041\\ud83d\\ude00", "pid": 1, "tid": 1, "ts": 12345678901234567890, "dur": 0}',
    {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 2, "ts": 3.25, "s": "t",
     "args": {"Total Reserved": 2097152, "Total Allocated": 1024, "Bytes": -512, "Addr": 94523,
              "Device Id": 0, "Device Type": 1}},
    {"ph": "i", "name": "marker", "pid": 1, "tid": 2, "ts": 4},
    {"ph": "s", "id": 5, "pid": 1, "tid": 2, "ts": 5, "cat": "ac2g", "name": "ac2g"},
    {"ph": "f", "id": "flow-x", "pid": 1, "tid": 2, "ts": 6, "cat": "ac2g", "name": "ac2g", "bp": "e"},
    {"ph": "t", "id": None, "pid": 1, "tid": 2, "ts": 6},
    {"ph": "s", "id": 2 ** 62 + 5, "pid": 1, "tid": 2, "ts": 5, "cat": "fwdbwd"},
    {"ph": "C", "name": "gpu", "pid": 1, "tid": 0, "ts": 7, "args": {"util": 93, "mem": 1.5, "flag": True, "s": "x"}},
    {"ph": "C", "name": "nots", "pid": 1, "tid": 0, "args": {"v": 1}},
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "python \u00e9"}},
    {"ph": "M", "name": "process_sort_index", "pid": "Spans", "tid": 0, "args": {"sort_index": 5, "labels": None}},
    {"ph": "B", "name": "open", "pid": 1, "tid": 3, "ts": 8}, {"ph": "E", "pid": 1, "tid": 3, "ts": 9},
    {"ph": "X", "name": "no ts", "pid": 1, "tid": 3}, {"ph": "Q", "name": "odd phase", "ts": 1}, {},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": 10,
     "dur": 3, "args": {"bytes": 2 ** 40, "stream": 70000, "device": 40000}},
    {"ph": "X", "cat": "python_function", "name": "nn.Module: Linear_0", "pid": 1, "tid": 1, "ts": 11, "dur": 1,
     "args": {"Python id": 17, "Python parent id": -1, "Python module id": 3}},
)


@needs_scanner
def test_edge_cases_match_the_python_path():
    fast, slow = _both(EDGE)
    assert fast is not None
    assert _canon(fast) == _canon(slow)
    chunk = b"[" + EDGE + b"]"
    idx, offsets = columns.as_sparse("src_offset", fast.args["src_offset"])
    assert len(idx) == len(fast.rows["ts"]) and all(chunk[o:o + 1] == b"{" for o in offsets.tolist())
    assert fast.n_events == EDGE.count(b'"ph"') + 1  # and the empty {}
    assert fast.skipped == slow.skipped > 0


# keys are matched as literals in the buffer (text + closing quote): near misses must read as other keys
NEAR_KEYS = _events(
    {"ph": "X", "cat": "cpu_op", "name": "n", "pid": 1, "tid": 1, "ts": 1, "dur": 2, "tsx": 9, "t": 3,
     "durat": 4, "namespace": "x", "p": 1, "pidx": 5, "": 6, "args": {
         "Python i": 1, "Python idx": 2, "Python": 3, "External id ": 4, "External": 5, "Ev Idx": {"a": [1]},
         "Ev Id": 7, "Record function id": None, "Concrete Inputs": ["", "[64, 10]"], "Fwd thread id": 0,
         "External id": 11, "Sequence numbe": 12, "stream": 3, "streams": 4, "": 1}},
    {"ph": "X", "cat": "python_function", "name": "f", "pid": 1, "tid": 1, "ts": 2, "dur": 1,
     "args": {"Python parent id": 7, "Python id": 8, "Python parent": 9, "Python parent id2": 10}},
)


@needs_scanner
def test_near_miss_keys_match_the_python_path():
    fast, slow = _both(NEAR_KEYS)
    assert fast is not None
    assert _canon(fast) == _canon(slow)
    # the same events with the last key right at the end of the range (short-buffer compare path)
    for text in (b'{"ph":"X","name":"a","ts":1,"dur":1,"pid":1,"tid":1,"args":{"Python id":1}}',
                 b'{"ph":"X","ts":1,"tid":1,"pid":1,"dur":1,"name":"a","args":{"Ev Idx":1,"stream":2}}'):
        fast, slow = _both(text)
        assert fast is not None and _canon(fast) == _canon(slow)


def _shuffled_events(seed: int, n: int) -> bytes:
    """n events of several kinds, each with a random subset of its keys in a random order, args
    sometimes missing, repeated or unknown: the scanner guesses each next key from the last event's
    order and fills rows with defaults blocks ahead (1024 rows), so neither may leak a value into an
    event that lacks it (an instant or metadata event moved out of the rows included)."""
    import random
    rnd = random.Random(seed)
    top = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 5108453475800.683,
           "dur": 3.5, "id": 7}
    args = {"External id": 11, "Python id": 4, "Python parent id": 3, "Ev Idx": 1, "stream": 7, "device": 0,
            "correlation": 99, "Sequence number": 5, "Input Dims": [[2, 3]], "grid": [1, 1, 1],
            "est. achieved occupancy %": 25, "Call stack": "a.py(1): f", "Record function id": 0,
            "Concrete Inputs": ["", "1"], "bytes": 64, "registers per thread": 32, "unknown arg": [1, {"x": 2}]}
    out = []
    for i in range(n):
        ev = {k: v for k, v in top.items() if rnd.random() < 0.9}
        ev["ph"] = rnd.choice("XXXXXXXiBEMC") if rnd.random() < 0.3 else "X"
        ev["ts"] = top["ts"] + i
        ev["name"] = f"op{rnd.randrange(40)}"
        if rnd.random() < 0.8:
            keys = [k for k in args if rnd.random() < 0.5]
            if rnd.random() < 0.5:
                rnd.shuffle(keys)
            ev["args"] = {k: args[k] for k in keys}
        if rnd.random() < 0.1:
            ev["odd key"] = {"nested": [i]}
        items = list(ev.items())
        if rnd.random() < 0.3:
            rnd.shuffle(items)
        text = json.dumps(dict(items)).encode()
        if rnd.random() < 0.03 and "args" in ev:  # a second "args" replaces the first
            text = text[:-1] + b', "args": {"Python id": 8}}'
        out.append(text)
    return b",\n  ".join(out)


@needs_scanner
@pytest.mark.parametrize("seed", range(4))
def test_keys_in_any_order_and_missing_args_match_the_python_path(seed):
    fast, slow = _both(_shuffled_events(seed, 3000))
    assert fast is not None
    assert _canon(fast) == _canon(slow)


@needs_scanner
def test_compact_and_spacious_layouts_match():
    evs = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i * 1.5, "dur": 1.25,
            "args": {"External id": i, "Input Dims": [[i, 2]]}} for i in range(50)]
    compact = b",".join(json.dumps(e, separators=(",", ":")).encode() for e in evs)
    spacious = b" ,\r\n\t ".join(json.dumps(e, indent=4).encode() for e in evs)
    for text in (compact, spacious):
        fast, slow = _both(text)
        assert fast is not None and _canon(fast) == _canon(slow)


@needs_scanner
def test_unwrapped_ranges_and_empty_arrays():
    text = _events({"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1})
    buf = b"xx" + text + b"yy"
    assert scan_columns(buf, 2, 2 + len(text)).n_events == 1
    assert scan_columns(b"[ ]", 0, 3).n_events == 0
    assert scan_columns(b"", 0, 0).n_events == 0


@needs_scanner
@pytest.mark.parametrize("bad", [
    b'{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": N/A, "dur": 1}',  # Kineto's unquoted N/A
    b'{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "args": {"Concrete Inputs": [N/A]}}',
    b'{"ph": "X", "name": "a", "ts": NaN}',
    b'{"ph": "X", "name": "a", "ts": 1,}',  # trailing comma
    b'{"ph": "X", "name": "a", "ts": 1',  # truncated
    b'{"ph": "X", "name": "a\x01", "ts": 1}',  # control character in a string
    b'{"ph": "X", "name": "\\ud800", "ts": 1}',  # lone surrogate
    b'{"ph": "X", "name": "\\x41", "ts": 1}',  # bad escape
    b'{"ph": "X", "name": "\xff\xfe", "ts": 1}',  # invalid UTF-8
    b'{"ph": "\xc3", "name": "a", "ts": 1}',  # invalid UTF-8 in a string that is not interned (found by fuzzing)
    b'{"ph": "X", "name": "\xed\xa0\x80", "ts": 1}',  # a UTF-8-encoded surrogate
    b'{"ph": "X", "name": "a", "ts": 1, "args": {"stream": true}}',  # bool for an int
    b'{"ph": "X", "name": "a", "ts": 1, "args": {"External id": 1.0}}',  # float for an int
    b'{"ph": "X", "name": "a", "ts": 1, "args": {"correlation": 99999999999999999999}}',  # > int64
    b'{"ph": "X", "name": null, "ts": 1}',
    b'{"ph": "X", "name": "a", "pid": 1.5, "ts": 1}',
    b'{"ph": "X", "name": "a", "pid": null, "ts": 1}',
    b'{"ph": "X", "name": "a", "ts": "1"}',
    b'{"ph": "X", "name": "a", "ts": 01}',
    b'{"ph": "X", "name": "a", "ts": 1.}',
    b'{"ph": "X", "name": "a", "args": [1]}',
    b'{"ph": "X", "name": "a", "args": {"Call stack": 5}}',
    b'{"ph": "X", "name": "a", "\\u0074s": 1}',  # escaped key
    b'{"ph": "X"} {"ph": "X"}',  # missing comma
    b'{"ph": "X", "name": "a", "ts": 1, "x": tru}',
    b'{"ph": "X", "name": "a", "ts": 1, "deep": ' + b'[' * 600 + b']' * 600 + b'}',  # nesting bound
])
def test_irregular_input_goes_to_the_python_path(bad):
    chunk = b"[" + bad + b"]"
    assert scan_columns(chunk, 0, len(chunk)) is None


@needs_scanner
def test_scan_range_is_checked():
    with pytest.raises(ValueError):
        scan_columns(b"[]", 0, 5)


def test_disabled_or_missing_scanner_means_python_path(monkeypatch):
    monkeypatch.setattr(columns, "_DISABLED", True)
    assert scan_columns(b"[]", 0, 2) is None
    monkeypatch.setattr(columns, "_DISABLED", False)
    monkeypatch.setattr(columns, "_scan", None)
    assert scan_columns(b"[]", 0, 2) is None


def test_scanner_is_built_where_a_compiler_exists():
    """Where gcc and Python's headers exist (CI, this machine), an install that silently dropped the
    optional extension is a build regression; without them the pure-Python path is the designed fallback."""
    import shutil
    import sysconfig
    if not shutil.which("gcc") or not (Path(sysconfig.get_paths()["include"]) / "Python.h").is_file():
        pytest.skip("no C compiler or no Python headers: the scanner is optional there")
    assert columns._scan is not None, "core/trace/_scan.c was not built by pip install -e ."


@needs_scanner
def test_mutated_chunks_never_diverge_from_msgspec():
    """Seeded fuzzing of real events (byte flips, inserted escapes / brackets / huge numbers, cuts):
    the scanner never crashes, never accepts what msgspec refuses, and gives the same columns
    whenever both accept. (Run with more iterations by hand: 120k found one UTF-8 gap, now closed.)"""
    import gzip
    import random
    import re

    import msgspec

    from core.trace.kineto import _decode_events
    text = gzip.open(shared_trace("gpu_issues.pt.trace.json.gz")).read()
    start = text.index(b"[", text.index(b'"traceEvents"')) + 1
    seps = [m.start() + 1 for m in re.finditer(rb"\}\s*,\s*\{", text[start:start + 2_000_000])]
    rng = random.Random(7)
    both = 0
    for _ in range(1500):
        i = rng.randrange(0, len(seps) - 10)
        chunk = bytearray(text[start + seps[i] + 1:start + seps[i + rng.randrange(1, 10)]].strip().lstrip(b","))
        for _ in range(rng.randrange(1, 3)):
            j = rng.randrange(0, len(chunk))
            op = rng.random()
            if op < 0.4:
                chunk[j] = rng.choice(b'0123456789"\\{}[],:-.eE \nNatfu\x00\xff\xc3')
            elif op < 0.7:
                chunk[j:j] = rng.choice([b'"', b"\\", b"{", b"}", b"[", b"]", b",", b"\\u00e9", b"\\ud83d\\ude00",
                                         b"-0", b"1e-400", b"99999999999999999999", b"null", b"true"])
            else:
                del chunk[j:j + rng.randrange(1, 8)]
        buf = b"[" + bytes(chunk) + b"]"
        fast = scan_columns(buf, 0, len(buf), file_offsets=False)
        try:
            slow = events_to_columns(_decode_events(buf), None, [], buf)
        except (msgspec.ValidationError, msgspec.DecodeError):
            slow = None
        assert not (fast is not None and slow is None), bytes(chunk)
        if fast is not None:
            both += 1
            assert _canon(fast) == _canon(slow), bytes(chunk)
    assert both > 200  # the mutations leave many chunks valid: the comparison is exercised


@needs_scanner
@pytest.mark.parametrize("extra", [
    b'{"ph": "C", "ts": 1, "name": "x", "pid": 1, "tid": 1, "args": {"v": 1e400}}',  # args that do not decode
    b'{"ph": "C", "ts": 1, "name": "x", "pid": 1, "tid": 1, "args": {"w": [1e999], "u": 2}}',
    b'{"ph": "X", "ts": 1, "dur": 1, "name": "big pid", "pid": -2305843009213693952, "tid": 4611686018427387904}',
])
def test_odd_events_load_the_same_on_both_paths(tmp_path, monkeypatch, models_equal, extra):
    """Found by review: counters whose args msgspec cannot decode made the scanner's load fail; ints
    outside the pid/tid code range were codes on one path and raw on the other."""
    p = tmp_path / "odd.pt.trace.json"
    p.write_bytes(b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, '
                  b'"dur": 2}, ' + extra + b']}')
    monkeypatch.setenv("PTPROF_WORKERS", "0")
    fast = _load(p, monkeypatch, True).primary
    slow = _load(p, monkeypatch, False).primary
    models_equal(fast, slow)


@needs_scanner
def test_every_kineto_category_gets_the_same_kind_on_both_paths():
    """CATEGORY_KIND is the one category -> kind lookup; the scanner path and the msgspec path apply it alike
    (device kinds carry their device/stream/correlation args on both)."""
    from core.trace.model import CATEGORY_KIND, KNOWN_OTHER_CATEGORIES
    cats = sorted(CATEGORY_KIND) + sorted(KNOWN_OTHER_CATEGORIES) + ["some_new_accelerator_kernel"]
    evs = [{"ph": "X", "cat": cat, "name": f"e{i}", "pid": 0, "tid": 7, "ts": i, "dur": 1,
            "args": {"device": 0, "stream": 7, "correlation": i, "External id": i}} for i, cat in enumerate(cats)]
    fast, slow = _both(_events(*evs))
    assert fast is not None and _canon(fast) == _canon(slow)
    kinds = dict(zip(_canon(fast)["rows.cat"], fast.rows["kind"].tolist()))
    assert all(kinds[c] == int(k) for c, k in CATEGORY_KIND.items())
    assert kinds["mtia_ccp_events"] == columns.Kind.KERNEL and kinds["mtia_runtime"] == columns.Kind.RUNTIME
    assert kinds["some_new_accelerator_kernel"] == columns.Kind.OTHER


@needs_scanner
@pytest.mark.parametrize("special", ['"', "\\", "\x01", "\x1f", "\x7f", "é", "\u20ac", "\U0001f600", "/"])
def test_long_names_with_a_special_character_at_every_position(special):
    """The scanner reads strings 16 bytes at a time (SSE2): a quote, backslash, control or non-ASCII
    character at any offset of a block, in long Python-frame-like names, gives msgspec's columns
    (or both refuse: raw control characters are invalid JSON)."""
    import msgspec

    from core.trace.kineto import _decode_events
    for pos in range(0, 40):
        name = "m" * pos + special + "x" * (45 - pos) + "(12): forward"
        text = json.dumps(name, ensure_ascii=False)
        if special in "\x01\x1f":
            text = '"' + name + '"'  # raw control character: both must refuse
        buf = ('[{"ph": "X", "cat": "python_function", "name": ' + text + ', "pid": 1, "tid": 1, "ts": 1.5, '
               '"dur": 2, "args": {"Python id": 3, "Python parent id": 2}}]').encode()
        fast = scan_columns(buf, 0, len(buf), file_offsets=False)
        try:
            slow = events_to_columns(_decode_events(buf), None, [], buf)
        except (msgspec.ValidationError, msgspec.DecodeError):
            slow = None
        assert (fast is None) == (slow is None), (special, pos)
        if fast is not None:
            assert _canon(fast) == _canon(slow)
            assert fast.strings[int(fast.rows["name"][0])] == name


@needs_scanner
def test_dense_and_sparse_arg_chunks_merge_like_the_python_path():
    """Chunks where most rows are Python frames ship python ids dense, others sparse; one chunk on
    the Python path has no src_offset: merged, every arg column equals the msgspec path's."""
    from core.trace.merge import merge_chunks
    py = [{"ph": "X", "cat": "python_function", "name": f"f{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1,
           "args": {"Python id": i, "Python parent id": i - 1}} for i in range(20)]
    ops = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 100 + i, "dur": 1,
            "args": {"External id": i}} for i in range(20)]
    texts = [json.dumps(py[:15] + ops[:2]), json.dumps(ops[2:] + py[15:]), json.dumps(py[:3])]
    fast_chunks, slow_chunks = [], []
    for k, t in enumerate(texts):
        buf = t.encode()
        slow = events_to_columns(_decode_events_ok(buf), None, [], buf)
        fast = scan_columns(buf, 0, len(buf)) if k < 2 else slow  # the last: Python path
        fast_chunks.append(fast)
        slow_chunks.append(slow)
    assert fast_chunks[0].args["python_id"][0] is None and fast_chunks[1].args["python_id"][0] is not None
    fast_m, slow_m = merge_chunks(fast_chunks), merge_chunks(slow_chunks)
    for key in {**columns.INT_ARGS, **columns.FLOAT_ARGS, **columns.STR_ARGS}:
        fi, fv = columns.as_sparse(key, fast_m.args[key])
        si, sv = columns.as_sparse(key, slow_m.args[key])
        assert fi.tolist() == si.tolist() and np.array_equal(fv, sv, equal_nan=True), key
    # mostly dense: kept in dense pieces, the Python path's rows (no offsets) filled as missing
    scanned = len(fast_chunks[0].rows["ts"]) + len(fast_chunks[1].rows["ts"])
    idx, offsets = columns.as_sparse("src_offset", fast_m.args["src_offset"])
    assert idx.tolist() == list(range(scanned)) and len(fast_chunks[2].rows["ts"]) == 3


def _decode_events_ok(buf):
    from core.trace.kineto import _decode_events
    return _decode_events(buf)
