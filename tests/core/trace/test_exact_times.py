"""Issue 28: times are read exactly to the ns (core/trace/timens.py, _scan.c parse_ns). Kineto writes µs with ns
decimals ("ts": 1733600000123456.789); through a float64 an epoch-µs time holds only quarter-µs steps, so a
0.112 µs launch delay came out as 0. Both decode paths (C scanner, msgspec + tolerant) must give every model time,
and every number derived from them, to the ns."""
from __future__ import annotations

import random

import numpy as np
import pytest
from scan_helpers import _both, _canon

from core.analysis.metrics import rank_metrics
from core.trace import columns
from core.trace.loader import load
from core.trace.model import Kind
from core.trace.timens import NS_HIGH, NS_LOW, NS_MISSING, ns_col, ns_of_text, ns_of_value

needs_scanner = pytest.mark.skipif(not columns.scan_available(), reason="C scanner not built (no compiler)")

EPOCH_NS = 1_733_600_000_123_456_789  # 2024-12-07, as Kineto's µs: 1733600000123456.789
DELAY_NS = 112  # GPU start - end of the launch call


def _us(ns: int) -> str:
    """µs text with ns decimals, as Kineto writes it (never through a float)."""
    return f"{ns // 1000}.{ns % 1000:03d}" if ns >= 0 else "-" + _us(-ns)


def _trace(base_ns: int, steps: int = 4, header: str = "", odd: str = "") -> tuple[str, dict]:
    """Kineto-shaped JSON text with sub-µs offsets everywhere, and the expected ns (from the first event)."""
    ev, want = [], {"kernel": [], "launch_end": [], "memory": [], "counter": [], "instant": [], "be": []}

    def x(name, cat, ts, dur, pid=1, tid=1, args=""):
        ev.append(f'{{"ph": "X", "cat": "{cat}", "name": "{name}", "pid": {pid}, "tid": {tid}, '
                  f'"ts": {_us(ts)}, "dur": {_us(dur)}, "args": {{{args}}}}}')
    for i in range(steps):
        t = base_ns + i * 1_000_003  # 1000.003 µs apart
        x(f"ProfilerStep#{i}", "user_annotation", t, 900_001)
        x("aten::mm", "cpu_op", t + 10_007, 400_009, args=f'"External id": {i}')
        launch, ldur = t + 20_011, 5_013
        x("cudaLaunchKernel", "cuda_runtime", launch, ldur, args=f'"correlation": {i + 1}, "External id": {i}')
        k0 = launch + ldur + DELAY_NS
        x("sm80_gemm", "kernel", k0, 300_017, pid=0, tid=7,
          args=f'"correlation": {i + 1}, "device": 0, "stream": 7, "External id": {i}')
        want["kernel"].append(k0)
        want["launch_end"].append(launch + ldur)
        ev.append(f'{{"ph": "s", "id": {i + 1}, "pid": 1, "tid": 1, "ts": {_us(launch)}, "cat": "ac2g", '
                  f'"name": "ac2g"}}')
        ev.append(f'{{"ph": "f", "id": {i + 1}, "pid": 0, "tid": 7, "ts": {_us(k0)}, "cat": "ac2g", '
                  f'"name": "ac2g", "bp": "e"}}')
        m = t + 3_001
        ev.append(f'{{"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, '
                  f'"ts": {_us(m)}, "s": "t", "args": {{"Device Id": 0, "Device Type": 1, "Addr": 1234, '
                  f'"Bytes": 512, "Total Allocated": 4096, "Total Reserved": 8192}}}}')
        want["memory"].append(m)
        c = t + 1_999
        ev.append(f'{{"ph": "C", "name": "GPU Util", "pid": 0, "tid": 0, "ts": {_us(c)}, '
                  f'"args": {{"util": 12.5}}}}')
        want["counter"].append(c)
        ins = t + 777
        ev.append(f'{{"ph": "i", "name": "mark", "pid": 1, "tid": 1, "ts": {_us(ins)}, "s": "t"}}')
        want["instant"].append(ins)
        b, e = t + 500_001, t + 500_114
        ev.append(f'{{"ph": "B", "name": "region", "pid": 1, "tid": 5, "ts": {_us(b)}}}')
        ev.append(f'{{"ph": "E", "pid": 1, "tid": 5, "ts": {_us(e)}}}')
        want["be"].append((b, e - b))
    if odd:
        ev.append(odd)
    text = ('{"schemaVersion": 1, ' + header + '"deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}], '
            '"traceEvents": [\n  ' + ",\n  ".join(ev) + '\n], "traceName": "t"}')
    return text, want


def _load(tmp_path, monkeypatch, text: str, scanner: bool, name="t.pt.trace.json"):
    monkeypatch.setattr(columns, "_DISABLED", not scanner)
    p = tmp_path / name
    p.write_text(text)
    return load(p, use_cache=False).primary


PATHS = [pytest.param(True, marks=needs_scanner, id="scanner"), pytest.param(False, id="python")]


@pytest.mark.parametrize("scanner", PATHS)
@pytest.mark.parametrize("base_ns", [EPOCH_NS, 5_107_085_690_840_638, 1_000_000], ids=["epoch", "monotonic", "small"])
def test_every_model_time_is_exact_to_the_ns(tmp_path, monkeypatch, scanner, base_ns):
    text, want = _trace(base_ns)
    m = _load(tmp_path, monkeypatch, text, scanner)
    origin = base_ns  # the first step starts first
    s = m.slices
    kernels = np.sort(s.ts_ns[s.kind == Kind.KERNEL])
    assert kernels.tolist() == [k - origin for k in want["kernel"]]
    launch = np.flatnonzero(s.name == m.strings.find("cudaLaunchKernel"))
    ends = np.sort(s.ts_ns[launch] + s.dur_ns[launch])
    assert ends.tolist() == [k - origin for k in want["launch_end"]]
    assert (kernels - ends).tolist() == [DELAY_NS] * len(kernels)
    assert m.memory.ts_ns.tolist() == [t - origin for t in want["memory"]]
    assert m.counters.ts_ns.tolist() == [t - origin for t in want["counter"]]
    assert m.instants.ts_ns.tolist() == [t - origin for t in want["instant"]]
    region = np.flatnonzero(s.name == m.strings.find("region"))
    assert sorted(zip(s.ts_ns[region].tolist(), s.dur_ns[region].tolist())) == [(b - origin, d) for b, d in want["be"]]
    if base_ns > 10 ** 17:  # epoch µs: the wall clock of the origin, to the ns
        assert m.meta.base_unix_ns == base_ns
    # the derived numbers: the launch delay is 112 ns, not 0 (issue 28)
    d = rank_metrics(m).launch_delay_us
    assert d["launches"] >= 2
    assert d["p50"] == d["p95"] == d["mean"] == 0.112


@needs_scanner
def test_both_paths_give_the_same_epoch_model(tmp_path, monkeypatch, models_equal):
    text, _ = _trace(EPOCH_NS, steps=6)
    models_equal(_load(tmp_path, monkeypatch, text, True), _load(tmp_path, monkeypatch, text, False))


def test_tolerant_path_is_exact_too(tmp_path, monkeypatch):
    """A chunk with an unquoted N/A goes through the stdlib json (tolerant.py): its floats keep their text."""
    odd = '{"ph": "X", "cat": "cpu_op", "name": "odd", "pid": 1, "tid": 9, "ts": ' + _us(EPOCH_NS + 5) + \
          ', "dur": 1.001, "args": {"Concrete Inputs": [N/A]}}'
    text, want = _trace(EPOCH_NS, odd=odd)
    m = _load(tmp_path, monkeypatch, text, True)
    assert any("non-standard JSON" in w for w in m.warnings)
    s = m.slices
    row = int(np.flatnonzero(s.name == m.strings.find("odd"))[0])
    assert (int(s.ts_ns[row]), int(s.dur_ns[row])) == (5, 1001)
    assert np.sort(s.ts_ns[s.kind == Kind.KERNEL]).tolist() == [k - EPOCH_NS for k in want["kernel"]]


def test_integer_us_traces_read_as_before(tmp_path, monkeypatch):
    text = ('{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1733600000000000, "dur": 5}, '
            '{"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 1733600000000007, "dur": 0}]}')
    for scanner in ([True, False] if columns.scan_available() else [False]):
        m = _load(tmp_path, monkeypatch, text, scanner)
        assert m.slices.ts_ns.tolist() == [0, 7000] and m.slices.dur_ns.tolist() == [5000, 0]
        assert m.meta.base_unix_ns == 1733600000000000000


# --- the number reader itself: every shape, both paths alike ------------------------------------------------

SHAPES = [b"0", b"-0", b"-0.0", b"7", b"1.5", b"0.057", b"0.0005", b"0.0015", b"0.0025", b"-0.0005", b"0.00051",
          b"1733600000123456.789", b"1733600000123456.7895", b"1733600000123456.78950000000000000001",
          b"1.7336000001234567895e15", b"17336000001234567895e-4", b"1E+2", b"3e-3", b"3e-4", b"2.5e1",
          b"4611686018427387.903", b"4611686018427387.904", b"-4611686018427387.904", b"9223372036854775.807",
          b"1e400", b"-1e400", b"1e-400", b"9" * 30, b"0." + b"0" * 40 + b"1e43", b"1e999999999999999999999",
          b"5106361890753e833", b"123456789012345678901234567890.5e-20"]
WANT = {b"1733600000123456.789": 1733600000123456789, b"1733600000123456.7895": 1733600000123456790,
        b"1733600000123456.78950000000000000001": 1733600000123456790, b"1.7336000001234567895e15": 1733600000123456790,
        b"17336000001234567895e-4": 1733600000123456790, b"0.0005": 0, b"0.0015": 2, b"0.0025": 2,
        b"-0.0005": 0, b"0.00051": 1, b"3e-4": 0, b"4611686018427387.903": (1 << 62) - 1,
        b"4611686018427387.904": NS_HIGH, b"-4611686018427387.904": NS_LOW, b"1e400": NS_HIGH, b"-1e400": NS_LOW,
        b"1e-400": 0, b"0." + b"0" * 40 + b"1e43": 100_000, b"1e999999999999999999999": NS_HIGH}


def test_the_python_reader_rounds_half_to_even_and_saturates():
    for text, ns in WANT.items():
        assert ns_of_text(text) == ns, text
    assert ns_col([t for t in WANT]).tolist() == list(WANT.values())
    assert ns_col([b"", b"null", b'"12.5"', b"1.5", b"true"]).tolist() == [NS_MISSING, NS_MISSING, 12500, 1500,
                                                                        NS_MISSING]
    assert [ns_of_value(v) for v in (None, "N/A", "NaN", "Infinity", "-inf", float("nan"), 2, " 3.25 ")] == \
        [NS_MISSING, NS_MISSING, NS_MISSING, NS_HIGH, NS_LOW, NS_MISSING, 2000, 3250]


@needs_scanner
def test_numbers_of_every_shape_read_alike_on_both_paths():
    evs = [b'{"ph":"X","name":"a","pid":1,"tid":1,"ts":' + t + b',"dur":' + d + b'}'
           for t, d in zip(SHAPES, SHAPES[::-1])]
    fast, slow = _both(b",".join(evs))
    assert fast is not None
    assert _canon(fast) == _canon(slow)
    assert fast.rows["dur"].tolist() == [ns_of_text(d) for d in SHAPES[::-1]]


@needs_scanner
@pytest.mark.parametrize("seed", range(2))
def test_random_times_read_alike_on_both_paths(seed):
    rng = random.Random(seed)

    def num():
        t = ("-" if rng.random() < 0.1 else "") + str(rng.randint(0, 10 ** rng.choice([1, 3, 13, 16, 17, 19, 22])))
        if rng.random() < 0.8:
            t += "." + "".join(rng.choice("0123456789") for _ in range(rng.choice([1, 2, 3, 3, 3, 4, 9, 25])))
        if rng.random() < 0.1:
            t += rng.choice(["e3", "E-2", "e+1", "e-5", "e17", "e400"])
        return t.encode()
    evs = [b'{"ph":"X","name":"a","pid":1,"tid":1,"ts":' + num() + b',"dur":' + num() + b'}' for _ in range(3000)]
    fast, slow = _both(b",\n  ".join(evs))
    assert fast is not None
    assert _canon(fast) == _canon(slow)


@pytest.mark.parametrize("scanner", PATHS)
def test_impossible_times_are_dropped_alike(tmp_path, monkeypatch, scanner):
    odd = ('{"ph": "X", "cat": "cpu_op", "name": "far", "pid": 1, "tid": 9, "ts": 1e400, "dur": 1}, '
           '{"ph": "X", "cat": "cpu_op", "name": "long", "pid": 1, "tid": 9, "ts": 1733600000123456.789, "dur": 1e300}, '
           '{"ph": "i", "name": "late", "pid": 1, "tid": 9, "ts": 4611686018427387.904, "s": "t"}')
    text, want = _trace(EPOCH_NS, odd=odd)
    m = _load(tmp_path, monkeypatch, text, scanner)
    assert any("3 events with impossible times" in w for w in m.warnings), m.warnings
    assert m.strings.find("far") < 0 or not (m.slices.name == m.strings.find("far")).any()
    assert np.sort(m.slices.ts_ns[m.slices.kind == Kind.KERNEL]).tolist() == \
        [k - EPOCH_NS for k in want["kernel"]]
