"""Try it (gui/tryfix): the Issues panel's Try column and Details button on a run bundle's finding, the run
through the Run dock, the measured saving stored and shown, and the Compare opened with the verdict on top."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("PySide6")

from helpers import REPO, no_torch_skip  # noqa: E402
from runner_scripts import write  # noqa: E402
from switch_scripts import ZERO_GRAD  # noqa: E402

pytestmark = [pytest.mark.needs_torch, no_torch_skip]


def _row_of(panel, rule):
    for r in range(panel.proxy.rowCount()):
        if panel.model.finding(panel.proxy.mapToSource(panel.proxy.index(r, 0)).row()).rule == rule:
            return r
    raise AssertionError(f"no {rule} finding")


def test_try_it_runs_measures_and_opens_the_compare_with_the_verdict(qtbot, main_window, open_and_wait, tmp_path):
    from gui.issues.model import TRY_COLUMN, TRY_TEXT
    script = write(tmp_path, "zg.py", ZERO_GRAD)
    before = tmp_path / "before"
    r = subprocess.run([sys.executable, "-m", "core.cli", "record", "--quiet", "--out", str(before), "--wait", "2",
                        "--active", "4", str(script), "40"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    open_and_wait(main_window, before)
    panel = main_window.integrations.issues
    qtbot.waitUntil(lambda: panel.analysis() is not None, timeout=120_000)
    row = _row_of(panel, "zero_grad_not_none")
    assert panel.proxy.index(row, TRY_COLUMN).data() == TRY_TEXT
    host = [r for r in range(panel.proxy.rowCount()) if panel.proxy.index(r, TRY_COLUMN).data() != TRY_TEXT]
    for r_ in host:  # a finding whose fix needs a code change has no Try
        assert panel.proxy.index(r_, TRY_COLUMN).data() == ""
    panel.select_row(row)
    assert panel.try_button.isVisibleTo(panel) and panel.try_button.text() == "Try it: set_to_none"
    compare = main_window.integrations.compare
    with qtbot.waitSignal(compare.sig_compare_shown, timeout=240_000) as shown:
        panel.try_button.click()
        assert main_window.integrations.run_panel.is_running  # through the Run dock: live plots and Stop
    view = shown.args[0]
    text = view.verdict.text()
    assert "Try it: set_to_none" in text and "measured" in text and "unprofiled steps" in text
    assert main_window.try_controller.last_entry["fix"] == "set_to_none"
    assert "Tried set_to_none:" in main_window.statusBar().currentMessage()
    tried = json.loads((before / "tried.json").read_text())["fixes"]
    assert tried["set_to_none"]["measured_saving_ns"] is not None
    # the after run did not open as a tab of its own: the Compare is the result
    assert not any(getattr(main_window.tabs.widget(i), "trace_set", None) is not None
                   and "set_to_none" in str(main_window.tabs.widget(i).trace_set.path)
                   for i in range(main_window.tabs.count()))
    # the finding keeps its measured saving (Details)
    main_window.tabs.setCurrentIndex(0)
    qtbot.waitUntil(lambda: panel.analysis() is not None, timeout=60_000)
    panel.select_row(_row_of(panel, "zero_grad_not_none"))
    assert "Measured:" in panel.details.toHtml() or "Measured:" in panel.details.toPlainText()


def test_try_refused_before_the_run_says_why(qtbot, main_window, open_and_wait, tmp_path):
    script = write(tmp_path, "zg.py", ZERO_GRAD)
    before = tmp_path / "before"
    r = subprocess.run([sys.executable, "-m", "core.cli", "record", "--quiet", "--out", str(before), str(script), "8"],
                       cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    open_and_wait(main_window, before)
    panel = main_window.integrations.issues
    qtbot.waitUntil(lambda: panel.analysis() is not None, timeout=120_000)
    assert not main_window.try_controller.try_fix("pin_memory")
    assert "cannot apply pin_memory" in panel.status.text() and "DataLoader" in panel.status.text()
    assert not main_window.integrations.run_panel.is_running
