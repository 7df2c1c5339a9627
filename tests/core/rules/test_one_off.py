"""One-off costs (issue 31 item 5): a finding whose cost sits in one or few steps (a recompile, a first-step
compile, a cold start) is labelled "one-off: 3.84 s at step 4" in analyze's text and JSON, findings.csv and
report.html, and never orders below per-step trivia."""
from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from helpers import LOCAL_TRACES, run_cli, shared_trace

from core.analysis import vocab
from core.analysis.step_windows import StepWindows
from core.rules import analyze, sort_key
from core.rules.base import Finding, Severity
from core.rules.per_step import one_off_steps
from core.trace.loader import load

COMPILE_SMALL = "gpu_compile_small.pt.trace.json.gz"


@pytest.fixture(scope="module")
def compile_small():
    return analyze(load(shared_trace(COMPILE_SMALL), use_cache=False))


def test_the_recompile_of_gpu_compile_small_is_a_one_off_at_step_4(compile_small):
    rec = next(f for f in compile_small.findings if f.rule == "recompile")
    assert rec.one_off and rec.one_off_steps == (4,) and rec.steps == 4
    assert vocab.one_off_text(rec) == "one-off: 3.84 s at step 4"
    doc = rec.to_json()
    assert doc["one_off"] == {"cost_ns": rec.impact_ns, "steps": [4], "label": "one-off: 3.84 s at step 4"}
    # the graph break is paid in every compiled step: not one-off
    assert not next(f for f in compile_small.findings if f.rule == "graph_break").one_off


def _finding(rule="allocator_churn", ranges=((0, 10),), impact=10, saving=None, pct=None, sev=Severity.INFO,
             one_off=False):
    return Finding(rule=rule, severity=sev, title=rule, count=1, impact_ns=impact, impact_pct=1.0,
                   time_ranges=tuple(ranges), evidence=(), source=None, fix="", saving_ns=saving,
                   saving_pct=pct, one_off=one_off)


STEPS = StepWindows(np.arange(10, 18), np.arange(8) * 1_000_000, np.arange(1, 9) * 1_000_000, False)


def test_cost_in_one_step_of_eight_is_one_off_spread_cost_is_not():
    once = _finding(ranges=[(3_100_000, 3_600_000)], impact=500_000)
    assert one_off_steps(STEPS, once) == (13,)
    two = _finding(ranges=[(1_000_000, 1_400_000), (6_000_000, 6_400_000)], impact=800_000)
    assert one_off_steps(STEPS, two) == (11, 16)
    every = _finding(ranges=[(i * 1_000_000, i * 1_000_000 + 100_000) for i in range(8)], impact=800_000)
    assert one_off_steps(STEPS, every) is None
    # ranges that are only examples of a larger cost (10 % of it) say nothing about where the cost sits
    assert one_off_steps(STEPS, _finding(ranges=[(3_100_000, 3_600_000)], impact=5_000_000)) is None
    # gpu_idle's ranges are the worst step's gaps by design
    assert one_off_steps(STEPS, _finding(rule="gpu_idle", ranges=[(3_100_000, 3_600_000)], impact=500_000)) is None


def test_a_cost_every_n_steps_is_not_one_off():
    """gpt_big's .item() in log_metrics every 10 steps (steps 10, 20, 30 of 30) comes back: not one-off."""
    steps = StepWindows(np.arange(1, 31), np.arange(30) * 1_000_000, np.arange(1, 31) * 1_000_000, False)
    every_10 = _finding(ranges=[((n - 1) * 1_000_000, (n - 1) * 1_000_000 + 50_000) for n in (10, 20, 30)],
                        impact=150_000)
    assert one_off_steps(steps, every_10) is None
    twice = _finding(ranges=[((n - 1) * 1_000_000, (n - 1) * 1_000_000 + 50_000) for n in (3, 4, 17)],
                     impact=150_000)
    assert one_off_steps(steps, twice) == (3, 4, 17)


def test_one_off_never_orders_below_per_step_trivia():
    trivia = _finding("fp32_gemm", saving=0, pct=0.0, impact=9_000_000)
    tiny = _finding("host_sync", saving=1_095, pct=0.03, impact=1_000_000)
    useful = _finding("pageable_memcpy", saving=400_000, pct=4.9, impact=2_000_000)
    once = _finding("allocator_churn", impact=443_593, one_off=True)
    order = sorted([trivia, tiny, once, useful], key=sort_key)
    assert [f.rule for f in order] == ["pageable_memcpy", "allocator_churn", "host_sync", "fp32_gemm"]
    # the JSON dicts order the same (report.html and findings.csv sort those)
    assert sorted([f.to_json() for f in (trivia, tiny, once, useful)], key=vocab.order_key) == \
        [f.to_json() for f in order]


@pytest.mark.parametrize("name", sorted(p.name for p in LOCAL_TRACES.glob("*.pt.trace.json.gz")))
def test_no_one_off_below_trivia_on_the_test_traces(name):
    a = analyze(load(LOCAL_TRACES / name, use_cache=False))
    assert list(a.findings) == sorted(a.findings, key=sort_key)
    first_trivia = next((i for i, f in enumerate(a.findings) if vocab.is_trivia(f)), len(a.findings))
    assert all(i < first_trivia for i, f in enumerate(a.findings) if f.one_off), [
        (f.rule, f.one_off, vocab.is_trivia(f)) for f in a.findings]




def test_analyze_text_json_and_csv_say_one_off(tmp_path):
    path = str(shared_trace(COMPILE_SMALL))
    text = run_cli("analyze", path, "--no-cache")
    assert text.returncode == 0, text.stderr
    assert "one-off: 3.84 s at step 4" in text.stdout
    out = run_cli("analyze", path, "--json", "--csv", str(tmp_path / "f.csv"), "--no-cache")
    doc = json.loads(out.stdout)
    rec = next(f for f in doc["findings"] if f["rule"] == "recompile")
    assert rec["one_off"]["label"] == "one-off: 3.84 s at step 4" and rec["saving_ns"] > 0
    rows = list(csv.DictReader(io.StringIO((tmp_path / "f.csv").read_text())))
    assert next(r for r in rows if r["rule"] == "recompile")["one_off"] == "one-off: 3.84 s at step 4"
    assert all(r["one_off"] == "" for r in rows if r["rule"] in ("graph_break", "fp32_gemm"))
    # the CSV lists the findings in the JSON's order
    assert [r["rule"] for r in rows] == [f["rule"] for f in doc["findings"]]


def test_report_html_labels_the_one_off(tmp_path):
    out = run_cli("report", str(shared_trace(COMPILE_SMALL)), "--out", str(tmp_path / "r"), "--no-png")
    assert out.returncode == 0, out.stderr
    page = (tmp_path / "r" / "report.html").read_text()
    assert "one-off: 3.84 s at step 4" in page and "badge oneoff" in page
