"""HTA tab: runs in a worker when shown, fills tables and plots; says why when HTA cannot run."""
from __future__ import annotations

import pytest
from helpers import hta_importable, shared_trace

from core.trace.loader import load

pytest.importorskip("pytestqt")



@pytest.mark.skipif(not hta_importable(), reason="traceinsight (hta) not importable here")
def test_tab_runs_hta_when_shown(qtbot):
    from gui.hta import HtaTab
    ts = load(shared_trace("gpu_minimal_opts.pt.trace.json.gz"), use_cache=False)
    tab = HtaTab()
    qtbot.addWidget(tab)
    tab.set_trace_set(ts)
    assert tab.report() is None  # nothing runs while hidden
    with qtbot.waitSignal(tab.sig_report_ready, timeout=60_000) as blocker:
        tab.show()
    report = blocker.args[0]
    assert report.unavailable is None and report["temporal_breakdown"].ok
    assert tab.frame_model.rowCount() >= 1 and "idle_time_pctg" in tab.frame_model._columns
    assert tab.plot.getPlotItem().listDataItems() or tab.plot.getPlotItem().items
    tab.list.setCurrentRow(4)  # launch stats: table + scatter
    assert tab.frame_model.rowCount() > 100
    tab.list.setCurrentRow(5)  # comm/comp overlap on one rank: the reason, not an error
    assert "single rank" in tab.reason.text()


def test_tab_says_why_on_cpu_trace(qtbot):
    from gui.hta import HtaTab
    ts = load(shared_trace("cpu_train.pt.trace.json.gz"), use_cache=False)
    tab = HtaTab()
    qtbot.addWidget(tab)
    tab.show()
    with qtbot.waitSignal(tab.sig_report_ready, timeout=5_000):
        tab.set_trace_set(ts)
    assert "CPU-only" in tab.reason.text()
    assert not tab.run_button.isEnabled() and tab.frame_model.rowCount() == 0


@pytest.mark.skipif(not hta_importable(), reason="traceinsight (hta) not importable here")
def test_cancel_drops_the_result(qtbot):
    from gui.hta import HtaTab
    ts = load(shared_trace("gpu_minimal_opts.pt.trace.json.gz"), use_cache=False)
    tab = HtaTab(auto_run=False)
    qtbot.addWidget(tab)
    tab.show()
    tab.set_trace_set(ts)
    reports = []
    tab.sig_report_ready.connect(reports.append)
    tab.run()
    assert tab.cancel_button.isVisible()
    worker, ended, returned = tab._worker, [], []
    worker.returned.connect(returned.append)
    worker.finished.connect(lambda: ended.append(True))  # delivered after its `returned`, in order
    tab.cancel()
    qtbot.waitUntil(lambda: bool(ended), timeout=120_000)  # HTA's thread finishes on its own...
    qtbot.wait(50)  # ... and its result must not land
    assert returned, "HTA ran to its end: the result existed and was dropped"
    assert not reports and tab.report() is None and "cancelled" in tab.status.text()
    assert tab.run_button.isEnabled()
