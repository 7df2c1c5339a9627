"""What a user reads at first sight (issue: first-sight review, h31r): no label of the Issues dock clipped
or drawn over the findings table in a laptop-sized dock; counts read as words ("1 error", "2 warnings")."""
from __future__ import annotations

from pathlib import Path

import pytest
from PySide6 import QtCore

from core.rules import analyze
from core.trace.loader import load

pytest.importorskip("pytestqt")
DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(scope="module")
def straggler():
    ts = load(str(DATA / "multi" / "straggler"), use_cache=False)
    return ts, analyze(ts)


def _rect_in(widget, ancestor) -> QtCore.QRect:
    return QtCore.QRect(widget.mapTo(ancestor, QtCore.QPoint(0, 0)), widget.size())


@pytest.mark.parametrize("width", [400, 520])
def test_issues_dock_labels_are_never_clipped(qtbot, straggler, width):
    """At 1366x768 the dock is ~410 px wide: 'Checks not run' (6 lines there) got 4 lines' height, its first
    line hidden under the table, and the status line lost its last line."""
    from gui.issues import IssuesPanel
    ts, analysis = straggler
    panel = IssuesPanel()
    qtbot.addWidget(panel)
    panel.resize(width, 690)
    panel.show()
    panel.set_analysis(ts, analysis)
    qtbot.wait(50)
    assert analysis.not_run and panel.not_run.isVisible()
    for label in (panel.status, panel.not_run):
        need = label.heightForWidth(label.width())
        assert label.height() >= need > 0, (label.text()[:40], label.height(), need)
    # the label sits below the table, not over it
    assert not _rect_in(panel.not_run, panel).intersects(_rect_in(panel.table, panel))
    assert _rect_in(panel.status, panel).bottom() < _rect_in(panel.table, panel).top()


def test_status_counts_read_as_words(qtbot, straggler):
    from gui.issues import IssuesPanel
    ts, analysis = straggler
    panel = IssuesPanel()
    qtbot.addWidget(panel)
    panel.set_analysis(ts, analysis)
    text = panel.status.text()
    assert "(s)" not in text and " 0 warning" not in text and "0 error" not in text, text
    n = len(analysis.findings)
    assert text.startswith(f"{n} finding{'' if n == 1 else 's'}")
