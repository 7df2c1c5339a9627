"""CSV writers: kernels.csv, ops.csv, steps.csv, findings.csv, nvml.csv.

UTF-8, one header row (units in the column names, see `core.export.tables.SCHEMAS`), one row per
item, plain numbers (no thousands separators or unit suffixes), empty cells for missing values.
"""
from __future__ import annotations

import csv as _csv
import io
import math
import re
from pathlib import Path

import numpy as np

from core.atomic import atomic_write
from core.export import tables
from core.export.tables import ExportTable
from core.terminal import printable
from core.trace.model import TraceSet

# OWASP CSV injection: a text cell starting with one of these is a formula to Excel / LibreOffice /
# Sheets; a leading ' makes it text. Numbers (and text that is exactly a number, "-1.5") stay as they are.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def neutralize(text: str) -> str:
    if text.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(text):
        return "'" + text
    return text


def _cell(v):
    if isinstance(v, str):  # ESC / C1 / bidi overrides from the trace shown as \x1b, \u202e (issue 37)
        return neutralize(printable(v))
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


def write_table(table: ExportTable, path: str | Path, user_path: bool = False) -> Path:
    """Write one table through core.atomic (never through a planted link, never over a FIFO or device;
    `user_path`: the user named this file: `-`, /dev/stdout, a FIFO are written in place); returns the path."""
    cols = [c.tolist() if isinstance(c, np.ndarray) else list(c) for c in table.data]
    buf = io.StringIO(newline="")
    w = _csv.writer(buf)
    w.writerow([neutralize(printable(str(c))) for c in table.columns])
    for row in zip(*cols):
        w.writerow([_cell(v) for v in row])
    return atomic_write(path, buf.getvalue().encode("utf-8", "backslashreplace"), user_path)  # a non-UTF-8 file name


def write_kernels(ts: TraceSet, path: str | Path) -> Path:
    return write_table(tables.kernels(ts), path)


def write_ops(ts: TraceSet, path: str | Path) -> Path:
    return write_table(tables.ops(ts), path)


def write_steps(ts: TraceSet, path: str | Path) -> Path:
    return write_table(tables.steps_table(ts), path)


def write_findings(findings, path: str | Path, ts: TraceSet | None = None, user_path: bool = False) -> Path:
    return write_table(tables.findings_table(findings, ts), path, user_path)


def write_nvml(ts: TraceSet, path: str | Path) -> Path | None:
    """None (and no file) when the set has no NVML samples."""
    t = tables.nvml(ts)
    return write_table(t, path) if t is not None else None


def write_all(ts: TraceSet, out_dir: str | Path, findings=()) -> list[Path]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return [write_table(t, out_dir / f"{t.name}.csv") for t in tables.all_tables(ts, findings)]
