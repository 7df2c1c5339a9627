"""CSV files: documented headers, one row per item of the model, plain numbers, UTF-8."""
from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from core.analysis import stats, steps
from core.export import csv as ecsv, tables
from core.trace.model import Kind

README = Path(__file__).resolve().parents[3] / "README.md"
TEXT_COLUMNS = {"name", "kind", "direction", "memory", "grid", "block", "rule", "severity", "title", "source_file",
                "source_function", "evidence", "fix", "bound"}


def _read(path: Path) -> tuple[list[str], list[dict]]:
    with open(path, encoding="utf-8", newline="") as fh:  # strict UTF-8 decode
        reader = csv.DictReader(fh)
        return list(reader.fieldnames or []), list(reader)


def _numeric_ok(rows: list[dict], columns: list[str]) -> None:
    for row in rows:
        for c in columns:
            if c in TEXT_COLUMNS or row[c] == "":
                continue
            v = float(row[c])  # plain numbers: no units, no thousands separators
            assert math.isfinite(v), (c, row[c])


def test_every_table_matches_the_model(trace_set, tmp_path):
    written = {p.name: p for p in ecsv.write_all(trace_set, tmp_path)}
    expected = {"kernels.csv", "ops.csv", "steps.csv", "metrics.csv", "findings.csv"}
    has_nvml = trace_set.nvml is not None and len(trace_set.nvml) > 0
    assert set(written) == expected | ({"nvml.csv"} if has_nvml else set())

    head, rows = _read(written["kernels.csv"])
    assert head == list(tables.columns_of("kernels"))
    assert len(rows) == sum(len(stats.kernel_table(m)) for m in trace_set.models)
    n_kernels = sum(int((m.slices.kind == Kind.KERNEL).sum()) for m in trace_set.models)
    kernel_rows = [r for r in rows if r["kind"] == "kernel"]
    assert sum(int(r["calls"]) for r in kernel_rows) == n_kernels
    kernel_us = sum(int(m.slices.dur_ns[m.slices.kind == Kind.KERNEL].sum()) for m in trace_set.models) / 1000
    assert abs(sum(float(r["total_us"]) for r in kernel_rows) - kernel_us) < 0.01 * max(len(rows), 1)
    for rank in {r["rank"] for r in kernel_rows}:  # shares are of kernel time (copies have their own rows)
        assert sum(float(r["gpu_pct"]) for r in kernel_rows if r["rank"] == rank) == pytest.approx(100.0, abs=0.05)
    n_copies = sum(int((m.slices.kind == Kind.MEMCPY).sum()) for m in trace_set.models)
    assert sum(int(r["calls"]) for r in rows if r["kind"] == "memcpy") == n_copies
    _numeric_ok(rows, head)

    head, rows = _read(written["ops.csv"])
    assert head == list(tables.columns_of("ops"))
    assert len(rows) == sum(len(stats.op_table(m)) for m in trace_set.models)
    assert all(float(r["host_total_us"]) >= float(r["host_self_us"]) - 1e-3 for r in rows)
    _numeric_ok(rows, head)

    head, rows = _read(written["steps.csv"])
    assert head == list(tables.columns_of("steps"))
    per_model = [steps.step_stats(m) for m in trace_set.models]
    assert len(rows) == sum(len(s) for s in per_model)
    got = sorted((int(r["rank"]), int(r["step"])) for r in rows)
    want = sorted((m.rank, int(n)) for m, s in zip(trace_set.models, per_model) for n in s.number)
    assert got == want
    assert all(0 <= float(r["gpu_busy_pct"]) <= 100.0 + 1e-6 for r in rows)
    _numeric_ok(rows, head)

    head, rows = _read(written["findings.csv"])
    assert head == list(tables.columns_of("findings"))

    if has_nvml:
        head, rows = _read(written["nvml.csv"])
        assert head[: len(tables.columns_of("nvml"))] == list(tables.columns_of("nvml"))
        assert len(rows) == len(np.unique(trace_set.nvml.ts_ns))  # one GPU: one row per sample time
        _numeric_ok(rows, head)
        t = [int(r["t_unix_ns"]) for r in rows]
        assert t == sorted(t)


def test_nvml_rows_align_with_the_trace_clock(issues_set):
    nv = tables.nvml(issues_set)
    col = dict(zip(nv.columns, nv.data))
    # wall clock - the set's base = trace-relative time
    assert np.allclose((np.asarray(col["t_unix_ns"]) - issues_set.base_unix_ns) / 1000, col["t_us"], atol=1e-3)
    util = np.asarray(col["gpu_util_pct"])
    assert np.nanmin(util) >= 0 and np.nanmax(util) <= 100
    assert np.nanmax(np.asarray(col["mem_used_mb"])) <= np.nanmax(np.asarray(col["mem_total_mb"]))


def test_findings_csv_from_the_json_contract(issues_set, tmp_path):
    """Findings in the ARCHITECTURE.md JSON shape (what `ptprof analyze --json` prints) -> one row each."""
    m = issues_set.primary
    sync = np.flatnonzero(np.array([m.strings[i] == "cudaStreamSynchronize" for i in m.slices.name]))
    assert len(sync) > 0
    ranges = [[int(m.slices.ts_ns[i]), int(m.slices.ts_ns[i] + m.slices.dur_ns[i])] for i in sync]
    impact = sum(b - a for a, b in ranges)
    finding = {"rule": "host_sync", "severity": "warning", "title": "cudaStreamSynchronize, ✓ µs \"quoted\", comma",
               "count": len(sync), "impact_ns": impact, "impact_pct": 1.5, "time_ranges": ranges,
               "source": {"file": "train.py", "line": 42, "function": "train_step"},
               "evidence": ["aten::item -> cudaStreamSynchronize", "5 per step"], "fix": "drop .item() in the loop"}
    path = ecsv.write_findings([finding, dict(finding, source=None, severity="info")], tmp_path / "findings.csv")
    head, rows = _read(path)
    assert len(rows) == 2
    r = rows[0]
    assert r["title"] == finding["title"]  # UTF-8 and quoting survive
    assert float(r["impact_us"]) == round(impact / 1000, 3)
    assert int(r["ranges"]) == len(ranges) and float(r["first_start_us"]) == round(ranges[0][0] / 1000, 3)
    assert (r["source_file"], r["source_line"], r["source_function"]) == ("train.py", "42", "train_step")
    assert r["evidence"] == "aten::item -> cudaStreamSynchronize | 5 per step"
    assert rows[1]["source_file"] == "" and rows[1]["source_line"] == ""


def test_readme_documents_every_column():
    text = README.read_text(encoding="utf-8")
    for name, cols in tables.SCHEMAS.items():
        assert f"{name}.csv" in text
        for col, _ in cols:
            assert f"`{col}`" in text, f"README does not document {name}.csv column {col}"


def test_runner_bundle_samples_fill_the_standard_columns():
    """The runner's sampler writes util_pct / mem_util_pct; they load as gpu0/gpu_util / mem_util like
    the shared traces' sibling files, so the report, the GUI plot and the timeline row all see them."""
    from core.analysis.memory import counter_series
    from core.export import plots_data
    from core.trace.loader import load
    ts = load(Path(__file__).resolve().parents[2] / "data" / "bundles" / "e1", use_cache=False)
    names = {c.name for c in counter_series(ts.nvml, ts.nvml_strings)}
    assert {"gpu0/gpu_util", "gpu0/mem_util"} <= names and not any("util_pct" in n for n in names)
    nv = tables.nvml(ts)
    col = dict(zip(nv.columns, nv.data))
    assert "util_pct" not in col and np.isfinite(np.asarray(col["gpu_util_pct"], dtype=float)).all()
    fig = plots_data.gpu(ts)
    assert [s.label for s in fig.panels[0].series] == ["SM util %", "memory-bus util %"]
    n_rows = len(col["t_unix_ns"])
    assert f"{n_rows} samples over" in fig.header.subtitle  # not diluted by the 1 Hz PCIe columns
