"""HTA tab: runs in a worker on request (Run HTA, with progress and Cancel; never just because the tab is
shown), fills tables and plots; says why when HTA cannot run; offers to install HTA when it is missing."""
from __future__ import annotations

import sys

import pytest
from helpers import hta_importable, shared_trace
from PySide6 import QtCore

from core.trace.loader import load

pytest.importorskip("pytestqt")



@pytest.mark.skipif(not hta_importable(), reason="traceinsight (hta) not importable here")
def test_tab_runs_hta_on_request_with_progress(qtbot):
    from gui.hta import HtaTab
    ts = load(shared_trace("gpu_minimal_opts.pt.trace.json.gz"), use_cache=False)
    tab = HtaTab()
    qtbot.addWidget(tab)
    tab.set_trace_set(ts)
    tab.show()
    qtbot.wait(50)
    assert tab.report() is None and tab._worker is None  # showing the tab starts nothing (431 s on gpt_big)
    assert tab.run_button.isEnabled() and "Run HTA" in tab.status.text()
    seen = []
    tab._sig_progress.connect(lambda _t, f, what: seen.append((f, what)))
    with qtbot.waitSignal(tab.sig_report_ready, timeout=60_000) as blocker:
        qtbot.mouseClick(tab.run_button, QtCore.Qt.MouseButton.LeftButton)
        assert tab.progress.isVisible() and tab.cancel_button.isVisible()
    assert seen and seen[0][1].startswith("HTA: parsing") and not tab.progress.isVisible()
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


def _missing_hta(monkeypatch, qtbot, command):
    import core.analysis.hta as hta_mod
    from gui.hta import HtaTab
    monkeypatch.setattr(hta_mod, "hta_installed", lambda: False)
    tab = HtaTab(install_command=command)
    qtbot.addWidget(tab)
    tab.show()
    tab.set_trace_set(load(shared_trace("gpu_clean.pt.trace.json.gz"), use_cache=False))
    return tab


def test_missing_hta_says_how_to_enable_it_and_installs_it(qtbot, monkeypatch):
    """HTA is the optional extra .[hta]: the tab names it and its Install button runs pip (here a stand-in
    that prints pip's lines) into the app's interpreter; once it succeeds, Run HTA is enabled."""
    import core.analysis.hta as hta_mod
    fake_pip = [sys.executable, "-c", "print('Collecting traceinsight>=0.5'); print('Collecting pandas'); "
                                      "print('Successfully installed traceinsight-0.6')"]
    tab = _missing_hta(monkeypatch, qtbot, fake_pip)
    assert tab.install_button.isVisible() and not tab.run_button.isEnabled()
    assert 'ptprof-gui[hta]' in tab.reason.text() and "Install HTA" in tab.status.text()
    lines = []
    tab.installer.sig_line.connect(lambda line, n: lines.append((line, n)))
    monkeypatch.setattr(hta_mod, "hta_installed", lambda: True)  # what pip will have done
    with qtbot.waitSignal(tab.installer.sig_done, timeout=60_000) as done:
        qtbot.mouseClick(tab.install_button, QtCore.Qt.MouseButton.LeftButton)
        assert tab.progress.isVisible() and tab.cancel_button.isVisible()
    assert done.args[0] is True and lines[-1][1] == 2
    assert not tab.install_button.isVisible() and tab.run_button.isEnabled() and tab._worker is None


def test_hta_install_can_be_cancelled(qtbot, monkeypatch):
    slow_pip = [sys.executable, "-c", "import time; print('Collecting traceinsight', flush=True); time.sleep(120)"]
    tab = _missing_hta(monkeypatch, qtbot, slow_pip)
    with qtbot.waitSignal(tab.installer.sig_line, timeout=60_000):
        tab.install()
    with qtbot.waitSignal(tab.installer.sig_done, timeout=30_000) as done:
        qtbot.mouseClick(tab.cancel_button, QtCore.Qt.MouseButton.LeftButton)
    assert done.args == [False, "Install cancelled."] and tab.status.text() == "Install cancelled."
    assert tab.install_button.isVisible() and tab.install_button.isEnabled() and not tab.progress.isVisible()


def test_the_app_imports_no_hta_module():
    """HTA is optional (.[hta]): the app, the CLI and the adapter import neither hta, pandas nor psutil."""
    import subprocess
    code = ("import sys, gui.app, gui.integrations, gui.main_window, gui.hta, core.cli, core.analysis.hta; "
            "print(sorted(m for m in ('hta', 'pandas', 'psutil') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"
