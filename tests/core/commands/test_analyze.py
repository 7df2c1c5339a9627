"""`ptprof analyze`: JSON shape, CSV, --fail-on exit codes, one-line errors."""
from __future__ import annotations

import csv
import json

import pytest
from helpers import shared_trace

from core.cli import main
from core.commands.analyze import CSV_COLUMNS


def test_json_shape_and_csv(tmp_path, capsys):
    out_csv = tmp_path / "f.csv"
    rc = main(["analyze", str(shared_trace("gpu_issues.pt.trace.json.gz")), "--json", "--csv", str(out_csv)])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"findings", "summary"}
    assert doc["summary"]["steps"] == 5 and doc["summary"]["mean_step_ns"] > 0
    rules = {f["rule"] for f in doc["findings"]}
    assert {"host_sync", "pageable_memcpy", "launch_bound"} <= rules
    rows = list(csv.DictReader(out_csv.open()))
    assert tuple(rows[0]) == CSV_COLUMNS and len(rows) == len(doc["findings"])
    assert rows[0]["rule"] == doc["findings"][0]["rule"]


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
