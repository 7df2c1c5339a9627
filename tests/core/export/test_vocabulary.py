"""One vocabulary (issue 31 item 4): "Lost / step" and "Saves / step" as positive times with units, "% of mean
step" as the one named denominator, the mean step stated the same in `analyze` and report.html, and the
findings in one order in report.html, findings.csv and `analyze` (the app's order: tests/gui/test_issues_panel)."""
from __future__ import annotations

import csv
import html
import io
import json
import re

import pytest
from helpers import run_cli, shared_trace

from core import units
from core.analysis import vocab
from core.rules import analyze
from core.trace.loader import load

ISSUES = "gpu_issues.pt.trace.json.gz"




@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vocab")
    path = str(shared_trace(ISSUES))
    text = run_cli("analyze", path, "--no-cache")
    doc = json.loads(run_cli("analyze", path, "--json", "--csv", str(tmp / "f.csv"), "--no-cache").stdout)
    rep = run_cli("report", path, "--out", str(tmp / "r"), "--no-png")
    assert text.returncode == 0 and rep.returncode == 0, text.stderr + rep.stderr
    rows = list(csv.DictReader(io.StringIO((tmp / "f.csv").read_text())))
    return text.stdout, doc, rows, (tmp / "r" / "report.html").read_text()


def test_the_same_words_everywhere(outputs):
    text, doc, rows, page = outputs
    assert "LOST / STEP" in text and "SAVES / STEP" in text and "% of mean step" in text
    assert "Lost / step" in page and "Saves / step" in page and "% of mean step" in page
    assert {"lost_per_step_us", "lost_pct_of_mean_step", "saves_per_step_us", "saves_pct_of_mean_step"} <= set(rows[0])
    from core.analysis.headline import fixes_text
    assert fixes_text(doc["summary"]).startswith("all fixes together: Saves / step ")


def test_each_columns_statistic_is_said_as_the_saving_lines_say_it(outputs):
    """Lost / step is a mean, Saves / step the median of the per-step replays (the mean where the DataLoader
    paces the loop): the header says each, and every saving line's own statistic is one the header names."""
    text = outputs[0]
    head = next(ln for ln in text.splitlines() if ln.strip().startswith("(Lost / step"))
    assert "Lost / step: the mean per profiled step" in head and "Saves / step: the median" in head
    stats = re.findall(r"\((mean|median) of \d+ steps;", text)
    assert stats and set(stats) <= {"mean", "median"}


def test_counts_read_with_their_noun_never_s_in_brackets(outputs):
    from core import units
    assert (units.count(1, "step"), units.count(30, "step"), units.count(0, "finding")) == \
        ("1 step", "30 steps", "0 findings")
    head = outputs[0].splitlines()[1]
    assert "(s)" not in head and " steps, " in head and "finding" in head, head


def test_savings_read_as_positive_times_with_units(outputs):
    text, doc, rows, page = outputs
    table = [ln for ln in text.splitlines() if re.match(r"  (error|warning|info) ", ln)]
    assert table and not any(re.search(r"-\d", ln.split("  ")[0] + ln[:80]) for ln in table)
    assert "−" not in page  # the old "−1.20 ms/step"
    launch = next(f for f in doc["findings"] if f["rule"] == "launch_bound")
    # JSON keeps its documented signs and fields (saving_ns positive), and adds the per-step vocabulary
    assert launch["saving_ns"] > 0 and {"impact_ns", "impact_pct", "saving_pct", "estimate"} <= set(launch)
    assert launch["lost_per_step_ns"] == round(launch["impact_ns"] / launch["steps"])
    assert launch["saving_pct_of_mean_step"] == pytest.approx(100 * launch["saving_ns"] / launch["mean_step_ns"],
                                                              abs=1e-3)
    line = next(ln for ln in table if " launch_bound " in ln)
    assert units.fmt_ns(launch["saving_ns"]) in line and units.fmt_ns(launch["lost_per_step_ns"]) in line
    row = next(r for r in rows if r["rule"] == "launch_bound")
    assert float(row["saves_per_step_us"]) == pytest.approx(launch["saving_ns"] / 1e3, abs=1e-3)
    assert float(row["lost_pct_of_mean_step"]) == pytest.approx(launch["impact_pct"], abs=1e-3)
    assert f"{vocab.SAVES} <b>{html.escape(units.fmt_ns(launch['saving_ns']))} (" in page


def test_one_mean_step_in_analyze_and_report(outputs):
    text, doc, rows, page = outputs
    mean = units.fmt_ns(doc["summary"]["mean_step_ns"])
    assert f"mean step {mean}" in text
    card = re.search(r"<div class=cv>([^<]*)</div><div class=ck>mean step</div>", page)
    assert card and html.unescape(card.group(1)) == mean and "median step" not in page


def test_one_order_in_analyze_csv_and_report(outputs):
    text, doc, rows, page = outputs
    titles = [f["title"] for f in doc["findings"]]
    assert [r["title"] for r in rows] == titles
    shown = [html.unescape(t) for t in re.findall(r"<b>([^<]*)</b> <code class=rule>", page)]
    assert shown == titles
    assert titles == [f.title for f in analyze(load(shared_trace(ISSUES), use_cache=False)).findings]


def test_gpt_big_states_one_mean_step(tmp_path):
    """gpt_big: the app's status line said 41.18 ms (mean), report.html 37.97 ms (median)."""
    path = shared_trace("gpu_gpt_big.pt.trace.json.gz")
    a = analyze(load(path))
    from core.analysis.headline import step_text
    from core.export import summary
    cards = dict(summary.headline(load(path)))
    assert step_text(a.summary).startswith(f"mean step {cards['mean step']}")
    assert cards["mean step"] == "41.18 ms"
