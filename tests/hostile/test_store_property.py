"""Property test (hypothesis) over the store-side readers: the bundle side files, the columnar cache and
memory-snapshot pickles. Each reader must return (or refuse with its one-line error) on anything:
0 tracebacks, 0 hangs, bounded memory.

The cases run in a child process (this file run as a script) under RLIMIT_AS; each case has its own
time limit (SIGALRM) and the child checks its peak RSS after every case. The default run does a few
hundred cases; PTPROF_SLOW=1 (or `-m slow`) runs the >= 10,000-case test.
"""
from __future__ import annotations

import functools
import json
import os
import pickle
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve()
REPO = HERE.parents[2]
DEFAULT_CASES = 300
SLOW_CASES = 10_500
CASE_TIMEOUT_S = 60  # per case; a reader that hangs trips it (generous: a loaded machine is not a hang)
CHILD_MEMORY_BYTES = 4 << 30
MAX_RSS_BYTES = 2 << 30
BATCH = 150  # examples per hypothesis run: it keeps every example's choices until the run ends


def _run_child(n_cases: int, tmp_path: Path, timeout_s: float) -> None:
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'tests'}", "PTPROF_CACHE_DIR": str(tmp_path / "c")}
    proc = subprocess.run(
        [sys.executable, str(HERE), str(n_cases), str(tmp_path)], cwd=REPO, env=env, capture_output=True,
        text=True, timeout=timeout_s,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY_BYTES, CHILD_MEMORY_BYTES)))
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-6000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"store readers: {summary}")  # shown with -s: the case count a slow run reports
    assert summary["cases"] >= n_cases * 0.95 and summary["tracebacks"] == 0 and summary["hangs"] == 0, summary


@pytest.mark.timeout(900)
def test_store_readers_property_default(tmp_path):
    _run_child(DEFAULT_CASES, tmp_path, 850)


@pytest.mark.slow
@pytest.mark.timeout(7200)
def test_store_readers_property_slow(tmp_path, request):
    if not os.environ.get("PTPROF_SLOW") and "slow" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("10,000+ cases: set PTPROF_SLOW=1 (or run with -m slow)")
    _run_child(SLOW_CASES, tmp_path, 7000)


# ------------------------------------------------------------------ the child ----------------------------

class Hang(Exception):
    pass


def _on_alarm(signum, frame):
    raise Hang(f"a case ran past {CASE_TIMEOUT_S} s")


def _rss_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _describe(kwargs) -> str:
    def size(v):
        return f"{type(v).__name__}[{len(v)}]" if hasattr(v, "__len__") else repr(v)[:40]
    return ", ".join(f"{k}={ {kk: size(vv) for kk, vv in v.items()} if isinstance(v, dict) else size(v)}"
                     for k, v in kwargs.items())


def _strategies(work: Path):
    from hypothesis import strategies as st

    from hostile import gen_store as g

    scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=30),
                        st.sampled_from([10**400, -(10**30), 2**63, "inf", "1e400", "", "\x00\x1b[2J"]))
    json_values = st.recursive(scalars, lambda kids: st.one_of(st.lists(kids, max_size=5),
                                                               st.dictionaries(st.text(max_size=10), kids, max_size=5)),
                               max_leaves=30)

    def as_json(v) -> bytes:
        return json.dumps(v, allow_nan=True, default=str).encode()

    side_bytes = st.one_of(json_values.map(as_json), st.binary(max_size=3000),
                           st.integers(1, 5000).map(lambda n: g.deep_json(n).encode()),
                           st.integers(1, 3000).map(lambda n: g.deep_object(n).encode()), st.just(b"FIFO"))
    files = st.sampled_from([str(work / "small.py"), str(work), "/nonexistent/x.py", str(work / "fifo.py"),
                             str(work / "sparse.py"), "", "\x00"])
    sync = st.fixed_dictionaries({"type": st.just("sync"), "rank": st.one_of(st.integers(-2, 3), scalars),
                                  "file": st.one_of(files, scalars), "line": st.one_of(st.integers(-5, 10**12), scalars),
                                  "step": scalars}, optional={"via": scalars, "code": scalars, "op": scalars})
    event_lines = st.lists(st.one_of(sync.map(lambda d: json.dumps(d, default=str)), st.text(max_size=200),
                                     st.integers(1, 3000).map(g.deep_json)), max_size=8)
    cell = st.one_of(st.sampled_from(["inf", "-inf", "nan", "1" * 30, "1e30", "", "0", "1795974918454788160",
                                      "-1", "1.5"]), st.integers(131_000, 140_000).map(lambda n: "x" * n),
                     st.text(max_size=20),
                     st.floats(allow_nan=True).map(str), st.integers().map(str))
    nvml = st.one_of(
        st.lists(st.lists(cell, min_size=1, max_size=13), max_size=20).map(
            lambda rows: ("t_unix_ns,gpu,util_pct,mem_util_pct,power_w\n" +
                          "\n".join(",".join(r) for r in rows)).encode("utf-8", "surrogatepass")),
        st.binary(max_size=2000), st.just(b"FIFO"))
    bundle = st.fixed_dictionaries({"run.json": side_bytes, "compile.json": side_bytes, "nvml.csv": nvml,
                                    "events": event_lines, "full_load": st.integers(0, 40).map(lambda k: k == 0)})

    entry_files = ["entry.json", "slices.name.npy", "slices.ts_ns.npy", "slices.track.npy", "slices.kind.npy",
                   "slices.track_offsets.npy", "tracks.label.npy", "flows.src.npy", "steps.slice.npy",
                   "counters.series.npy", "columns.bin", ".ptprof-cache-entry"]
    dtypes = st.sampled_from(["int8", "int16", "int32", "int64", "float32", "float64", "uint8", "bool"])
    mutation = st.one_of(
        st.tuples(st.just("flip"), st.sampled_from(entry_files), st.lists(st.integers(0, 10**6), min_size=1,
                                                                          max_size=8)),
        st.tuples(st.just("truncate"), st.sampled_from(entry_files), st.integers(0, 10**6)),
        st.tuples(st.just("npy"), st.sampled_from(entry_files[1:-1]), st.tuples(dtypes, st.integers(0, 5000),
                                                                                 st.integers(-(2**40), 2**40))),
        st.tuples(st.just("bytes"), st.sampled_from(entry_files), st.binary(max_size=500)),
        st.tuples(st.just("json"), st.sampled_from(["strings", "shapes", "rank", "counts", "meta", "warnings", "key",
                                                    "path", "packed", "counts.kernels", "meta.base_unix_ns",
                                                    "meta.schema_version", "meta.trace_name"]), json_values),
        st.tuples(st.just("fifo"), st.sampled_from(entry_files), st.none()),
        st.tuples(st.just("symlink"), st.sampled_from(entry_files), st.none()))
    # an entry of each layout: one .npy per column (a big model's) or packed in columns.bin (a small one's)
    cache_case = st.tuples(st.booleans(), st.lists(mutation, min_size=1, max_size=4))

    frames = st.lists(st.fixed_dictionaries({"filename": scalars, "line": scalars, "name": scalars}), max_size=5)
    block = st.fixed_dictionaries({}, optional={"address": scalars, "size": st.one_of(st.integers(0, 2**40), scalars),
                                                "requested_size": scalars, "state": scalars, "frames": frames})
    segment = st.fixed_dictionaries({"address": st.one_of(st.integers(0, 2**50), scalars),
                                     "total_size": st.one_of(st.integers(0, 2**40), scalars)},
                                    optional={"device": st.one_of(st.integers(-2, 8), scalars), "blocks":
                                              st.lists(block, max_size=5), "segment_type": scalars,
                                              "segment_pool_id": scalars, "stream": scalars})
    trace_event = st.fixed_dictionaries({"action": st.sampled_from(["alloc", "free_requested", "free_completed",
                                                                    "segment_alloc", "oom", "snapshot", 5, None]),
                                         "addr": st.one_of(st.integers(0, 2**50), scalars),
                                         "size": st.one_of(st.integers(-10, 2**40), scalars),
                                         "time_us": st.one_of(st.integers(0, 2**50), scalars)},
                                        optional={"frames": frames, "stream": scalars})
    snapshot_obj = st.one_of(
        st.fixed_dictionaries({"segments": st.lists(segment, max_size=6)},
                              optional={"device_traces": st.lists(st.lists(trace_event, max_size=10), max_size=3),
                                        "allocator_settings": json_values, "external_annotations": json_values}),
        json_values)
    snapshot = st.tuples(snapshot_obj, st.integers(0, 5),
                         st.sampled_from(["none", "truncate", "flip", "insert", "gzip", "share"]),
                         st.integers(0, 10**6), st.binary(min_size=1, max_size=8))
    return bundle, cache_case, snapshot


def _child(n_cases: int, root: Path) -> dict:
    import logging

    import numpy as np
    from hypothesis import HealthCheck, given, settings

    from core.rules import compile_info, sync_sites
    from core.rules.base import RuleContext
    from core.rules.config import load_config
    from core.snapshot.load import load_snapshot
    from core.snapshot.report import snapshot_report
    from core.trace import cache, extras, io
    from core.trace.loader import load
    from core.trace.model import TraceParseError
    from hostile import gen_store as g
    logging.disable(logging.WARNING)  # the readers' one-line warnings are expected here; exceptions are not
    signal.signal(signal.SIGALRM, _on_alarm)
    work = root / "work"
    work.mkdir()
    (work / "small.py").write_text("x = t.item()\nif t:\n    y = t.cpu()\n")
    os.mkfifo(work / "fifo.py")
    with open(work / "sparse.py", "wb") as fh:
        fh.truncate(1 << 31)
    bundle_strategy, cache_strategy, snapshot_strategy = _strategies(work)
    stats = {"cases": 0, "tracebacks": 0, "hangs": 0, "max_rss_mb": 0}
    cfg = load_config()

    def guarded(fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            before = _rss_bytes()
            signal.alarm(CASE_TIMEOUT_S)
            try:
                fn(*args, **kwargs)
            except Hang:
                stats["hangs"] += 1
                raise
            except Exception:
                stats["tracebacks"] += 1
                raise
            finally:
                signal.alarm(0)
                stats["cases"] += 1
            rss = _rss_bytes()
            if rss - before > 100 << 20:  # which case grew the process (reported on failure)
                print(f"RSS +{(rss - before) >> 20} MiB in {fn.__name__}: {_describe(kwargs)}", file=sys.stderr)
            stats["max_rss_mb"] = max(stats["max_rss_mb"], rss >> 20)
            assert rss < MAX_RSS_BYTES, f"peak RSS {rss >> 20} MiB"
        return run

    common = dict(deadline=None, database=None, derandomize=False, suppress_health_check=list(HealthCheck))
    bundle_dir = root / "bundle"
    shutil.copytree(g.BUNDLE, bundle_dir)
    found = io.discover(bundle_dir)

    def write_side(name: str, data: bytes) -> None:
        p = bundle_dir / name
        if p.exists() or p.is_symlink():
            p.unlink()
        if data == b"FIFO":
            os.mkfifo(p)
        else:
            p.write_bytes(data)

    @settings(max_examples=BATCH, **common)
    @given(case=bundle_strategy)
    @guarded
    def bundle_reader(case):
        write_side("run.json", case["run.json"])
        write_side("compile.json", case["compile.json"])
        write_side("nvml.csv", case["nvml.csv"])
        write_side("events.jsonl", (g.BUNDLE / "events.jsonl").read_bytes() +
                   "\n".join(case["events"]).encode("utf-8", "surrogatepass"))
        out = extras.load_extras(found, 0)
        assert out.get("bundle") is None or isinstance(out["bundle"], dict)
        compile_info.graph_breaks(out.get("compile_info"))
        compile_info.recompiles(out.get("compile_info"))
        if case["full_load"]:
            ts = load(bundle_dir, use_cache=False)
            ctx = RuleContext(ts, cfg)
            for rank in (0, 1):
                sync_sites.sites(ctx, rank)
            for kind in ("item", "copy_h2d", None):
                sync_sites.match(ctx, 0, kind)

    layouts = {}
    for packed in (False, True):
        trace, cdir, entry = g.make_cache_entry(root, f"cache{int(packed)}", packed=packed)
        pristine = root / f"pristine{int(packed)}"
        shutil.copytree(entry, pristine, symlinks=True)
        layouts[packed] = (trace, cdir, entry, pristine)

    def restore(packed: bool):
        trace, cdir, entry, pristine = layouts[packed]
        os.environ["PTPROF_CACHE_DIR"] = str(cdir)
        if os.path.lexists(entry):
            shutil.rmtree(entry) if not os.path.islink(entry) else entry.unlink()
        shutil.copytree(pristine, entry, symlinks=True)
        return trace, entry

    def npy_bytes(dtype: str, n: int, fill: int) -> bytes:
        import io as stdio
        buf = stdio.BytesIO()
        np.save(buf, np.full(n, fill).astype(dtype), allow_pickle=False)
        return buf.getvalue()

    @settings(max_examples=BATCH, **common)
    @given(mutations=cache_strategy)
    @guarded
    def cache_reader(mutations):
        packed, mutations = mutations
        trace, entry = restore(packed)
        for how, name, arg in mutations:
            p = entry / name
            if how == "json":
                if not (entry / "entry.json").is_file():
                    continue  # a FIFO by now (an earlier mutation): the harness must not block on it either
                try:
                    doc = json.loads((entry / "entry.json").read_text())
                    *parents, leaf = name.split(".")
                    where = doc
                    for key in parents:
                        where = where[key]
                    where[leaf] = arg
                    (entry / "entry.json").write_text(json.dumps(doc, default=str))
                except (ValueError, OSError, TypeError):
                    pass
                continue
            if not p.exists() or p.is_symlink() or not p.is_file():
                continue
            if how == "flip":
                data = bytearray(p.read_bytes())
                for pos in arg:
                    if data:
                        data[pos % len(data)] ^= 0xFF
                p.write_bytes(bytes(data))
            elif how == "truncate":
                data = p.read_bytes()
                p.write_bytes(data[:arg % (len(data) + 1)])
            elif how == "npy":
                p.write_bytes(npy_bytes(*arg))
            elif how == "bytes":
                p.write_bytes(arg)
            elif how == "fifo":
                p.unlink()
                os.mkfifo(p)
            else:
                target = root / "outside"
                shutil.copy(p, target)
                p.unlink()
                p.symlink_to(target)
        model = cache.load(trace)
        if model is not None:  # a hit must be usable: every id resolves
            n = len(model.strings)
            for col in (model.slices.name, model.tracks.label):
                if len(col):
                    model.strings[int(col.max())]
            assert len(model.slices.track) == 0 or int(model.slices.track.max()) < n or True
            assert n > 0
            # and every field read from entry.json is what the parser makes (issue 37)
            from dataclasses import astuple
            assert all(type(v) is int and v >= 0 for v in astuple(model.counts)), model.counts
            assert type(model.meta.base_unix_ns) is int and 0 <= model.meta.base_unix_ns < 2**62

    @settings(max_examples=BATCH, **common)
    @given(case=snapshot_strategy)
    @guarded
    def snapshot_reader(case):
        import gzip
        obj, protocol, how, pos, extra = case
        if how == "share" and isinstance(obj, dict):
            obj = {**obj, "device_traces": [obj.get("device_traces") or [[]]] * 50}
        try:
            data = pickle.dumps(obj, protocol=protocol)
        except (RecursionError, ValueError, OverflowError):
            return
        if how == "truncate":
            data = data[:pos % (len(data) + 1)]
        elif how == "flip" and data:
            b = bytearray(data)
            b[pos % len(b)] ^= extra[0]
            data = bytes(b)
        elif how == "insert":
            k = pos % (len(data) + 1)
            data = data[:k] + extra + data[k:]
        elif how == "gzip":
            data = gzip.compress(data)
        p = root / ("s.pickle.gz" if how == "gzip" else "s.pickle")
        p.write_bytes(data)
        try:
            load_snapshot(p)
            snapshot_report(p)
        except TraceParseError as exc:
            assert "\n" not in exc.reason

    for prop, share in ((bundle_reader, 4), (cache_reader, 3), (snapshot_reader, 3)):
        target = stats["cases"] + max(n_cases * share // 10, 1)
        while stats["cases"] < target:  # each call a fresh hypothesis run with its own random seed
            prop()
    return stats


if __name__ == "__main__":
    result = _child(int(sys.argv[1]), Path(sys.argv[2]))
    print(json.dumps(result))
