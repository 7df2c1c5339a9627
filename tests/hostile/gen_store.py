"""Hostile inputs for the store side of ptprof: run bundles (run.json, compile.json, events.jsonl,
nvml.csv), columnar cache entries and memory-snapshot pickles (issue 14). Each generator writes one case
into a folder and returns the path to open; CASES lists every class by name, so the CLI, property and GUI
tests all walk the same corpus. `run_cli` runs `ptprof` in a child under a memory and a time limit.

The trace-loader corpus (JSON trace files) is gen_trace.py's (the safety-loader helper's).
"""
from __future__ import annotations

import functools
import json
import os
import pickle
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from hostile import gen_snapshot
from hostile.gen_fields import FIELD_POISONS, poison_fields

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
BUNDLE = DATA / "bundles" / "e1"  # a small real run bundle: run.json, events.jsonl, nvml.csv, one trace
SMALL_TRACE = DATA / "gpu_print.pt.trace.json.gz"
CHILD_MEMORY_BYTES = 3 << 30  # RLIMIT_AS of a CLI child: any bomb stops here instead of taking the machine
CHILD_TIMEOUT_S = 120  # generous: a hang is minutes, a slow loaded machine is seconds


def deep_json(levels: int = 1000) -> str:
    return "[" * levels + "]" * levels  # 2 KB


def deep_object(levels: int = 1000) -> str:
    return '{"a":' * levels + "1" + "}" * levels


def _bundle(root: Path, name: str) -> Path:
    d = root / name
    shutil.copytree(BUNDLE, d)
    return d


# ---- run bundles ----

def _fifo(file: str) -> Callable[[Path], Path]:
    def make(root: Path) -> Path:
        d = _bundle(root, f"fifo_{file}")
        (d / file).unlink(missing_ok=True)
        os.mkfifo(d / file)
        return d
    return make


def _replace(file: str, content: bytes | str, tag: str) -> Callable[[Path], Path]:
    def make(root: Path) -> Path:
        d = _bundle(root, f"{tag}")
        data = content.encode() if isinstance(content, str) else content
        (d / file).write_bytes(data)
        return d
    return make


def _nvml(rows: list[str], tag: str) -> Callable[[Path], Path]:
    header = (BUNDLE / "nvml.csv").read_text().splitlines()[0]
    return _replace("nvml.csv", "\n".join([header, *rows]) + "\n", tag)


def _events_with(lines: list[str], tag: str) -> Callable[[Path], Path]:
    def make(root: Path) -> Path:
        d = _bundle(root, tag)
        with open(d / "events.jsonl", "a", encoding="utf-8") as fh:
            for line in lines:
                fh.write(line.replace("@DIR@", str(d)) + "\n")
        return d
    return make


def _sync_names_big_file(root: Path) -> Path:
    d = _bundle(root, "sync_big_file")
    big = d / "huge.py"
    with open(big, "wb") as fh:
        fh.truncate(2 << 30)  # sparse: 2 GB by size, no disk used
    with open(d / "events.jsonl", "a") as fh:
        fh.write(json.dumps({"type": "sync", "rank": 0, "file": str(big), "line": 10**8, "step": 1}) + "\n")
        fh.write(json.dumps({"type": "sync", "rank": 0, "file": str(big), "line": 3, "step": 1}) + "\n")
    return d


def _sync_names_fifo(root: Path) -> Path:
    d = _bundle(root, "sync_fifo_source")
    os.mkfifo(d / "script.py")
    with open(d / "events.jsonl", "a") as fh:
        fh.write(json.dumps({"type": "sync", "rank": 0, "file": str(d / "script.py"), "line": 3, "step": 1}) + "\n")
    return d


def _nvml_wide(root: Path, rows: int = 500, cols: int = 20_000) -> Path:
    """An nvml.csv of 500 rows x 20,000 numeric columns (~20 MB, far under the size cap): `info` held ~10M
    Python numbers (0.8 GB, minutes) before only the known columns were read (issue 37)."""
    d = _bundle(root, "nvml_wide")
    cells = ",".join(["1.5"] * cols)
    with open(d / "nvml.csv", "w") as fh:
        fh.write("t_unix_ns,gpu,util_pct," + ",".join(f"c{i}" for i in range(cols - 1)) + "\n")
        for r in range(rows):
            fh.write(f"{1795974918454788160 + r * 10**8},0,{cells}\n")
    return d


_GOOD_ROW = "1795974918454788160,0,0,0,615.062,143771,79.23,34,345,1.27246,0.541016,"
BUNDLE_CASES: dict[str, Callable[[Path], Path]] = {
    "fifo_run_json": _fifo("run.json"),
    "fifo_events_jsonl": _fifo("events.jsonl"),
    "fifo_compile_json": _fifo("compile.json"),
    "fifo_nvml_csv": _fifo("nvml.csv"),
    "deep_run_json": _replace("run.json", deep_json(), "deep_run_json"),
    "deep_run_json_object": _replace("run.json", deep_object(), "deep_run_json_object"),
    "deep_compile_json": _replace("compile.json", deep_json(), "deep_compile_json"),
    "deep_events_jsonl": _events_with([deep_json(), '{"type":"sync","x":' + deep_json() + "}"], "deep_events_jsonl"),
    "run_json_list": _replace("run.json", "[1, 2, 3]", "run_json_list"),
    "run_json_string": _replace("run.json", '"ok"', "run_json_string"),
    "run_json_number": _replace("run.json", "1e400", "run_json_number"),
    "run_json_binary": _replace("run.json", bytes(range(256)) * 4, "run_json_binary"),
    "compile_count_1e400": _replace("compile.json", json.dumps(
        {"graph_breaks": [{"file": "/x.py", "line": 1, "reason": "r", "count": 1}],
         "recompiles": [{"function": "f", "reasons": ["0/0: x"], "count": 1}]}).replace('"count": 1', '"count": 1e400'),
        "compile_count_1e400"),
    "compile_wrong_types": _replace("compile.json", json.dumps(
        {"graph_breaks": [{"file": 5, "line": "x", "reason": None, "user_frames": "no", "count": "many"}],
         "recompiles": {"not": "a list"}, "counters": [1]}), "compile_wrong_types"),
    "compile_frames_not_lists": _replace("compile.json", json.dumps(  # issue 37: a TypeError in three rules
        {"graph_breaks": [{"file": "/x.py", "line": 3, "reason": "r", "user_frames": v, "user_frame": v, "count": 2}
                          for v in (5, True, None, 1e300, {"file": "/y.py"}, "frames")],
         "recompiles": [{"function": "f", "reasons": v} for v in (7, None, {"a": 1}, "0/0: x")],
         "counters": {"graph_break": 5, "unimplemented": ["x"]}}), "compile_frames_not_lists"),
    "nvml_infinite_time": _nvml(["inf,0,1,1,1,1,1,1,1,1,1,", "-inf,0,1,1,1,1,1,1,1,1,1,", "nan,0,1,1,1,1,1,1,1,1,1,",
                                 _GOOD_ROW], "nvml_infinite_time"),
    "nvml_30_digit_time": _nvml(["1" * 30 + ",0,1,1,1,1,1,1,1,1,1,", "1e30,0,1,1,1,1,1,1,1,1,1,", _GOOD_ROW],
                                "nvml_30_digit_time"),
    "nvml_non_utf8": _replace("nvml.csv", (BUNDLE / "nvml.csv").read_bytes()[:300] + b"\xff\xfe\xc3(\x80" * 50
                              + b"\n" + _GOOD_ROW.encode() + b"\n", "nvml_non_utf8"),
    "nvml_huge_field": _nvml(["1795974918454788160,0," + "9" * 140_000 + ",1,1,1,1,1,1,1,1,", _GOOD_ROW,
                              '1795974918454788161,0,"' + "x" * 200_000 + '",1,1,1,1,1,1,1,1,'], "nvml_huge_field"),
    "nvml_bad_gpu": _nvml(["1795974918454788160,99999999999999999999,1,1,1,1,1,1,1,1,1,",
                           "1795974918454788160,-3,1,1,1,1,1,1,1,1,1,", _GOOD_ROW], "nvml_bad_gpu"),
    "nvml_header_only_garbage": _replace("nvml.csv", b"\x00\x01\x02,\xff\n\x00", "nvml_header_only_garbage"),
    "events_bad_lines": _events_with(['{"type":"sync","rank":"x","file":5,"line":"y"}', "not json", "{" * 50,
                                      '{"type":"sync","rank":0,"file":"@DIR@/nope.py","line":-4}',
                                      '{"type":"sync","rank":0,"file":"@DIR@","line":1}',
                                      '{"type":"sync"' + " " * (2 << 20) + "}"], "events_bad_lines"),
    "sync_names_2gb_file": _sync_names_big_file,
    "nvml_20000_columns": _nvml_wide,
    "sync_names_fifo": _sync_names_fifo,
}


# ---- cache entries (poisoned after a real store) ----

def make_cache_entry(root: Path, tag: str, packed: bool = False) -> tuple[Path, Path, Path]:
    """(trace, cache dir, entry folder): a copy of the small trace, stored in its own cache; one .npy per
    column (as a big model's entry), or `packed` in one columns.bin (as a small model's, the default)."""
    from core.trace import cache_evict
    from core.trace.loader import load
    work = root / tag
    work.mkdir()
    trace = work / SMALL_TRACE.name
    shutil.copy(SMALL_TRACE, trace)
    cdir = work / "cache"
    saved = {k: os.environ.get(k) for k in ("PTPROF_CACHE_DIR", "PTPROF_CACHE_PACK_MAX_BYTES")}
    os.environ["PTPROF_CACHE_DIR"] = str(cdir)
    os.environ["PTPROF_CACHE_PACK_MAX_BYTES"] = str(1 << 30 if packed else 0)
    try:
        load(trace)
        (entry,) = [d for d in cdir.iterdir() if cache_evict.is_entry(d)]
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return trace, cdir, entry


def _npy(arr) -> bytes:
    import io

    import numpy as np
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def fifo_in_place(path: Path) -> None:
    """Replace a file of an entry with a FIFO of the same name (a reader that opened it would block)."""
    path.unlink()
    os.mkfifo(path)


def link_from_elsewhere(path: Path, target: Path) -> None:
    """Move a file of an entry to `target` and leave a symlink to it under its name."""
    path.rename(target)
    path.symlink_to(target)


def _poison(entry: Path, how: str) -> None:
    import numpy as np
    col = entry / "slices.name.npy"
    if how == "fifo_column":
        col.unlink()
        os.mkfifo(col)
    elif how == "fifo_entry_json":
        (entry / "entry.json").unlink()
        os.mkfifo(entry / "entry.json")
    elif how == "string_ids_out_of_range":
        n = len(np.load(col))
        col.write_bytes(_npy(np.full(n, 1 << 30, np.int32)))
    elif how == "track_ids_out_of_range":
        f = entry / "slices.track.npy"
        f.write_bytes(_npy(np.full(len(np.load(f)), -7, np.int32)))
    elif how == "flow_ids_out_of_range":
        f = entry / "flows.src.npy"
        f.write_bytes(_npy(np.full(max(len(np.load(f)), 1), 1 << 40, np.int64)))
    elif how == "retyped_column":
        col.write_bytes(_npy(np.load(col).astype(np.float32)))
    elif how == "swapped_columns":
        a, b = entry / "slices.ts_ns.npy", entry / "slices.kind.npy"
        data_a, data_b = a.read_bytes(), b.read_bytes()
        a.write_bytes(data_b)
        b.write_bytes(data_a)
    elif how == "swapped_same_type":  # same dtype, length and id range: only the fingerprints catch it
        a, b = entry / "slices.name.npy", entry / "slices.cat.npy"
        data_a, data_b = a.read_bytes(), b.read_bytes()
        a.write_bytes(data_b)
        b.write_bytes(data_a)
    elif how == "edited_fingerprints":
        data = json.loads((entry / "entry.json").read_text())
        data["fingerprints"] = {"slices": "x"}
        (entry / "entry.json").write_text(json.dumps(data))
    elif how == "truncated_column":
        col.write_bytes(col.read_bytes()[:90])
    elif how == "header_lies":
        data = col.read_bytes()
        col.write_bytes(data.replace(b"'shape': (", b"'shape': (9", 1))
    elif how == "symlinked_column":
        target = entry.parent.parent / "elsewhere.npy"
        col.rename(target)
        col.symlink_to(target)
    elif how == "entry_json_deep":
        (entry / "entry.json").write_text(deep_json(100_000))
    elif how == "entry_json_not_dict":
        (entry / "entry.json").write_text('"just a string"')
    elif how == "marker_missing":
        (entry / ".ptprof-cache-entry").unlink()
    # sparse slice columns (cache format 6): slices.<col>.rows.npy + .values.npy, counted in entry.json
    elif how == "sparse_rows_unsorted":
        f = entry / "slices.grid.rows.npy"
        f.write_bytes(_npy(np.load(f)[::-1].copy()))
    elif how == "sparse_rows_out_of_range":
        f = entry / "slices.grid.rows.npy"
        rows = np.load(f)
        rows[-1] = 1 << 40
        f.write_bytes(_npy(rows))
    elif how == "sparse_values_fifo":
        f = entry / "slices.correlation.values.npy"
        f.unlink()
        os.mkfifo(f)
    elif how == "sparse_count_lies":
        data = json.loads((entry / "entry.json").read_text())
        data["sparse"]["slices"]["grid"] = 10**12
        (entry / "entry.json").write_text(json.dumps(data))
    elif how == "sparse_count_not_int":
        data = json.loads((entry / "entry.json").read_text())
        data["sparse"]["slices"]["grid"] = [1, 2]
        (entry / "entry.json").write_text(json.dumps(data))
    elif how == "sparse_table_not_dict":
        data = json.loads((entry / "entry.json").read_text())
        data["sparse"]["slices"] = ["grid", 3]
        (entry / "entry.json").write_text(json.dumps(data))
    elif how == "sparse_dense_column_listed":  # a column that may never be sparse, listed as sparse
        data = json.loads((entry / "entry.json").read_text())
        data["sparse"]["slices"]["name"] = 1
        (entry / "entry.json").write_text(json.dumps(data))
    elif how.startswith("packed_"):
        _poison_packed(entry, how)
    elif how in FIELD_POISONS:
        poison_fields(entry, how)
    else:
        raise ValueError(how)


def _packed_layout(entry: Path, edit: Callable[[dict], None]) -> None:
    data = json.loads((entry / "entry.json").read_text())
    edit(data["packed"])
    (entry / "entry.json").write_text(json.dumps(data))


def _poison_packed(entry: Path, how: str) -> None:
    """A small model's entry: every column in columns.bin, placed by entry.json "packed" {stem: [offset, count]}."""
    import numpy as np
    blob = entry / "columns.bin"
    if how == "packed_file_fifo":
        fifo_in_place(blob)
    elif how == "packed_file_symlinked":
        link_from_elsewhere(blob, entry.parent.parent / "elsewhere.bin")
    elif how == "packed_file_truncated":
        blob.write_bytes(blob.read_bytes()[:len(blob.read_bytes()) // 2])
    elif how == "packed_file_grown":  # longer than its layout says: not the file written there
        with open(blob, "ab") as fh:
            fh.write(b"\0" * (1 << 20))
    elif how == "packed_layout_not_dict":
        data = json.loads((entry / "entry.json").read_text())
        data["packed"] = [1, 2]
        (entry / "entry.json").write_text(json.dumps(data))
    elif how == "packed_offset_out_of_range":
        _packed_layout(entry, lambda p: p.__setitem__("slices.name", [1 << 40, p["slices.name"][1]]))
    elif how == "packed_offset_negative":
        _packed_layout(entry, lambda p: p.__setitem__("slices.ts_ns", [-8, p["slices.ts_ns"][1]]))
    elif how == "packed_offset_misaligned":
        _packed_layout(entry, lambda p: p.__setitem__("slices.ts_ns", [p["slices.ts_ns"][0] + 1, p["slices.ts_ns"][1]]))
    elif how == "packed_count_lies":
        _packed_layout(entry, lambda p: p.__setitem__("slices.name", [p["slices.name"][0], 10**9]))
    elif how == "packed_place_not_list":
        _packed_layout(entry, lambda p: p.__setitem__("slices.name", "0:941"))
    elif how == "packed_column_missing":
        _packed_layout(entry, lambda p: p.pop("slices.kind"))
    elif how == "packed_column_extra":
        _packed_layout(entry, lambda p: p.__setitem__("slices.evil", [0, 1]))
    elif how == "packed_columns_swapped":  # same dtype and count: only the fingerprints tell
        _packed_layout(entry, lambda p: p.update({"slices.name": p["slices.cat"], "slices.cat": p["slices.name"]}))
    elif how == "packed_string_ids_out_of_range":
        data = json.loads((entry / "entry.json").read_text())
        off, n = data["packed"]["slices.name"]
        raw = bytearray(blob.read_bytes())
        raw[off:off + 4 * n] = np.full(n, 1 << 30, np.int32).tobytes()
        blob.write_bytes(bytes(raw))
    else:
        raise ValueError(how)


PACKED_POISONS = ("packed_file_fifo", "packed_file_symlinked", "packed_file_truncated", "packed_file_grown",
                  "packed_layout_not_dict", "packed_offset_out_of_range", "packed_offset_negative",
                  "packed_offset_misaligned", "packed_count_lies", "packed_place_not_list", "packed_column_missing",
                  "packed_column_extra", "packed_columns_swapped", "packed_string_ids_out_of_range")

CACHE_POISONS = ("fifo_column", "fifo_entry_json", "string_ids_out_of_range", "track_ids_out_of_range",
                 "flow_ids_out_of_range", "retyped_column", "swapped_columns", "swapped_same_type",
                 "edited_fingerprints", "truncated_column", "header_lies",
                 "symlinked_column", "entry_json_deep", "entry_json_not_dict", "marker_missing",
                 "sparse_rows_unsorted", "sparse_rows_out_of_range", "sparse_values_fifo", "sparse_count_lies",
                 "sparse_count_not_int", "sparse_table_not_dict", "sparse_dense_column_listed") + PACKED_POISONS \
    + FIELD_POISONS


def poisoned_cache(root: Path, how: str) -> tuple[Path, Path]:
    trace, cdir, entry = make_cache_entry(root, f"cache_{how}", packed=how.startswith("packed_"))
    _poison(entry, how)
    return trace, cdir


# ---- memory-snapshot pickles ----

def billion_laughs(levels: int = 40, width: int = 10) -> bytes:
    """391-byte class: each level a list of `width` references to the previous level (width**levels)."""
    out = [b"\x80\x04", b"]\x94"]  # level 0: [] memo 0
    for k in range(1, levels + 1):
        out.append(b"(" + b"h" + bytes([k - 1]) * 1 + (b"h" + bytes([k - 1])) * (width - 1) + b"l\x94")
    out.append(b"0" * levels)  # pop them
    # the snapshot: {"segments": [], "device_traces": [top]}
    out.append(b"}\x94(\x8c\x08segments]\x8c\x0ddevice_traces]h" + bytes([levels]) + b"au.")
    return b"".join(out)


def shared_references(n: int = 100_000) -> bytes:
    """~400 KB: device_traces is n references to one ring of n events (n*n events once expanded)."""
    ring = [{"action": "alloc", "addr": i, "size": 512, "stream": 0, "time_us": i} for i in range(200)]
    many = [ring] * n
    return pickle.dumps({"segments": [], "device_traces": many}, protocol=4)


def memo_index_bomb() -> bytes:
    return b"\x80\x02]r\xff\xff\xff\x7f."  # LONG_BINPUT 2**31-1: a 16 GiB memo table in the C unpickler


def put_index_bomb() -> bytes:
    return b"(lp9999999999999\n."


def deep_frames(depth: int = 2000) -> bytes:
    frames: list = []
    cur = frames
    for _ in range(depth):
        nxt: list = []
        cur.append(nxt)
        cur = nxt
    seg = {"device": 0, "address": 0, "total_size": 1, "blocks": [{"size": 1, "state": "active_allocated",
                                                                   "frames": frames}]}
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, depth * 3 + 100))  # pickling the nest recurses; restored at once, since
    try:  # a raised limit leaks into every later test (a 1,000-deep trace would then decode)
        return pickle.dumps({"segments": [seg], "device_traces": []}, protocol=4)
    finally:
        sys.setrecursionlimit(old)


def many_devices(n: int = 100_000) -> bytes:
    segs = [{"device": d, "address": d * 4096, "total_size": 4096, "blocks": []} for d in range(n)]
    return pickle.dumps({"segments": segs, "device_traces": []}, protocol=4)


def tuple_setting_keys() -> bytes:
    return pickle.dumps({"segments": [], "device_traces": [],
                         "allocator_settings": {(1, 2): "x", "ok": {(3,): [1, 2]}, "inf": float("inf"),
                                                "big": 10**40, "nested": [[[[[[[[[[1]]]]]]]]]]}}, protocol=4)


@functools.lru_cache(maxsize=2)  # the same bytes every time
def gzip_bomb(decompressed_bytes: int = 1 << 30) -> bytes:
    """A pickle of one huge run of zeros inside a bytes object, gzip'ed (~1000x)."""
    from hostile.gen_trace import gzip_repeated
    head = b"\x80\x04\x8e" + decompressed_bytes.to_bytes(8, "little")
    return gzip_repeated(head, b"\0" * (1 << 20), decompressed_bytes >> 20, tail=b".")


def evil_global() -> bytes:
    return b"cos\nsystem\n(S'touch /tmp/ptprof-pwned'\ntR."


SNAPSHOT_CASES: dict[str, Callable[[], bytes]] = {
    "billion_laughs": billion_laughs,
    "shared_references": shared_references,
    "memo_index_bomb": memo_index_bomb,
    "put_index_bomb": put_index_bomb,
    "deep_frames": deep_frames,
    "many_devices": many_devices,
    "tuple_setting_keys": tuple_setting_keys,
    "gzip_bomb": lambda: gzip_bomb(1 << 30),
    "evil_global": evil_global,
    "truncated": lambda: shared_references(1000)[:-100],
    "not_a_pickle": lambda: b"\x80\x05garbage" * 10,
    **gen_snapshot.CASES,  # issue 37: huge integers, out-of-range columns, opcodes that cost more than their size
    # the padded-PUT classes at 2 MB here (test_bounds.py runs them at 150 MB through the C walk)
    "put_leading_zeros": functools.partial(gen_snapshot.put_leading_zeros, 2_000_000),
    "put_leading_spaces": functools.partial(gen_snapshot.put_leading_spaces, 2_000_000),
}
SNAPSHOT_OPENS = {"tuple_setting_keys", "billion_laughs"} | {k for k, v in gen_snapshot.REASON.items() if v is None}


def write_snapshot(root: Path, name: str) -> Path:
    data = SNAPSHOT_CASES[name]()
    p = root / (f"{name}.pickle.gz" if name == "gzip_bomb" else f"{name}.pickle")
    p.write_bytes(data)
    return p


def fifo_snapshot(root: Path) -> Path:
    p = root / "fifo.pickle"
    os.mkfifo(p)
    return p


# ---- running the CLI under limits ----

def _limit_memory(limit: int) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return apply


def run_cli(args: list[str], env: dict | None = None, timeout: float = CHILD_TIMEOUT_S,
            memory: int = CHILD_MEMORY_BYTES, real: bool = False) -> subprocess.CompletedProcess:
    """`ptprof ARGS` in a child limited to `memory` bytes of address space; TimeoutExpired on a hang.
    The child is a fork of a warm interpreter (tests/cli_fork.py: the same main, exit code and output);
    `real=True` starts a fresh `python -m core.cli` (for what is read while modules load)."""
    full_env = {**os.environ, **(env or {}), "PYTHONPATH": str(REPO)}
    if not real:
        import cli_fork
        return cli_fork.run(list(args), full_env, REPO, memory, timeout)
    return subprocess.run([sys.executable, "-m", "core.cli", *args], cwd=REPO, env=full_env, capture_output=True,
                          text=True, timeout=timeout, preexec_fn=_limit_memory(memory))
