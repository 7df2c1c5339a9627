"""Communication is its own category everywhere (issue 12 item 3) on a two-rank NCCL run: the breakdown, the
per-step chart's data, steps.csv, the report's step table, the metrics, the rules' evidence and advice."""
from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from helpers import shared_trace
from synth_nccl import write_nccl_run

from core.analysis.breakdown import PARTS, step_breakdown
from core.export import breakdown_data, tables
from core.export.writer import ReportOptions, write_report
from core.ranks.inset import collect_findings
from core.rules import analyze
from core.rules.config import load_config
from core.trace.loader import load


@pytest.fixture(scope="module")
def nccl(tmp_path_factory):
    return load(write_nccl_run(tmp_path_factory.mktemp("nccl")), use_cache=False)


def test_breakdown_counts_exposed_collectives_as_communication(nccl):
    for m in nccl.models:
        b = step_breakdown(m)
        # 3 x 500 µs all-reduce per step, 10 x ~125 µs GEMMs overlapping the first one from 900 to 1475 µs
        assert np.all(b.comm_ns > 900_000) and np.all(b.comm_ns < 1_100_000)
        assert np.all(b.compute_ns > 1_200_000) and np.all(b.compute_ns < 1_350_000)
        assert np.array_equal(sum(getattr(b, p) for p in PARTS), b.dur_ns)


def test_per_step_chart_and_steps_csv_have_a_communication_column(nccl):
    for m in nccl.models:
        chart = breakdown_data.step_breakdown(m)
        j = [label for label, _ in chart.categories].index("communication kernels")
        assert np.array_equal(chart.values_ns[:, j], step_breakdown(m).comm_ns)
        assert np.all(chart.values_ns[:, :chart.busy_parts].sum(axis=1) == step_breakdown(m).busy_ns)
    steps = tables.steps_table(nccl)
    col = {c: i for i, c in enumerate(steps.columns)}
    comm_us = np.asarray(steps.data[col["comm_us"]], float)
    expected = np.concatenate([step_breakdown(m).comm_ns for m in nccl.models]) / 1e3
    assert len(comm_us) == 12 and np.allclose(comm_us, expected, atol=1e-3)


def test_report_and_metrics_show_communication(nccl, tmp_path):
    write_report(nccl, tmp_path / "r", None, ReportOptions(findings=collect_findings(nccl)))  # 2 ranks: the caller runs the rules
    html = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    assert "communication kernels ms" in html and "comm overlap %" in html
    with open(tmp_path / "r" / "metrics.csv", encoding="utf-8") as fh:
        overlap = [float(r["value"]) for r in csv.DictReader(fh) if r["metric"] == "overlap_pct"]
    assert len(overlap) == 2 and all(25 < v < 45 for v in overlap)  # ~575 of 1500 µs per step run under GEMMs
    with open(tmp_path / "r" / "steps.csv", encoding="utf-8") as fh:
        assert all(float(r["comm_us"]) > 900 for r in csv.DictReader(fh))


def test_rules_count_communication_as_busy_and_do_not_advise_nccl_to_nccl(nccl):
    cfg = load_config()
    cfg["gpu_idle"] = dict(cfg.get("gpu_idle", {}), max_idle_pct=0.0)  # report the idle of every trace
    result = analyze(nccl, cfg)
    idle = [f for f in result.findings if f.rule == "gpu_idle"]
    assert len(idle) == 2
    for f in idle:
        b = step_breakdown(nccl.models[f.model_index])
        steps = [e for e in f.evidence if str(e.get("name", "")).startswith("step ")]
        assert [e["busy_pct"] for e in steps] == [round(100.0 * x / d, 1) for x, d in zip(b.busy_ns, b.dur_ns)]
    comm = [f for f in result.findings if f.rule == "comm_bound"]
    assert len(comm) == 2 and all("NCCL backend" not in f.fix for f in comm)
    assert json.dumps([f.to_json() for f in comm])  # serialisable as analyze --json prints it
    gloo = [f for f in analyze(load(shared_trace("gpu_ddp2"), use_cache=False)).findings if f.rule == "comm_bound"]
    assert gloo and all("use the NCCL backend" in f.fix for f in gloo)  # gloo collectives: NCCL is the advice
