"""The Issues table sorts in its model (gui/issues/model.py FindingsModel.sort: one Python sort), not in a sorting
proxy that asked data() twice per comparison (15,000 calls, 50-70 ms of the UI thread at 1,153 findings)."""
from __future__ import annotations

import pytest
from helpers import shared_trace
from PySide6 import QtCore

from core.rules import analyze
from core.trace.loader import load

pytest.importorskip("pytestqt")


@pytest.fixture(scope="module")
def issues_ts():
    return load(shared_trace("gpu_issues.pt.trace.json.gz"), use_cache=False)


def _shown(panel) -> list:
    return [panel.model.finding(panel.proxy.mapToSource(panel.proxy.index(r, 0)).row())
            for r in range(panel.proxy.rowCount())]


def test_header_sorts_as_a_stable_sort_of_the_report_order(qtbot, issues_ts, monkeypatch):
    from gui.issues import IssuesPanel
    from gui.issues.model import COLUMNS, FindingsModel
    analysis = analyze(issues_ts)
    panel = IssuesPanel()
    qtbot.addWidget(panel)
    panel.set_analysis(issues_ts, analysis)
    assert _shown(panel) == list(analysis.findings)  # the report's order
    col = COLUMNS.index("Count")
    panel.table.selectRow(2)
    chosen = _shown(panel)[2]
    calls = []
    real = FindingsModel.data
    monkeypatch.setattr(FindingsModel, "data", lambda *a, **k: calls.append(1) or real(*a, **k))
    panel.table.sortByColumn(col, QtCore.Qt.SortOrder.DescendingOrder)
    assert not calls  # no data() per comparison (the view's repaint happens later, in the event loop)
    counts = [f.count for f in _shown(panel)]
    assert counts == sorted(counts, reverse=True)
    report = list(analysis.findings)
    for a, b in zip(_shown(panel), _shown(panel)[1:]):  # equal counts keep the report's order
        if a.count == b.count:
            assert report.index(a) < report.index(b)
    sel = panel.table.selectionModel().selectedRows()
    assert [_shown(panel)[i.row()] for i in sel] == [chosen]  # the selection follows its finding
    panel.table.sortByColumn(COLUMNS.index("Problem"), QtCore.Qt.SortOrder.AscendingOrder)
    assert [f.title for f in _shown(panel)] == sorted(f.title for f in report)
    panel.set_analysis(issues_ts, analysis)  # a new result: errors first again (the report's order)
    assert _shown(panel) == report
