"""Issue 14's trace-loader reproductions, one test each, on both decode paths (C scanner and
msgspec) with PTPROF_WORKERS=1 and the default."""
from __future__ import annotations

import gzip
import json
import lzma
import os
import random
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from helpers import REPO, SAMPLE, run_cli

from core.trace import columns, limits
from core.trace.build import assign_lanes
from core.trace.loader import load
from core.trace.model import TraceParseError
from hostile.gen_trace import _bomb, base_doc, kineto_text

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(params=["scanner-1", "scanner-default", "msgspec-1", "msgspec-default"])
def decode_path(request, monkeypatch):
    path, workers = request.param.split("-")
    if path == "scanner" and columns._scan is None:
        pytest.skip("C scanner not built")
    monkeypatch.setattr(columns, "_DISABLED", path == "msgspec")
    if workers == "1":
        monkeypatch.setenv("PTPROF_WORKERS", "1")
    else:
        monkeypatch.delenv("PTPROF_WORKERS", raising=False)
    return request.param


def _trace(tmp_path, events=None, name="t.pt.trace.json", **top) -> tuple:
    doc = base_doc(random.Random(1))
    if events is not None:
        doc["traceEvents"] = events
    doc.update(top)
    path = tmp_path / name
    path.write_bytes(kineto_text(doc))
    return path, doc


def _kernel(ts, dur, stream=7):
    return {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": stream, "ts": ts, "dur": dur,
            "args": {"device": 0, "stream": stream}}


# --- 1. decompression bombs: refused before the memory is spent -------------------------------

def _peak_rss_of_load(path, env_extra: dict) -> tuple[str, int]:
    code = textwrap.dedent(f"""
        from core.trace.loader import load
        from core.trace.model import TraceParseError
        try:
            load({str(path)!r}, use_cache=False)
            print("loaded")
        except TraceParseError as exc:
            print(exc.reason)
        # VmHWM: this process's own peak (ru_maxrss would include the parent's RSS at fork time)
        print([int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmHWM:")][0])
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300,
                         env={**os.environ, **env_extra})
    assert out.returncode == 0, out.stderr
    reason, rss = out.stdout.strip().splitlines()
    return reason, int(rss)


@pytest.mark.parametrize("bound", ["memory", "ratio"])
@pytest.mark.parametrize("fmt", ["gz", "xz"])
def test_bomb_is_refused_at_the_bound_not_after_inflating(tmp_path, fmt, bound):
    bomb = tmp_path / f"bomb.pt.trace.json.{fmt}"
    bomb.write_bytes(_bomb(fmt, 640 << 20 if fmt == "gz" else 256 << 20))  # a trace-looking stream, ~1 MB compressed
    env = {"PTPROF_MAX_INFLATE_BYTES": str(96 << 20)} if bound == "memory" else {"PTPROF_MAX_INFLATE_BYTES": ""}
    reason, rss = _peak_rss_of_load(bomb, env)
    if bound == "memory":
        assert "decompresses to more than 96 MiB" in reason and "PTPROF_MAX_INFLATE_BYTES" in reason
    else:  # 64 MiB inflated from ~1 MB: over the 64x no real trace reaches
        assert "implausible decompressed size" in reason and "over 64x" in reason
    assert rss < 600 << 20, rss  # the bound plus one block, not the whole stream


def test_inflating_to_the_bound_holds_the_data_once(tmp_path):
    """No copy while the buffer grows: a bytearray's realloc copied the data when it crossed glibc's mmap
    threshold (tune_malloc raises it to 1 GiB): refused at 1,100 MiB, the load peaked at ~2.1 GB (now ~1.2)."""
    bomb = tmp_path / "bomb.pt.trace.json.gz"
    bomb.write_bytes(_bomb("gz", 1200 << 20))  # ~1.2 MB, inflates past the bound
    reason, rss = _peak_rss_of_load(bomb, {"PTPROF_MAX_INFLATE_BYTES": str(1100 << 20)})
    assert "decompresses to more than 1,100 MiB" in reason
    assert rss < (1100 + 64 + 200) << 20, rss >> 20  # the bound + one block + the interpreter; a copy is +1,100


def test_gzip_with_a_trailer_over_the_bound_is_refused_before_inflating(tmp_path, monkeypatch):
    monkeypatch.setenv("PTPROF_MAX_INFLATE_BYTES", str(1 << 20))
    with pytest.raises(TraceParseError, match="decompresses to more than 1 MiB"):
        load(SAMPLE, use_cache=False)
    monkeypatch.setenv("PTPROF_MAX_INFLATE_BYTES", "garbage")  # ignored: the memory-derived bound
    assert load(SAMPLE, use_cache=False).counts.events > 0


def test_inflate_bound_follows_available_memory_and_the_address_space_limit():
    code = textwrap.dedent("""
        import os, resource
        from core.trace import limits
        free = limits.max_inflate_bytes()
        used = int(open('/proc/self/statm').read().split()[0]) * os.sysconf('SC_PAGE_SIZE')
        cap = used + (800 << 20)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        print(free, limits.max_inflate_bytes())
    """)
    env = {k: v for k, v in os.environ.items() if k != "PTPROF_MAX_INFLATE_BYTES"}
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120, env=env)
    free, capped = map(int, out.stdout.split())
    assert free <= limits._mem_available_bytes()
    assert capped <= 400 << 20  # half of the 800 MiB left under RLIMIT_AS


# --- 2. many overlapping kernels on one stream ------------------------------------------------

@pytest.mark.parametrize("decode_path", ["scanner-default", "msgspec-1"], indirect=True)
def test_more_overlapping_kernels_than_int16_lanes_load_with_a_warning(tmp_path, decode_path):
    n = 33_000
    path, _ = _trace(tmp_path, [_kernel(1000.0 + i, 1e6) for i in range(n)])
    model = load(path, use_cache=False).primary
    assert len(model.slices) == n
    assert int(model.slices.depth.max()) == limits.limits()["lanes"]["max_lanes"]
    assert any("share its last sub-row" in w for w in model.warnings)


def _greedy_lanes(ts, end):
    lanes_end, out = [], []
    for s, e in zip(ts, end):
        for lane, le in enumerate(lanes_end):
            if le <= s:
                lanes_end[lane] = e
                out.append(lane)
                break
        else:
            out.append(len(lanes_end))
            lanes_end.append(e)
    return out


def test_heap_lanes_equal_the_first_free_lane_rule():
    rng = np.random.default_rng(3)
    ts = np.sort(rng.integers(0, 10_000, 3000)).astype(np.int64)
    dur = rng.integers(0, 400, 3000).astype(np.int64)
    depth = np.zeros(3000, dtype=np.int16)
    assert assign_lanes(ts, dur, np.array([0, 3000]), np.array([True]), depth) == 0
    assert depth.tolist() == _greedy_lanes(ts.tolist(), (ts + dur).tolist())


# --- 3. deep nesting ---------------------------------------------------------------------------

@pytest.fixture
def default_recursion_limit():
    """The decoders bound nesting by the interpreter's recursion limit: pin Python's default (a test or a
    library that raised it would let the 1,000-deep array decode), restore what was there after."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    yield
    sys.setrecursionlimit(old)


@pytest.mark.parametrize("where", ["args", "header", "tail"])
def test_deep_nesting_is_bounded(tmp_path, decode_path, where, default_recursion_limit):
    deep = "[" * 1000 + "]" * 1000
    path, doc = _trace(tmp_path)
    text = path.read_bytes()
    if where == "args":
        text = text.replace(b'"Input Dims": ', f'"Input Dims": {deep}, "x": '.encode(), 1)
    elif where == "header":
        text = text.replace(b'{"schemaVersion": 1', f'{{"deep": {deep}, "schemaVersion": 1'.encode(), 1)
    else:
        text = text.replace(b'"traceName"', f'"deep": {deep}, "traceName"'.encode(), 1)
    path.write_bytes(text)
    model = load(path, use_cache=False).primary
    n = len(doc["traceEvents"])
    if where == "args":  # the event with the bomb is skipped, counted; the others load
        assert model.counts.events == n - 1
        assert any("1 corrupt event skipped" in w for w in model.warnings)
    else:  # the deep key is left out; the header's other keys and every event are kept
        assert model.counts.events == n
        assert model.meta.schema_version == 1 and model.meta.device_properties
        assert model.meta.base_unix_ns > 0


# --- 4. wrong values ----------------------------------------------------------------------------

@pytest.mark.parametrize("field,value", [("ts", "Infinity"), ("ts", "-Infinity"), ("ts", "NaN"), ("ts", "1e300"),
                                         ("ts", "-1e300"), ("dur", "Infinity"), ("dur", "1e300")])
def test_impossible_times_drop_the_event_with_a_count(tmp_path, decode_path, field, value):
    path, doc = _trace(tmp_path)
    text = path.read_bytes().replace(f'"{field}": '.encode(), f'"{field}": {value}, "_{field}": '.encode(), 1)
    path.write_bytes(text)
    model = load(path, use_cache=False).primary
    span = model.slices.ts_ns.max() - model.slices.ts_ns.min()
    assert 0 < span < 10**10  # no event stretched to the year 2500 / before the epoch
    if value != "NaN":  # NaN is "missing" (the event is not timed), not a wrong time
        assert any("1 events with impossible times" in w for w in model.warnings), model.warnings


@pytest.mark.parametrize("value", ["1e300", "-1e300", "1e308", "5e15"])
def test_every_time_far_out_is_dropped_not_an_overflow(tmp_path, decode_path, value):
    """Every ts the same huge value: the median is there too, so the span check kept them all, and the
    time origin in ns (x 1000) overflowed to inf - an OverflowError traceback (found by the slow run:
    huge_number seed 88434808, gz_truncated). Nothing beyond max_abs_us (year 2096) is a time."""
    import re
    path, _ = _trace(tmp_path)
    path.write_bytes(re.sub(rb'"ts": -?[0-9.]+', f'"ts": {value}'.encode(), path.read_bytes()))
    try:
        model = load(path, use_cache=False).primary
    except TraceParseError as exc:
        assert "\n" not in exc.reason
        return
    assert any("impossible times" in w for w in model.warnings), model.warnings
    assert len(model.slices.ts_ns) == 0 or int(np.abs(model.slices.ts_ns).max()) < 2**62


@pytest.mark.parametrize("value", ["Infinity", "-Infinity", "NaN", "1e300", str(10**30), '"x"', "-5"])
def test_bad_base_time_is_ignored(tmp_path, decode_path, value):
    path, _ = _trace(tmp_path)
    text = path.read_bytes().replace(b'"baseTimeNanoseconds": 1700000000000000000',
                                     f'"baseTimeNanoseconds": {value}'.encode())
    path.write_bytes(text)
    ts = load(path, use_cache=False)
    assert ts.primary.meta.base_unix_ns == 0


@pytest.mark.parametrize("sort_index", [str(2**63), "1e300", "-" + str(2**70)])
def test_absurd_sort_index_is_ignored(tmp_path, decode_path, sort_index):
    path, _ = _trace(tmp_path)
    path.write_bytes(path.read_bytes().replace(b'"sort_index": 1', f'"sort_index": {sort_index}'.encode()))
    assert len(load(path, use_cache=False).primary.tracks) > 0


@pytest.mark.parametrize("tail", ["9" * 23, "9" * 400, "\u00b2\u00b3", "\u0661"])
def test_step_numbers_that_are_not_int64(tmp_path, decode_path, tail):
    path, _ = _trace(tmp_path)
    path.write_bytes(path.read_bytes().replace(b'"ProfilerStep#0"', json.dumps("ProfilerStep#" + tail).encode()))
    steps = load(path, use_cache=False).primary.steps
    assert -1 in steps.number.tolist()


def test_non_string_device_names_reach_info(tmp_path, decode_path, capsys):
    from core.cli import main
    path, _ = _trace(tmp_path, deviceProperties=[{"id": 0, "name": 5}, {"id": 1, "name": "H200"},
                                                 {"id": 2, "name": None}, {"id": 3}])
    assert main(["info", "--no-cache", str(path)]) == 0
    assert main(["info", "--json", "--no-cache", str(path)]) == 0
    assert "Traceback" not in capsys.readouterr().err


def test_device_properties_of_the_wrong_type_reach_report_and_the_cache(tmp_path, decode_path, capsys, monkeypatch):
    """A string / NaN / bool totalGlobalMem was a ValueError traceback in `report` (fmt_bytes); checked on
    load, and again when the meta comes back from a cache entry (written before the check existed)."""
    from core.cli import main
    from core.trace.model import TraceMeta
    props = [{"id": 0, "name": "H200", "totalGlobalMem": "143771 MB", "numSms": [132]},
             {"id": 1, "name": ["x"], "totalGlobalMem": "lots", "computeMajor": True}, "not a dict",
             {"id": "2", "totalGlobalMem": 1 << 34, "computeMajor": 9, "computeMinor": 0}]
    path, _ = _trace(tmp_path, deviceProperties=props)
    monkeypatch.setenv("PTPROF_CACHE_DIR", str(tmp_path / "cache"))
    for args in (["--no-cache"], [], []):  # parsed; stored; from the cache
        assert main(["report", *args, "--no-png", "--out", str(tmp_path / "r"), str(path)]) == 0
        assert "Traceback" not in capsys.readouterr().err
    page = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    assert "H200 · ? · compute ?.?" in page and "16.00 GiB · compute 9.0" in page
    meta = TraceMeta.from_json({"device_properties": props, "distributed_info": [1], "versions": "x"})
    assert [p.get("totalGlobalMem") for p in meta.device_properties] == [None, None, 1 << 34]
    assert meta.distributed_info is None and meta.versions == {}




def test_info_on_proc_is_one_line():
    out = run_cli("info", "--no-cache", "/proc")
    assert out.returncode == 2 and len(out.stderr.splitlines()) == 1, out.stderr


def test_symlink_loops_and_unsearchable_folders_are_one_line(tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    out = run_cli("info", str(tmp_path / "a"))
    assert out.returncode == 2 and "symbolic links" in out.stderr and len(out.stderr.splitlines()) == 1
    prefix: list[str] = []
    if os.geteuid() == 0:  # root searches any folder: drop the two capabilities that let it (util-linux setpriv)
        if not shutil.which("setpriv"):
            pytest.skip("running as root without setpriv: the EACCES case cannot happen")
        prefix = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]
    tmp_path.chmod(0o755)
    locked = tmp_path / "locked"
    locked.mkdir()
    _trace(locked)
    (tmp_path / "link.pt.trace.json").symlink_to(locked / "t.pt.trace.json")
    if prefix:
        os.chown(locked, 65534, 65534)  # someone else's folder, mode 0: nobody but its owner may enter
    locked.chmod(0)
    try:
        for target, said in ((tmp_path / "link.pt.trace.json", "cannot open (Permission denied)"),
                             (locked, "cannot read the folder (Permission denied)")):
            out = subprocess.run([*prefix, sys.executable, "-m", "core.cli", "info", str(target)], cwd=REPO,
                                 capture_output=True, text=True, timeout=300)
            assert out.returncode == 2 and said in out.stderr and len(out.stderr.splitlines()) == 1, out.stderr
    finally:
        locked.chmod(0o755)
        if prefix:
            os.chown(locked, 0, 0)


# --- 5. partial data ----------------------------------------------------------------------------

def test_one_bad_rank_does_not_refuse_the_folder(tmp_path, decode_path):
    for rank in (0, 1):
        _trace(tmp_path, name=f"rank{rank}.pt.trace.json")
    (tmp_path / "rank2.pt.trace.json").write_bytes(b'{"traceEv')
    (tmp_path / "rank3.pt.trace.json.gz").write_bytes(b"\x1f\x8b\x08garbage")
    ts = load(tmp_path, use_cache=False)
    assert len(ts.models) == 2
    assert any(w.startswith("rank2.pt.trace.json: not loaded") for w in ts.warnings)
    assert any(w.startswith("rank3.pt.trace.json.gz: not loaded (corrupt gzip") for w in ts.warnings)


def test_a_folder_of_only_bad_files_is_one_line(tmp_path):
    (tmp_path / "rank0.pt.trace.json").write_bytes(b"nope")
    (tmp_path / "rank1.pt.trace.json").write_bytes(b"")
    with pytest.raises(TraceParseError, match="none of the 2 trace files could be read"):
        load(tmp_path, use_cache=False)


@pytest.mark.parametrize("where", [0.3, 0.5, 0.8])
def test_one_flipped_byte_costs_one_event_not_the_rest(tmp_path, decode_path, where):
    text = gzip.decompress(SAMPLE.read_bytes())
    good = tmp_path / "good.pt.trace.json"
    good.write_bytes(text)
    n = load(good, use_cache=False).counts.events
    pos = text.index(b'"name"', int(len(text) * where))  # break a key: the event no longer decodes
    bad = tmp_path / "bad.pt.trace.json"
    bad.write_bytes(text[:pos] + b"#" + text[pos + 1:])
    model = load(bad, use_cache=False).primary
    assert model.counts.events == n - 1
    (warning,) = [w for w in model.warnings if "corrupt event" in w]
    start = text.rindex(b"{", 0, pos)  # the broken event's first byte
    while text[start - 1:start] != b" ":  # an args object: the event starts at the previous `\n  {`
        start = text.rindex(b"{", 0, start)
    assert f"at byte offset {start:,}" in warning
    assert not any("truncated" in w for w in model.warnings)


def test_a_corrupt_gzip_member_inside_a_folder_and_an_xz_one(tmp_path):
    _trace(tmp_path, name="rank0.pt.trace.json")
    (tmp_path / "rank1.pt.trace.json.xz").write_bytes(lzma.compress(b'{"traceEvents": [')[:-8])
    ts = load(tmp_path, use_cache=False)
    assert len(ts.models) == 1 and any("rank1.pt.trace.json.xz: not loaded" in w for w in ts.warnings)


# --- 6. FIFOs and other non-regular files -------------------------------------------------------

def test_a_fifo_as_the_trace_path_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "x.pt.trace.json"
    os.mkfifo(fifo)
    out = run_cli("info", str(fifo))
    assert out.returncode == 2 and "not a regular file" in out.stderr and len(out.stderr.splitlines()) == 1


def test_fifos_inside_a_folder_are_passed_over(tmp_path, decode_path):
    _trace(tmp_path, name="rank0.pt.trace.json")
    os.mkfifo(tmp_path / "rank1.pt.trace.json")
    os.mkfifo(tmp_path / "rank2.pt.trace.json.gz")
    ts = load(tmp_path, use_cache=False)
    assert len(ts.models) == 1


@pytest.mark.parametrize("value", ["abc", "inf", "-3", "99999999999999999999999"])
def test_bad_worker_knobs_fall_back_to_the_default(value):
    env = {**os.environ, "PTPROF_CHUNKS_PER_WORKER": value, "PTPROF_WORKERS": value}
    out = subprocess.run([sys.executable, "-m", "core.cli", "info", "--no-cache", str(SAMPLE)], cwd=REPO,
                         capture_output=True, text=True, timeout=300, env=env)
    # at most one warning line per bad knob, naming it; never a traceback
    lines = out.stderr.splitlines()
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert len(lines) <= 2 and all(line.startswith("PTPROF_") and "using" in line for line in lines), out.stderr


def test_one_bad_cycle_of_a_bundle_does_not_refuse_the_bundle(tmp_path, decode_path):
    import shutil
    bundle = tmp_path / "bundle"
    shutil.copytree(REPO / "tests" / "data" / "bundles" / "e1", bundle)
    good = next((bundle / "traces").glob("*.pt.trace.json.gz"))
    cut = gzip.decompress(good.read_bytes())
    (bundle / "traces" / "rank0.cycle2.pt.trace.json.gz").write_bytes(b"\x1f\x8b\x08\x00junk")
    (bundle / "traces" / "rank0.cycle3.pt.trace.json").write_bytes(cut[:40])
    ts = load(bundle, use_cache=False)
    assert len(ts.models) == 1
    assert sum("not loaded" in w for w in ts.warnings) == 2, ts.warnings
