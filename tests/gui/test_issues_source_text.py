"""A finding without a source line asks for with_stack=True only on a trace recorded without stacks
(issue 31: gpu_issues, recorded with stacks, said "record with with_stack=True")."""
from __future__ import annotations

import pytest
from helpers import shared_trace

from core.rules import analyze
from core.trace.loader import load

pytest.importorskip("pytestqt")


@pytest.mark.parametrize("trace", ["gpu_issues.pt.trace.json.gz", "gpu_clean.pt.trace.json.gz"])
def test_source_text_follows_the_trace(qtbot, trace):
    from gui.issues.panel import IssuesPanel
    ts = load(shared_trace(trace), use_cache=False)
    has = not any(n.rule == "source" for n in analyze(ts).not_run)
    panel = IssuesPanel()
    qtbot.addWidget(panel)
    analysis = analyze(ts)
    panel.set_analysis(ts, analysis)
    assert panel.details.stacks is has
    unsourced = [f for f in analysis.findings if f.source is None]
    if not unsourced:
        pytest.skip(f"every finding of {trace} has a source line")
    panel.details.show_finding(unsourced[0])
    text = panel.details.toPlainText()
    assert ("with_stack=True" in text) is (not has)
    if has:
        assert "no line of your code" in text
