"""Files that travel with traces: run bundle run.json / compile.json / nvml.csv, sibling *.nvml.csv."""
from __future__ import annotations

import csv
import json
import logging
from pathlib import Path

import numpy as np

from core.trace.model import CounterTable
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
        out["compile_info"] = _json(root / "compile.json")
        nvml_path = root / "nvml.csv"
    elif found.kind == "file":
        name = root.name
        stem = name.split(".pt.trace")[0] if ".pt.trace" in name else name.split(".json")[0]
        nvml_path = root.with_name(stem + ".nvml.csv")
    else:
        nvml_path = root / "nvml.csv"
    if nvml_path.is_file():
        table, strings = read_nvml_csv(nvml_path, base_unix_ns)
        if table is not None:
            out["nvml"] = table
            out["nvml_strings"] = strings
    return out


def _json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def read_nvml_csv(path: Path, base_unix_ns: int) -> tuple[CounterTable | None, StringTable]:
    """NVML samples -> CounterTable with series "gpu<N>/<column>", ts_ns on the trace's time base."""
    strings = StringTable()
    ts, series, values = [], [], []
    try:
        with open(path, newline="") as fh:
            reader = csv.DictReader(fh)
            cols = reader.fieldnames or []
            tcol = next((c for c in cols if c in _TIME_COLS), None)
            if tcol is None:
                return None, strings
            scale = _TIME_COLS[tcol]
            value_cols = [c for c in cols if c not in (tcol, "gpu")]
            names = {c: SERIES_NAMES.get(c, c) for c in value_cols}
            for row in reader:
                try:
                    raw = row[tcol]
                    # integer ns must not pass through float64 (19 digits > 53 bits: ~100 ns error)
                    t = (int(raw) if scale == 1 and raw.isdigit() else int(round(float(raw) * scale))) - base_unix_ns
                except (TypeError, ValueError):
                    continue
                gpu = row.get("gpu", "0") or "0"
                for c in value_cols:
                    try:
                        v = float(row[c])
                    except (TypeError, ValueError):
                        continue
                    ts.append(t)
                    series.append(strings.intern(f"gpu{gpu}/{names[c]}"))
                    values.append(v)
    except OSError as exc:
        log.warning("cannot read %s: %s", path, exc)
        return None, strings
    return CounterTable(np.array(ts, dtype=np.int64), np.array(series, dtype=np.int32),
                        np.array(values, dtype=np.float64)), strings
