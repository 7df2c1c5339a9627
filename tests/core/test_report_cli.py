"""`ptprof report PATH --out DIR`: every file, offscreen without a display, exit 2 with one line on bad input."""
from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import shared_trace

REPO = Path(__file__).resolve().parents[2]
ALWAYS = {"timeline.png", "memory.png", "breakdown.png", "findings.csv", "kernels.csv", "ops.csv", "steps.csv", "metrics.csv",
          "report.html"}


def ptprof(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    return subprocess.run([sys.executable, "-m", "core.cli", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


@pytest.mark.parametrize("name, nvml", [("gpu_issues.pt.trace.json.gz", True), ("gpu_memory.pt.trace.json.gz", True),
                                        ("gpu_ddp2", False), ("cpu_train.pt.trace.json.gz", False)])
def test_report_writes_every_file(name, nvml, tmp_path):
    out = tmp_path / "report"
    r = ptprof("report", str(shared_trace(name)), "--out", str(out), "--no-cache")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    files = {p.name for p in out.iterdir()}
    expected = ALWAYS | ({"gpu.png", "nvml.csv"} if nvml else set())
    assert files == expected | {".ptprof-report"}  # the marker: a second report may replace these
    files -= {".ptprof-report"}
    assert set(r.stdout.split()) == {str(out / f) for f in expected}
    for png in (f for f in files if f.endswith(".png")):
        w, h = _png_size(out / png)
        assert w == 1600 and h >= 150, (png, w, h)
    with open(out / "steps.csv", encoding="utf-8") as fh:
        assert len(list(csv.DictReader(fh))) >= 3
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.count("data:image/png;base64,") == sum(f.endswith(".png") for f in files)
    assert "http://" not in page and "https://" not in page


def test_report_step_width_and_2x(tmp_path):
    r = ptprof("report", str(shared_trace("gpu_issues.pt.trace.json.gz")), "--out", str(tmp_path), "--width", "900",
               "--scale", "2", "--step", "5")
    assert r.returncode == 0, r.stderr
    assert _png_size(tmp_path / "timeline.png")[0] == 1800
    assert "step 5" in (tmp_path / "report.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("case", ["missing", "not_a_trace", "out_is_file", "bad_width", "no_out", "no_such_step"])
def test_bad_input_exits_2_with_one_line(case, tmp_path):
    trace = str(shared_trace("cpu_train.pt.trace.json.gz"))
    out = str(tmp_path / "out")
    if case == "missing":
        args = ["report", str(tmp_path / "nope.json"), "--out", out]
    elif case == "not_a_trace":
        bad = tmp_path / "notes.json"
        bad.write_text('{"hello": "world"}')
        args = ["report", str(bad), "--out", out]
    elif case == "out_is_file":
        f = tmp_path / "file.txt"
        f.write_text("x")
        args = ["report", trace, "--out", str(f)]
    elif case == "bad_width":
        args = ["report", trace, "--out", out, "--width", "5"]
    elif case == "no_such_step":
        args = ["report", trace, "--out", out, "--step", "99", "--no-png"]
    else:
        args = ["report", trace]
    r = ptprof(*args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert lines[0].startswith("ptprof")
    assert "usage" in lines[0] or "error" in lines[0] or ":" in lines[0]


def test_no_png_needs_no_qt(tmp_path):
    code = ("import sys, core.cli; rc = core.cli.main(['report', sys.argv[1], '--out', sys.argv[2], '--no-png']); "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('PySide6', 'pyqtgraph', 'gui')]; "
            "sys.exit(rc or (3 if bad else 0))")
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-c", code, str(shared_trace("cpu_train.pt.trace.json.gz")), str(out)],
                       cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert {p.name for p in out.iterdir()} == {"findings.csv", "kernels.csv", "ops.csv", "steps.csv", "metrics.csv",
                                               "report.html", ".ptprof-report"}
    assert "not rendered" in (out / "report.html").read_text(encoding="utf-8")
