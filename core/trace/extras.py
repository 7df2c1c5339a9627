"""Files that travel with traces: run bundle run.json / compile.json / nvml.csv, sibling *.nvml.csv.

None of them is trusted (issue 14): each is opened only when it is a regular file (a FIFO never blocks),
within a size cap, JSON nesting bounded (no RecursionError), run.json/compile.json must be objects,
nvml.csv rows with non-finite or out-of-range times, undecodable bytes or oversized fields are skipped.
A side file that cannot be used is one warning in the log and left out; the traces still load.
"""
from __future__ import annotations

import csv
import io
import logging
import math
from pathlib import Path

import numpy as np

from core.trace.model import CounterTable
from core.trace.safefile import open_regular, read_json_file
from core.trace.strings import StringTable

log = logging.getLogger(__name__)

# bundle nvml.csv columns (ARCHITECTURE.md) and the shared traces' *.nvml.csv columns
_TIME_COLS = {"t_unix_ns": 1, "t_unix": 1_000_000_000, "t_unix_s": 1_000_000_000}
# one name per metric, whichever writer made the file: the runner's sampler (core/gpu/backend.py
# COLUMNS: util_pct, mem_util_pct, ...) or the shared traces' sibling files (gpu_util, mem_util, ...)
SERIES_NAMES = {"util_pct": "gpu_util", "gpu_util_pct": "gpu_util", "util": "gpu_util", "gpu_util": "gpu_util",
                "mem_util_pct": "mem_util", "mem_util": "mem_util"}


def load_extras(found, base_unix_ns: int) -> dict:
    out: dict = {}
    root = Path(found.root)
    if found.kind == "bundle":
        out["bundle"] = _json(root / "run.json")
        out["compile_info"] = compile_info(_json(root / "compile.json"))
        nvml_path = root / "nvml.csv"
    elif found.kind == "file":
        name = root.name
        stem = name.split(".pt.trace")[0] if ".pt.trace" in name else name.split(".json")[0]
        nvml_path = root.with_name(stem + ".nvml.csv")
    else:
        nvml_path = root / "nvml.csv"
    if nvml_path.exists() or nvml_path.is_symlink():
        table, strings = read_nvml_csv(nvml_path, base_unix_ns)
        if table is not None:
            out["nvml"] = table
            out["nvml_strings"] = strings
    return out


MAX_NVML_BYTES = 1 << 30  # 10 Hz x 8 GPUs x a week is ~300 MB
MAX_NVML_FIELD = 1 << 16  # real fields are numbers; longer ones are skipped with their row
_MAX_ABS_NS = 1 << 62  # beyond any plausible clock: the row is dropped, not an OverflowError


def _json(path: Path):
    """The JSON object in `path`, or None (absent, not a regular file, too big, too deep, not an object)."""
    if not (path.exists() or path.is_symlink()):
        return None
    try:
        value = read_json_file(path)
    except (OSError, ValueError) as exc:
        log.warning("ignoring %s: %s", path.name, _one_line(exc))
        return None
    if not isinstance(value, dict):
        log.warning("ignoring %s: it holds a JSON %s, not an object", path.name, type(value).__name__)
        return None
    return value


def compile_info(value: dict | None) -> dict | None:
    """compile.json in the shape core/runner/compile_capture.py writes, checked at load: graph_breaks /
    recompiles lists of objects, each break's user_frames a list of objects (a number there was a TypeError
    in three rules), user_frame an object, reasons a list, counters an object of objects; anything else of
    the wrong type dropped (the readers in core/rules/compile_info.py then see what they expect)."""
    if value is None:
        return None
    out = dict(value)
    for key in ("graph_breaks", "recompiles"):
        items = value.get(key)
        out[key] = [_compile_item(d) for d in items if isinstance(d, dict)] if isinstance(items, list) else []
    counters = value.get("counters")
    out["counters"] = {k: v for k, v in counters.items() if isinstance(v, dict)} if isinstance(counters, dict) else {}
    return out


def _compile_item(d: dict) -> dict:
    d = dict(d)
    frames = d.get("user_frames")
    d["user_frames"] = [f for f in frames if isinstance(f, dict)] if isinstance(frames, list) else []
    if not isinstance(d.get("user_frame"), dict):
        d.pop("user_frame", None)
    if "reasons" in d and not isinstance(d["reasons"], list):
        d["reasons"] = [d["reasons"]] if isinstance(d["reasons"], str) else []
    return d


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else type(exc).__name__


def _time_ns(raw: str, scale: int) -> int | None:
    raw = raw.strip()
    if scale == 1 and raw.isdigit():
        # integer ns must not pass through float64 (19 digits > 53 bits: ~100 ns error)
        t = int(raw) if len(raw) <= 19 else None
    else:
        v = float(raw)
        t = int(round(v * scale)) if math.isfinite(v) and abs(v * scale) < _MAX_ABS_NS else None
    return t if t is not None and abs(t) < _MAX_ABS_NS else None


# the columns any writer of nvml.csv puts there (core/gpu/backend.py COLUMNS, the shared traces' sibling
# files); others are kept up to MAX_OTHER_COLUMNS (an nvml.csv of 20,000 numeric columns held ~10M Python
# numbers: `info` 0.8 GB and minutes)
KNOWN_COLUMNS = frozenset(SERIES_NAMES) | {"mem_used_mb", "mem_total_mb", "power_w", "temp_c", "sm_clock_mhz",
                                           "pcie_tx_mb_s", "pcie_rx_mb_s", "proc_mem_mb"}
MAX_OTHER_COLUMNS = 16


def read_nvml_csv(path: Path, base_unix_ns: int) -> tuple[CounterTable | None, StringTable]:
    """NVML samples -> CounterTable with series "gpu<N>/<column>", ts_ns on the trace's time base. Rows are
    split by csv.reader (lists, not a dict per row) and only the kept columns are read."""
    strings = StringTable()
    ts, series, values = [], [], []
    skipped = 0
    try:
        with open_regular(path, max_bytes=MAX_NVML_BYTES) as raw_fh:
            fh = io.TextIOWrapper(raw_fh, encoding="utf-8", errors="replace", newline="")
            reader = csv.reader(_bounded_lines(fh))
            cols = [str(c) for c in next(reader, [])]
            tcol = next((c for c in cols if c in _TIME_COLS), None)
            if tcol is None:
                return None, strings
            scale = _TIME_COLS[tcol]
            t_at = cols.index(tcol)
            gpu_at = cols.index("gpu") if "gpu" in cols else None
            value_at = [i for i, c in enumerate(cols) if i != t_at and i != gpu_at]
            known = [i for i in value_at if cols[i] in KNOWN_COLUMNS]
            other = [i for i in value_at if cols[i] not in KNOWN_COLUMNS]
            if len(other) > MAX_OTHER_COLUMNS:
                log.warning("%s: %d columns; reading the known ones and the first %d others", path.name,
                            len(cols), MAX_OTHER_COLUMNS)
            value_at = sorted(known + other[:MAX_OTHER_COLUMNS])
            names = {i: SERIES_NAMES.get(cols[i], cols[i]) for i in value_at}
            ids: dict[tuple[str, int], int] = {}
            while True:
                try:
                    row = next(reader)
                except StopIteration:
                    break
                except csv.Error:
                    skipped += 1
                    continue
                if not row:  # a blank line (or an oversized one, _bounded_lines), as DictReader skipped them
                    continue
                try:
                    t = _time_ns(row[t_at], scale)
                except (TypeError, ValueError, AttributeError, OverflowError, IndexError):
                    t = None
                if t is None:
                    skipped += 1
                    continue
                t -= base_unix_ns
                gpu = (row[gpu_at] if gpu_at is not None and gpu_at < len(row) else "0") or "0"
                if len(gpu) > 8 or not gpu.isdigit():
                    skipped += 1
                    continue
                for i in value_at:
                    try:
                        v = float(row[i])
                    except (ValueError, IndexError):
                        continue
                    key = (gpu, i)
                    sid = ids.get(key)
                    if sid is None:
                        sid = ids[key] = strings.intern(f"gpu{int(gpu)}/{names[i]}")
                    ts.append(t)
                    series.append(sid)
                    values.append(v)
    except (OSError, csv.Error) as exc:
        log.warning("ignoring %s: %s", path.name, _one_line(exc))
        return None, strings
    if skipped:
        log.warning("%s: skipped %d unreadable row(s)", path.name, skipped)
    return CounterTable(np.array(ts, dtype=np.int64), np.array(series, dtype=np.int32),
                        np.array(values, dtype=np.float64)), strings


def _bounded_lines(fh):
    """The file's lines, each cut to MAX_NVML_FIELD x 4 characters (a 131,072-char field is not a sample)."""
    limit = MAX_NVML_FIELD * 4
    while True:
        line = fh.readline(limit)
        if not line:
            return
        if len(line) >= limit and not line.endswith("\n"):
            while (rest := fh.readline(limit)) and not rest.endswith("\n"):
                pass
            yield "\n"  # the oversized line becomes an empty row (skipped)
            continue
        yield line
