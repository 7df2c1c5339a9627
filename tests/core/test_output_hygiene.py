"""Output never harms the reader (issue 14): CSV formula prefixes neutralized, terminal control sequences
escaped, report files never written through a symlink, report.html escapes hostile names, one line on
bad output paths or a full stdout."""
from __future__ import annotations

import csv
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.export.csv import _cell, neutralize

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "gpu_print.pt.trace.json.gz"
HOSTILE = ['=HYPERLINK("http://evil.example","click")', "+cmd|' /C calc'!A0", "-2+3+cmd", "@SUM(1,2)",
           "\tTAB=1", "\rCR=1", "<script>alert(1)</script>", "\x1b]0;owned\x07title", "\x1b[2J\x1b[31mred",
           "bidi\u202eevil"]
FORMULA = ("=", "+", "-", "@", "\t", "\r")


def ptprof(*args: str, stdout=subprocess.PIPE) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    return subprocess.run([sys.executable, "-m", "core.cli", *args], cwd=REPO, env=env, stdout=stdout,
                          stderr=subprocess.PIPE, timeout=300)


@pytest.fixture
def hostile_trace(tmp_path) -> Path:
    """The small real GPU trace with kernel and op names that attack spreadsheets, terminals and HTML."""
    data = json.loads(gzip.open(DATA).read())
    i = 0
    for e in data["traceEvents"]:
        if e.get("cat") in ("kernel", "cpu_op"):
            e["name"] = HOSTILE[i % len(HOSTILE)] + f" #{i % 3}"
            i += 1
    path = tmp_path / "evil\x1b]0;x\x07name.pt.trace.json"
    path.write_text(json.dumps(data))
    return path


def test_cells_neutralize_formulas_and_keep_numbers():
    assert neutralize("=1+1") == "'=1+1" and neutralize("@x") == "'@x" and neutralize("\tx") == "'\tx"
    assert neutralize("-1.5") == "-1.5" and neutralize("+3e5") == "+3e5"  # text that is exactly a number
    assert neutralize("-2+3") == "'-2+3" and neutralize("aten::mm") == "aten::mm"
    assert _cell(-1.5) == -1.5 and _cell(-3.0) == -3 and _cell(None) == ""


def test_report_csvs_and_html_are_safe(hostile_trace, tmp_path):
    out = tmp_path / "report"
    r = ptprof("report", str(hostile_trace), "--out", str(out), "--no-png", "--no-cache")
    assert r.returncode == 0, r.stderr
    seen_hostile = 0
    for path in out.glob("*.csv"):
        with open(path, encoding="utf-8", newline="") as fh:
            for row in csv.reader(fh):
                for cell in row:
                    if cell.startswith(FORMULA):
                        float(cell)  # only a plain number may start with - or +
                    seen_hostile += cell.startswith("'")
    assert seen_hostile >= 8, "the hostile names did not reach the CSVs: the test proves nothing"
    from core.terminal import printable
    for path in [*out.glob("*.csv"), out / "report.html"]:  # issue 37: no raw ESC / C1 / bidi in any file
        text = path.read_text(encoding="utf-8")
        assert printable(text) == text, (path.name, [c for c in text if printable(c) != c][:5])
    assert "\\x1b]0;owned\\x07title" in (out / "kernels.csv").read_text(encoding="utf-8")
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script" not in page.lower()


def test_report_never_writes_through_a_symlink(tmp_path):
    out = tmp_path / "report"
    out.mkdir()
    victims = {}
    for name in ("report.html", "kernels.csv", "steps.csv"):
        victim = tmp_path / f"victim-{name}"
        victim.write_text("precious")
        (out / name).symlink_to(victim)
        victims[name] = victim
    r = ptprof("report", str(DATA), "--out", str(out), "--no-png", "--no-cache")
    # issue 37: a planted link is neither written through nor replaced by a regular file: one line, exit 2
    err = r.stderr.decode()
    assert r.returncode == 2 and err.count("\n") == 1 and "symlink" in err, err
    for name, victim in victims.items():
        assert victim.read_text() == "precious"
        assert (out / name).is_symlink()
    assert sorted(p.name for p in out.iterdir()) == sorted(victims)  # nothing was written


def test_report_never_replaces_files_it_did_not_write(tmp_path):
    """`report --out` on a folder holding the user's own metrics.csv, or on a run bundle (whose raw nvml.csv
    the report's nvml table used to replace, in another format): one line, exit 2, nothing touched."""
    import shutil
    user = tmp_path / "work"
    user.mkdir()
    (user / "metrics.csv").write_text("my,own\n1,2\n")
    bundle = tmp_path / "e1"
    shutil.copytree(REPO / "tests" / "data" / "bundles" / "e1", bundle)
    raw = (bundle / "nvml.csv").read_bytes()
    for out, what in ((user, "metrics.csv, not written by ptprof"), (bundle, "is a run bundle")):
        before = sorted(p.name for p in out.rglob("*"))
        r = ptprof("report", str(bundle), "--out", str(out), "--no-png", "--no-cache")
        err = r.stderr.decode()
        assert r.returncode == 2 and err.count("\n") == 1 and what in err, err
        assert sorted(p.name for p in out.rglob("*")) == before
    assert (user / "metrics.csv").read_text() == "my,own\n1,2\n" and (bundle / "nvml.csv").read_bytes() == raw
    # its own folder again (the marker says so), and a report made before the marker existed
    out = bundle / "report"
    for _ in range(2):
        r = ptprof("report", str(bundle), "--out", str(out), "--no-png", "--no-cache")
        assert r.returncode == 0, r.stderr
    (out / ".ptprof-report").unlink()
    r = ptprof("report", str(bundle), "--out", str(out), "--no-png", "--no-cache")
    assert r.returncode == 0, r.stderr
    assert (bundle / "nvml.csv").read_bytes() == raw


def test_report_out_empty_is_refused(tmp_path):
    r = ptprof("report", str(DATA), "--out", "", "--no-png")
    assert r.returncode == 2 and r.stderr.decode().count("\n") == 1 and b"Traceback" not in r.stderr


@pytest.mark.parametrize("command", [["info"], ["info", "--json"], ["analyze"], ["analyze", "--json"]])
def test_a_full_stdout_is_one_line_not_a_traceback(command):
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    with open("/dev/full", "wb") as full:
        r = ptprof(*command, str(DATA), stdout=full)
    err = r.stderr.decode()
    assert r.returncode == 2 and err.count("\n") == 1 and "Traceback" not in err and "Exception" not in err, err


@pytest.mark.parametrize("command", ["info", "analyze"])
def test_terminal_control_sequences_in_names_are_escaped(hostile_trace, command):
    r = ptprof(command, str(hostile_trace), "--no-cache")
    assert r.returncode == 0, r.stderr
    text = r.stdout.decode("utf-8")
    assert "\x1b" not in text and "\x07" not in text and "\r" not in text and "\u202e" not in text
    assert "\\x1b]0;" in text  # shown, escaped: the user still sees what the name holds
