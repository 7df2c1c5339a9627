"""A run of many ranks opens folded under the rank summary lane (issue 33): heat strip of step times per rank,
straggler marked, a click expands a rank and draws its memory; tables are built in their worker."""
from __future__ import annotations

import pytest
from helpers import shared_trace
from PySide6 import QtCore


def _gen():
    import gen_ranks  # tests/gen_ranks.py (bench/multi/gen_ranks.py runs it)
    return gen_ranks


@pytest.fixture
def many(tmp_path, monkeypatch):
    from gui import trace_view
    from gui.timeline import rank_strip
    monkeypatch.setattr(rank_strip, "MANY_RANKS", 4)
    monkeypatch.setattr(trace_view, "MANY_RANKS", 4)
    monkeypatch.setenv("PTPROF_CACHE_DIR", str(tmp_path / "cache"))
    from core.trace.loader import load
    _gen().generate(shared_trace("gpu_issues.pt.trace.json.gz"), 5, tmp_path / "run", slow=3, per_step=2)
    return load(tmp_path / "run")


def test_ranks_start_folded_under_the_strip_and_a_click_expands_one(qtbot, many):
    from gui.theme import load_theme
    from gui.timeline.rows import HEADER
    from gui.trace_view import TraceView
    view = TraceView(many, None, load_theme(dark=False))
    qtbot.addWidget(view)
    view.resize(1400, 900)
    view.show()
    qtbot.waitUntil(lambda: view.ready, timeout=60_000)
    strip = view.rank_strip
    assert strip is not None and strip.isVisible() and len(strip.ranks) == 5
    assert [r.track for r in view.timeline.rows] == [HEADER] * 5  # every rank folded
    assert view.memory_rank() == strip.straggler >= 0  # one rank's memory, not 5 x 2 curves
    assert len(view.memory.curves) <= 2
    view.set_straggler(3)
    assert strip.straggler == 3 and "▲ rank 3" in strip.headline()
    x0, w = strip._columns()
    qtbot.mouseClick(strip, QtCore.Qt.MouseButton.LeftButton, pos=QtCore.QPoint(int(x0 + 1.5 * w), 30))
    assert strip.selected == 1
    rows = view.timeline.rows
    assert sum(1 for r in rows if r.model == 1) > 1 and all(r.track == HEADER for r in rows if r.model != 1)
    assert view.memory_rank() == 1


def test_the_stacked_tables_are_built_off_the_ui_thread(qtbot, many, monkeypatch):
    from gui.stats import panels
    from gui.theme import load_theme
    from gui.trace_view import TraceView
    ui = QtCore.QThread.currentThread()
    threads = []
    real = panels.KernelsPanel.build_columns

    def spy(self, *a, **k):
        threads.append(QtCore.QThread.currentThread() is ui)
        return real(self, *a, **k)
    monkeypatch.setattr(panels.KernelsPanel, "build_columns", spy)
    view = TraceView(many, None, load_theme(dark=True))
    qtbot.addWidget(view)
    view.show()
    qtbot.waitUntil(lambda: view.kernels.ready, timeout=60_000)
    assert threads and not any(threads)
    assert view.kernels.info.text().endswith("5 ranks")
