"""CSV writers: kernels.csv, ops.csv, steps.csv, findings.csv, nvml.csv.

UTF-8, one header row (units in the column names, see `core.export.tables.SCHEMAS`), one row per
item, plain numbers (no thousands separators or unit suffixes), empty cells for missing values.
"""
from __future__ import annotations

import csv as _csv
import math
from pathlib import Path

import numpy as np

from core.export import tables
from core.export.tables import ExportTable
from core.trace.model import TraceSet


def _cell(v):
    if v is None:
        return ""
    if isinstance(v, (float, np.floating)):
        if math.isnan(v):
            return ""
        f = float(v)
        return int(f) if f.is_integer() and abs(f) < 2**53 else f
    if isinstance(v, np.integer):
        return int(v)
    return v


def write_table(table: ExportTable, path: str | Path) -> Path:
    """Write one table; returns the path written."""
    path = Path(path)
    cols = [c.tolist() if isinstance(c, np.ndarray) else list(c) for c in table.data]
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = _csv.writer(fh)
        w.writerow(table.columns)
        for row in zip(*cols):
            w.writerow([_cell(v) for v in row])
    return path


def write_kernels(ts: TraceSet, path: str | Path) -> Path:
    return write_table(tables.kernels(ts), path)


def write_ops(ts: TraceSet, path: str | Path) -> Path:
    return write_table(tables.ops(ts), path)


def write_steps(ts: TraceSet, path: str | Path) -> Path:
    return write_table(tables.steps_table(ts), path)


def write_findings(findings, path: str | Path, ts: TraceSet | None = None) -> Path:
    return write_table(tables.findings_table(findings, ts), path)


def write_nvml(ts: TraceSet, path: str | Path) -> Path | None:
    """None (and no file) when the set has no NVML samples."""
    t = tables.nvml(ts)
    return write_table(t, path) if t is not None else None


def write_all(ts: TraceSet, out_dir: str | Path, findings=()) -> list[Path]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return [write_table(t, out_dir / f"{t.name}.csv") for t in tables.all_tables(ts, findings)]
