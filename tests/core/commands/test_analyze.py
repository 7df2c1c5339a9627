"""`ptprof analyze`: JSON shape, CSV, --fail-on exit codes, one-line errors."""
from __future__ import annotations

import csv
import json

import pytest
from helpers import shared_trace

from core.cli import main
from core.commands.analyze import CSV_COLUMNS
from core.export.tables import columns_of


def test_json_shape_and_csv(tmp_path, capsys):
    out_csv = tmp_path / "f.csv"
    rc = main(["analyze", str(shared_trace("gpu_issues.pt.trace.json.gz")), "--json", "--csv", str(out_csv)])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"health", "findings", "summary", "metrics"}
    assert all(set(h) == {"code", "severity", "message", "count"} for h in doc["health"])
    assert doc["summary"]["mean_step_ns"] >= doc["summary"]["cpu_step_ns"] > 0
    priced = [f for f in doc["findings"] if f["saving_ns"] is not None]
    assert priced and all(0 <= f["saving_ns"] <= doc["summary"]["mean_step_ns"] * 2 and f["estimate"] for f in priced)
    assert doc["summary"]["steps"] == 5 and doc["summary"]["mean_step_ns"] > 0
    # one metrics object per rank (core.analysis.metrics), the summary carries the first rank's MFU
    (m,) = doc["metrics"]
    assert {"rank", "overlap_pct", "queue_length", "launch_delay_us", "kernels_shorter_than_launch", "memcpy_gbps",
            "tflops", "mfu_pct"} <= set(m)
    assert m["rank"] == 0 and m["overlap_pct"] is None and m["queue_length"][0]["max"] >= 1
    assert m["launch_delay_us"]["p95"] >= m["launch_delay_us"]["p50"] > 0 and m["kernels_shorter_than_launch"] > 0
    assert {(c["direction"], c["memory"]) for c in m["memcpy_gbps"]} >= {("HtoD", "Pageable -> Device")}
    assert 0 < m["mfu_pct"] < 100 and m["tflops"] > 0 and doc["summary"]["mfu_pct"] == m["mfu_pct"]
    rules = {f["rule"] for f in doc["findings"]}
    assert {"host_sync", "pageable_memcpy", "launch_bound"} <= rules
    rows = list(csv.DictReader(out_csv.open()))
    assert tuple(rows[0]) == CSV_COLUMNS and len(rows) == len(doc["findings"])
    # the same findings.csv as `ptprof report` (errors first, µs, evidence)
    assert CSV_COLUMNS == columns_of("findings") and "evidence" in CSV_COLUMNS
    by_title = {f["title"]: f for f in doc["findings"]}
    for row in rows:
        f = by_title[row["title"]]
        assert row["rule"] == f["rule"] and float(row["impact_us"]) == pytest.approx(f["impact_ns"] / 1000, abs=1e-3)
        assert row["evidence"] or not f["evidence"]
        if f["saving_ns"] is not None:
            assert float(row["saving_us"]) == pytest.approx(f["saving_ns"] / 1000, abs=1e-3)
    order = [{"error": 0, "warning": 1, "info": 2}[r["severity"]] for r in rows]
    assert order == sorted(order)


def test_csv_is_the_report_findings_csv(tmp_path):
    from core.export.csv import write_findings
    from core.ranks.inset import collect_findings
    from core.trace.loader import load
    path = str(shared_trace("gpu_issues.pt.trace.json.gz"))
    assert main(["analyze", path, "--csv", str(tmp_path / "a.csv")]) == 0
    ts = load(path)
    write_findings(collect_findings(ts).findings, tmp_path / "r.csv", ts)
    a = list(csv.DictReader((tmp_path / "a.csv").open()))
    r = list(csv.DictReader((tmp_path / "r.csv").open()))
    assert [(x["rule"], x["title"], x["impact_us"]) for x in a] == [(x["rule"], x["title"], x["impact_us"]) for x in r]


def test_fail_on_levels(capsys):
    path = str(shared_trace("gpu_dataloader.pt.trace.json.gz"))
    assert main(["analyze", path, "--fail-on", "error"]) == 1  # dataloader_bound is an error
    clean = str(shared_trace("gpu_clean.pt.trace.json.gz"))
    assert main(["analyze", clean, "--fail-on", "error"]) == 0  # only a gpu_idle warning there
    assert main(["analyze", clean, "--fail-on", "warning"]) == 1
    text = capsys.readouterr().out
    assert "SEVERITY" in text and "gpu_idle" in text


def test_rule_selection_and_bad_input(tmp_path, capsys):
    path = str(shared_trace("gpu_issues.pt.trace.json.gz"))
    assert main(["analyze", path, "--json", "--rules", "host_sync"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {f["rule"] for f in doc["findings"]} == {"host_sync"}
    assert main(["analyze", path, "--rules", "nope"]) == 2
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["analyze", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("ptprof:") for line in err)
    with pytest.raises(SystemExit) as exc:  # argparse usage error: exit 2, one line
        main(["analyze", path, "--fail-on", "fatal"])
    assert exc.value.code == 2


def test_truncated_trace_shows_the_loader_warning(tmp_path, capsys):
    """A cut file: the loader's warning reaches the table and summary["warnings"] (the field `ptprof info
    --json` uses), and capability notes blame the cut, not the profiler options."""
    import gzip
    text = gzip.open(shared_trace("gpu_issues.pt.trace.json.gz")).read()
    path = tmp_path / "cut.pt.trace.json"
    path.write_bytes(text[: len(text) // 3])  # Kineto writes CPU events first: no GPU events survive
    assert main(["analyze", str(path), "--json", "--no-cache"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert any("truncated" in w for w in doc["summary"]["warnings"])
    reasons = [n["reason"] for n in doc["summary"]["checks_not_run"]]
    assert not any("CPU-only trace" in r or "with_stack=False" in r for r in reasons), reasons
    assert any("not in the loaded part of a truncated file" in r for r in reasons)
    assert not any("CPU-only" in f["title"] for f in doc["findings"])
    assert main(["analyze", str(path), "--no-cache"]) == 0
    table = capsys.readouterr().out
    assert "warning: file is truncated" in table
    # a complete trace has no warnings
    assert main(["analyze", str(shared_trace("gpu_clean.pt.trace.json.gz")), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["summary"]["warnings"] == []
