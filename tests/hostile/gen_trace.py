"""Hostile Kineto JSON traces (issue 14): `generate(kind, seed) -> (suffix, bytes)`.

Every kind starts from a small, valid trace built from the seed (CPU ops, kernels with launches,
memory, counters, flows, metadata, ProfilerStep spans) and breaks it one way: truncations, byte
flips, encodings, bombs, deep nesting, wrong types and values, huge numbers, NaN/Infinity, duplicate
keys, giant strings, non-UTF-8, BOM, and gzip / xz variants of any of them. Deterministic: the same
(kind, seed) gives the same bytes, so a failing case is reproduced by `write_case(dir, kind, seed)`.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

# the containers (tests/hostile/containers.py) are re-exported: the repro tests and benches import them from here
from hostile.containers import CONTAINERS, _bomb, gzip_member, gzip_repeated, gzip_with_header, pack  # noqa: F401

WEIRD_NUMBERS = ["NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1e300", "-1e300", str(2**63), str(2**64),
                 str(-2**63 - 1), "9" * 30, "-0", "0.0000001", "1e-400", "12345678901234567890123"]
WEIRD_VALUES = ['"abc"', '""', "null", "true", "[]", "{}", "[1, 2]", '{"a": 1}', '"N/A"', "N/A"] + WEIRD_NUMBERS
FIELDS = ["ts", "dur", "pid", "tid", "ph", "name", "cat", "id", "args"]
ARG_FIELDS = ["External id", "correlation", "stream", "device", "bytes", "grid", "block", "registers per thread",
              "est. achieved occupancy %", "Input Dims", "Call stack", "Python id", "Python parent id",
              "Sequence number", "sort_index", "name", "labels", "Total Allocated", "Bytes", "Device Id",
              "Device Type", "Addr"]
TOP_KEYS = ["schemaVersion", "baseTimeNanoseconds", "deviceProperties", "distributedInfo", "traceName",
            "displayTimeUnit", "with_stack", "record_shapes"]


def base_events(rng: random.Random) -> list[dict]:
    """A small trace that loads cleanly: ops nesting in a step, launches, kernels, memory, flows."""
    ev: list[dict] = []
    t = 1000.0 + rng.randint(0, 10**6)
    n_steps = rng.randint(1, 3)
    for step in range(n_steps):
        s0 = t
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 1, "tid": 1,
                   "ts": s0, "dur": 500.0, "args": {"External id": step}})
        for k in range(rng.randint(1, 6)):
            op_ts = s0 + 10 + k * 60
            corr = step * 100 + k
            ev.append({"ph": "X", "cat": "cpu_op", "name": rng.choice(["aten::mm", "aten::add", "aten::conv2d"]),
                       "pid": 1, "tid": 1, "ts": op_ts, "dur": 50.0,
                       "args": {"External id": corr, "Input Dims": [[4, 4], [4, 4]], "Sequence number": k}})
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": op_ts + 5, "dur": 10.0, "args": {"correlation": corr, "External id": corr}})
            ev.append({"ph": "X", "cat": "kernel", "name": f"kernel_{k}", "pid": 0, "tid": 7, "ts": op_ts + 20,
                       "dur": rng.choice([5.0, 30.0, 80.0]),
                       "args": {"device": 0, "stream": 7, "correlation": corr, "grid": [1, 1, 1],
                                "block": [128, 1, 1], "registers per thread": 32,
                                "est. achieved occupancy %": 50}})
        ev.append({"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": s0 + 3,
                   "s": "t", "args": {"Device Id": 0, "Device Type": 1, "Addr": 1234, "Bytes": 512,
                                      "Total Allocated": 4096, "Total Reserved": 8192}})
        ev.append({"ph": "C", "name": "GPU Util", "pid": 0, "tid": 0, "ts": s0, "args": {"util": 12.5}})
        ev.append({"ph": "s", "cat": "fwdbwd", "name": "fwdbwd", "id": step, "pid": 1, "tid": 1, "ts": s0 + 10})
        ev.append({"ph": "f", "cat": "fwdbwd", "name": "fwdbwd", "id": step, "pid": 1, "tid": 1, "ts": s0 + 70,
                   "bp": "e"})
        t += 600
    ev += [{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main"}},
           {"ph": "M", "name": "thread_sort_index", "pid": 1, "tid": 1, "args": {"sort_index": 1}},
           {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}}]
    return ev


def base_doc(rng: random.Random) -> dict:
    return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H200", "totalGlobalMem": 2**37}],
            "distributedInfo": {"rank": 0, "world_size": 1}, "baseTimeNanoseconds": 1700000000000000000,
            "traceEvents": base_events(rng), "traceName": "hostile.pt.trace.json"}


def write_long_name(path: Path, seed: int, mb: int = 200) -> Path:
    """A small trace whose second event's name is `mb` MiB of "N" (written a MiB at a time): the input whose
    size, not its shape, was the problem (`info` 26 s / 443 MB, `analyze` > 120 s before names were cut)."""
    doc = base_doc(random.Random(seed))
    doc["traceEvents"][1]["name"] = "@NAME@"
    head, tail = kineto_text(doc).split(b"@NAME@")
    with open(path, "wb") as fh:
        fh.write(head)
        for _ in range(mb):
            fh.write(b"N" * (1 << 20))
        fh.write(tail)
    return path


def kineto_text(doc: dict) -> bytes:
    """Kineto's own layout: `},\\n  {` between events, the array last but one."""
    head = {k: v for k, v in doc.items() if k not in ("traceEvents", "traceName")}
    parts = [json.dumps(head)[:-1] + ',\n  "traceEvents": [\n  ']
    parts.append(",\n  ".join(json.dumps(e, indent=1) for e in doc["traceEvents"]))
    parts.append('\n  ],\n  "traceName": ' + json.dumps(doc.get("traceName", "t")) + "\n}\n")
    return "".join(parts).encode()


# --- mutations: (rng, valid text) -> hostile bytes --------------------------------------------

def _sub_field(rng: random.Random, text: bytes, field: str, value: str, count: int = 1) -> bytes:
    key = f'"{field}": '.encode()
    spots = [i for i in range(len(text)) if text.startswith(key, i)]
    if not spots:
        return text
    out = bytearray(text)
    for pos in sorted(rng.sample(spots, min(count, len(spots))), reverse=True):
        start = pos + len(key)
        end = start
        depth = 0
        in_str = False
        while end < len(out):  # the value: a number, string, list or object
            c = out[end]
            if in_str:
                if c == 0x5C:
                    end += 1
                elif c == 0x22:
                    in_str = False
            elif c == 0x22:
                in_str = True
            elif c in b"[{":
                depth += 1
            elif c in b"]}":
                if depth == 0:
                    break
                depth -= 1
            elif c == 0x2C and depth == 0:
                break
            end += 1
        out[start:end] = value.encode()
    return bytes(out)


def m_truncate(rng, text):
    return text[: rng.randint(0, len(text) - 1)]


def m_flip(rng, text):
    out = bytearray(text)
    for _ in range(rng.choice([1, 1, 1, 2, 5, 20])):
        out[rng.randrange(len(out))] = rng.randrange(256)
    return bytes(out)


def m_flip_structural(rng, text):
    """Flip a byte that matters: a quote, brace, bracket, colon or comma."""
    out = bytearray(text)
    spots = [i for i, c in enumerate(text) if c in b'"{}[]:,']
    for _ in range(rng.choice([1, 1, 3])):
        out[rng.choice(spots)] = rng.choice(b'"{}[]:, x\x00')
    return bytes(out)


def m_weird_value(rng, text):
    return _sub_field(rng, text, rng.choice(FIELDS), rng.choice(WEIRD_VALUES), rng.choice([1, 1, 5, 50]))


def m_weird_arg(rng, text):
    return _sub_field(rng, text, rng.choice(ARG_FIELDS), rng.choice(WEIRD_VALUES), rng.choice([1, 5, 50]))


def m_weird_top(rng, text):
    value = rng.choice(WEIRD_VALUES + ['[{"name": 5, "id": "x"}]', '[{"name": null}, {"name": 7}]',
                                       '{"rank": 99999999999999999999}', '{"rank": "r"}', '{"rank": -1}'])
    return _sub_field(rng, text, rng.choice(TOP_KEYS), value)


def m_nan_inf(rng, text):
    field = rng.choice(["ts", "dur", "baseTimeNanoseconds", "sort_index", "est. achieved occupancy %", "Bytes"])
    return _sub_field(rng, text, field, rng.choice(["NaN", "Infinity", "-Infinity", "1e300", "-1e300"]),
                      rng.choice([1, 3, 1000]))


def m_huge_number(rng, text):
    field = rng.choice(["ts", "dur", "sort_index", "pid", "tid", "id", "External id", "correlation", "stream",
                        "device", "rank", "Addr", "Bytes", "baseTimeNanoseconds", "schemaVersion"])
    return _sub_field(rng, text, field, rng.choice([str(2**63), str(2**64), "9" * rng.randint(19, 400),
                                                     "-" + "9" * 25, "1e300", "1e308", "4.9e-324"]),
                      rng.choice([1, 2, 100]))


def m_time_text(rng, text):
    """ts / dur written every way a JSON number can be (issue 28: times are read as exact ns from the number's
    text, core/trace/timens.py and _scan.c parse_ns): epoch µs with ns decimals, more decimals than ns, ties,
    exponent forms, numbers past 2^62 ns, numeric strings, long digit runs."""
    epoch = rng.randint(1_600_000_000_000_000, 1_900_000_000_000_000)
    shapes = [f"{epoch}.{rng.randint(0, 999):03d}", f"{epoch}.{rng.randint(0, 10**9):09d}", f"{epoch}.0005",
              f"{epoch}.5005", f"{epoch / 1e15:.19f}e15", f"{epoch}{rng.randint(0, 999):03d}e-3", f"{epoch}e-1000",
              "0.0005", "0.0015", "-0.0025", "4611686018427387.904", "-4611686018427387.904", "1e-999999999999",
              "1e999999999999", "0." + "0" * rng.randint(1, 500) + "1e" + str(rng.randint(1, 600)),
              "1" * rng.randint(1, 40) + "." + "7" * rng.randint(1, 400), f'"{epoch}.123"', '"1e3"', '" 2.5 "',
              "-0.000", "1E+2", "2.5e-1"]
    for field in rng.sample(["ts", "dur"], rng.randint(1, 2)):
        text = _sub_field(rng, text, field, rng.choice(shapes), rng.choice([1, 3, 1000]))
    return text


def m_step_name(rng, text):
    tail = rng.choice(["9" * 23, "9" * 400, "²³", "-1", "", "1e5", " 7", "١٢"])
    return text.replace(b'"ProfilerStep#0"', json.dumps("ProfilerStep#" + tail).encode())


def m_deep(rng, text):
    depth = rng.choice([100, 1000, 5000, 100000])
    deep = "[" * depth + "]" * depth if rng.random() < 0.5 else '{"a": ' * depth + "1" + "}" * depth
    where = rng.choice(["args", "header", "tail", "event", "events"])
    if where == "args":
        return _sub_field(rng, text, rng.choice(["Input Dims", "grid", "External id", "util"]), deep)
    if where == "header":
        return text.replace(b'{"schemaVersion": 1', ('{"deep": ' + deep + ', "schemaVersion": 1').encode(), 1)
    if where == "tail":
        return text.replace(b'"traceName"', ('"deep": ' + deep + ', "traceName"').encode(), 1)
    if where == "event":
        return text.replace(b'"traceEvents": [\n  ', ('"traceEvents": [\n  ' + deep + ",\n  ").encode(), 1)
    return text.replace(b'"traceEvents": [', b'"traceEvents": ' + b"[" * depth, 1)


def m_duplicate_keys(rng, text):
    key = rng.choice(["ts", "dur", "ph", "name", "args", "pid"])
    return text.replace(f'"{key}": '.encode(), f'"{key}": {rng.choice(WEIRD_VALUES)}, "{key}": '.encode(),
                        rng.choice([1, 10]))


def m_giant_string(rng, text):
    n = rng.choice([70_000, 131_073, 2_000_000])
    return _sub_field(rng, text, rng.choice(["name", "cat", "Call stack", "traceName", "labels"]),
                      json.dumps("x" * n))


def m_non_utf8(rng, text):
    junk = bytes(rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\x80", b"\x00", b"\x1b[31m"]))
    out = bytearray(text)
    quotes = [i for i, c in enumerate(text) if c == 0x22]
    for _ in range(rng.choice([1, 5])):
        pos = rng.choice(quotes) + 1
        out[pos:pos] = junk
    return bytes(out)


def m_encoding(rng, text):
    enc = rng.choice(["utf-16", "utf-16-le", "utf-32", "bom", "latin-1-name"])
    if enc == "bom":
        return b"\xef\xbb\xbf" + text
    if enc == "latin-1-name":
        return text.replace(b'"main"', '"mäin"'.encode("latin-1"))
    return text.decode().encode(enc)


def m_wrong_shape(rng, text):
    return rng.choice([b"", b" \n", b"null", b"[]", b"{}", b"[1, 2, 3]", b'"traceEvents"', b'{"traceEvents": {}}',
                       b'{"traceEvents": 5}', b'{"traceEvents": "x"}', b'{"traceEvents": [1, "a", null, []]}',
                       b'{"traceEvents": [{}]}', b'{"traceEvents": []}', b'{"traceEvents": [',
                       b'[{"ph": "X", "ts": 1, "dur": 1}', b"\x00" * 64, b'{"traceEvents": [{"ph": 5, "ts": []}]}',
                       text.replace(b'"traceEvents"', b'"traceevents"'),
                       text + b"garbage after", text + text])


def m_events_of_wrong_type(rng, text):
    junk = rng.choice(["1", '"s"', "null", "[]", "[1]", "true", '{"ph": "X"}', '{"ph": "X", "ts": "1"}',
                       '{"ph": "B", "ts": 1}', '{"ph": "E", "ts": 0}', '{"ph": "?", "ts": 1}'])
    return text.replace(b"},\n  {", ("},\n  " + junk + ",\n  {").encode(), rng.choice([1, 10]))


def m_overlapping_kernels(rng, text):
    n = rng.choice([100, 5000, 33000])
    kernels = ",\n  ".join(json.dumps({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 9, "ts": 1000.0 + i,
                                        "dur": 1e6, "args": {"device": 0, "stream": 9}}) for i in range(n))
    return text.replace(b'"traceEvents": [\n  ', ('"traceEvents": [\n  ' + kernels + ",\n  ").encode(), 1)


def m_device_props(rng, text):
    """deviceProperties whose numbers are not numbers ("143771 MB", NaN, true, a list, -1, 2**70): a string
    totalGlobalMem was a ValueError traceback in `report` (summary.metadata)."""
    doc = json.loads(text)
    bad = ["143771 MB", "lots", None, True, [1], {"a": 1}, -1, 2**70, 1e300, ""]
    props = []
    for i in range(rng.randint(1, 3)):
        p = {"id": rng.choice([i, str(i), None, -5, 2**64]), "name": rng.choice(["H200", 5, ["x"], None, "\x1b[31m"])}
        for key in ("totalGlobalMem", "computeMajor", "computeMinor", "numSms", "maxThreadsPerBlock"):
            p[key] = rng.choice(bad + [80 << 30, 9, 0])
        props.append(p)
    doc["deviceProperties"] = props + rng.choice([[], ["not a dict"], [7]])
    return json.dumps(doc).encode().replace(b"1e+300", b"NaN" if rng.random() < 0.5 else b"1e+300")


def m_bare_array(rng, text):
    doc = json.loads(text)
    return json.dumps(doc["traceEvents"]).encode()[: rng.choice([None, -1, -50])]


def m_padding(rng, text):
    """Trailing NUL / whitespace padding (a preallocated or zero-filled file): kineto._rstrip_len."""
    pad = rng.choice([b"\x00", b" ", b"\n", b" \t\r\n\x00"]) * rng.choice([1, 4096, 1 << 20, 3 << 20])
    return text + pad if rng.random() < 0.8 else text.rstrip(b"\n}") + pad


def m_long_name(rng, text):
    """Names, categories, thread labels and raw args past the 64 KiB string cut (core/trace/strcap.py),
    with multi-byte characters and escapes where the cut falls."""
    n = rng.choice([65_535, 65_536, 65_537, 70_000, 1 << 20, 4 << 20])
    unit = rng.choice(["x", "é", "€", "😀", "\\u00e9", "\\n", "a\\\"b"])
    body = (unit * (n // max(1, len(unit.encode())) + 2))
    value = '"' + body + '"'
    field = rng.choice(["name", "cat", "Call stack", "name", "Input Dims", "name"])
    if field == "Input Dims":
        value = "[" + ", ".join(["[4096, 4096]"] * (n // 14 + 1)) + "]"
    return _sub_field(rng, text, field, value, rng.choice([1, 2, 5]))


def m_surrogate_names(rng, text):
    """Names holding lone surrogates (JSON escapes \\ud800 / \\udfff): analyze prints them."""
    lone = rng.choice(['"\\ud800"', '"a\\udfffb"', '"\\ud800\\ud800x"', '"k\\udc80"'])
    return _sub_field(rng, text, rng.choice(["name", "name", "cat", "Call stack"]), lone, rng.choice([1, 5, 50]))


_SHAPES = ['[{"a": 1}, {"b": 2}]', '{"0": [4, 4], "1": [4, 4]}', '[[[4, 4]], [[4, 4]]]', '[["4", "4"], ["4", "4"]]',
           '[[4, 4], "x"]', '[[1e999, 4], [4, 4]]', '[[-4, 4], [4, 4]]', '[[true, 4], [4, null]]', '"dims"', "5",
           '[[' + "9" * 400 + ', 4], [4, 4]]', '[[4, 4, 4, 4], [4, 4, 4, 4], [4, 4, 4, 4]]', "[]", "[[], []]",
           '[[2, 3, 8, 8], [4, 3, 3, 3], [], [], [], [], []]', '[[2, 3, 8, 8], {"w": 1}, [], [1], [0], [1]]']
_TYPES = ["null", "5", "1e999", '"float"', '[["float"]]', '[{"t": "float"}]', '[null, 5, "c10::BFloat16"]',
          '[[["c10::Half"]]]', '{"0": "float"}', '["float", "float"]']
_CONCRETE = ['["", "", "", "[0, 0]", "[0, 0]", "[1, 1]", "", "", "1"]', '["", "", "", "[1e999]", "[0]", "[1]"]',
             '["", "", "", "0", "0", "0"]', '["", "", "", "[-1, 2]", "[x]", "{}"]', '["", "", "", 5, null, []]',
             '"not a list"', '["", "", "", "[' + "9" * 500 + ']", "0", "1"]']
_FLOP_OPS = ["aten::mm", "aten::addmm", "aten::bmm", "aten::matmul", "aten::linear", "aten::conv2d",
             "aten::cudnn_convolution", "aten::convolution_backward", "aten::scaled_dot_product_attention",
             "aten::_flash_attention_backward", "aten::baddbmm"]


def m_hostile_shapes(rng, text):
    """FLOP ops (core/analysis/flops.py) with Input Dims / Input type / Concrete Inputs of every wrong shape:
    JSON objects, nested lists, strings, huge or infinite numbers, conv stride 0 / 1e999."""
    doc = json.loads(text)
    step = next(e for e in doc["traceEvents"] if e.get("name", "").startswith("ProfilerStep#"))
    for k in range(rng.choice([1, 4, 12])):
        args = {"External id": 9000 + k, "Input Dims": json.loads(rng.choice(_SHAPES)),
                "Input type": json.loads(rng.choice(_TYPES)) if rng.random() < 0.8 else ["float", "float"]}
        if rng.random() < 0.6:
            args["Concrete Inputs"] = json.loads(rng.choice(_CONCRETE))
        doc["traceEvents"].append({"ph": "X", "cat": "cpu_op", "name": rng.choice(_FLOP_OPS), "pid": 1, "tid": 1,
                                   "ts": step["ts"] + 1 + k, "dur": 1.0, "args": args})
    return json.dumps(doc).replace("Infinity", "1e999").encode()


def m_many(rng, text):
    """Work that grows with a count, not the size (issue 37 "bound work by what the input can cost"): nested
    ProfilerSteps, steps on one span, deep op nesting, one event per thread / stream, launches sharing one
    correlation, flows sharing one id, counters of many series. Each must stay linear."""
    doc = json.loads(text)
    ev = doc["traceEvents"]
    t0 = ev[0]["ts"]
    n = rng.choice([2000, 20000])
    shape = rng.choice(["nested_steps", "same_steps", "deep_ops", "threads", "streams", "one_correlation",
                        "one_flow_id", "counter_series"])
    for k in range(n):
        if shape == "nested_steps":
            ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{k + 10}", "pid": 1, "tid": 1,
                       "ts": t0 - n + k, "dur": 2.0 * (n - k) + 2000.0})
        elif shape == "same_steps":
            ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{k + 10}", "pid": 1, "tid": 1,
                       "ts": t0, "dur": 2000.0})
        elif shape == "deep_ops":
            ev.append({"ph": "X", "cat": "cpu_op", "name": f"aten::op{k % 7}", "pid": 1, "tid": 1,
                       "ts": t0 + k * 0.001, "dur": 400.0 - k * 0.002 * 20000 / n})
        elif shape in ("threads", "streams"):
            gpu = shape == "streams"
            ev.append({"ph": "X", "cat": "kernel" if gpu else "cpu_op", "name": "k", "pid": 0 if gpu else 1,
                       "tid": 1000 + k, "ts": t0 + k * 0.01, "dur": 1.0,
                       "args": {"device": 0, "stream": 1000 + k} if gpu else {}})
        elif shape == "one_correlation":
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": t0 + k * 0.01, "dur": 0.005, "args": {"correlation": 0, "External id": 0}})
            ev.append({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": t0 + k * 0.01, "dur": 0.005,
                       "args": {"device": 0, "stream": 7, "correlation": 0}})
        elif shape == "one_flow_id":
            ev.append({"ph": "s" if k % 2 else "f", "cat": "ac2g", "name": "ac2g", "id": 7, "pid": 1, "tid": 1,
                       "ts": t0 + 20, "bp": "e"})
        elif k < n // 10:
            ev.append({"ph": "C", "name": f"c{k}", "pid": 0, "tid": 0, "ts": t0 + k, "args": {f"s{j}": j for j in range(20)}})
    return json.dumps(doc).encode()


MUTATIONS = {
    "valid": lambda rng, text: text,
    "truncate": m_truncate, "flip": m_flip, "flip_structural": m_flip_structural, "weird_value": m_weird_value,
    "weird_arg": m_weird_arg, "weird_top": m_weird_top, "nan_inf": m_nan_inf, "huge_number": m_huge_number,
    "step_name": m_step_name, "deep": m_deep, "duplicate_keys": m_duplicate_keys, "giant_string": m_giant_string,
    "non_utf8": m_non_utf8, "encoding": m_encoding, "wrong_shape": m_wrong_shape,
    "events_of_wrong_type": m_events_of_wrong_type, "overlapping_kernels": m_overlapping_kernels,
    "bare_array": m_bare_array, "device_props": m_device_props, "padding": m_padding, "long_name": m_long_name,
    "surrogate_names": m_surrogate_names, "hostile_shapes": m_hostile_shapes, "many": m_many,
    "time_text": m_time_text,
}
KINDS = tuple(MUTATIONS)


def generate(kind: str, seed: int, container: str | None = None) -> tuple[str, bytes]:
    """(file suffix, content) of one hostile trace. `container` defaults to one drawn from the seed
    (mostly plain JSON; bombs rarely: they are slow to build)."""
    rng = random.Random(f"{kind}:{seed}:{container}")
    text = kineto_text(base_doc(rng))
    try:
        body = MUTATIONS[kind](rng, text)
    except (ValueError, UnicodeDecodeError):  # a mutation that does not apply to this seed
        body = text
    if container is None:
        container = rng.choices(CONTAINERS, weights=[70, 10, 5, 5, 4, 4, 1, 1, 2])[0]
    return pack(rng, container, body)


def write_case(folder: Path, kind: str, seed: int, container: str | None = None) -> Path:
    suffix, data = generate(kind, seed, container)
    path = Path(folder) / f"{kind}-{seed}-{container or 'any'}.pt.trace{suffix}"
    path.write_bytes(data)
    return path


if __name__ == "__main__":  # python tests/hostile/gen_trace.py OUT_DIR [N]: a corpus to try by hand
    import sys
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for i in range(int(sys.argv[2]) if len(sys.argv) > 2 else 200):
        write_case(out, KINDS[i % len(KINDS)], i)
