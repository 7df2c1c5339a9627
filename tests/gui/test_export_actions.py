"""GUI export actions: the report folder and CSVs are written by a worker while the window stays responsive."""
from __future__ import annotations

import csv
import time

import pytest
from helpers import shared_trace
from PySide6 import QtCore, QtWidgets

from core.analysis import stats
from core.trace.loader import load
from gui.report.actions import ExportContext, ReportActions


@pytest.fixture(scope="module")
def issues():
    return load(shared_trace("gpu_issues.pt.trace.json.gz"), use_cache=False)


@pytest.fixture()
def exporter(qtbot, issues):
    win = QtWidgets.QMainWindow()
    qtbot.addWidget(win)
    m = issues.primary
    view = (int(m.steps.ts_ns[1]), int(m.steps.ts_ns[1] + 2_000_000))
    ex = ReportActions(win, lambda: ExportContext(issues, findings=[], view_range_ns=view))
    return win, ex


def test_menu_has_the_export_entries(exporter):
    win, ex = exporter
    texts = [a.text() for a in ex.menu().actions()]
    assert texts == ["Export timeline PNG…", "Export memory plot PNG…", "Export GPU plot PNG…",
                     "Export tables as CSV…", "Export report…"]


def test_report_folder_from_the_gui_without_blocking(exporter, qtbot, tmp_path):
    win, ex = exporter
    ticks = []
    timer = QtCore.QTimer()
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    timer.start(20)
    with qtbot.waitSignal(ex.sig_export_finished, timeout=60_000) as sig:
        ex.run_report(ex._context(), tmp_path)
    timer.stop()
    assert sig.args[0] == tmp_path / "report.html"
    for name in ("timeline.png", "memory.png", "gpu.png", "breakdown.png", "kernels.csv", "ops.csv", "steps.csv",
                 "findings.csv", "nvml.csv", "report.html"):
        assert (tmp_path / name).stat().st_size > 0, name
    assert len(ticks) >= 3  # the event loop kept running during the export
    gaps = [b - a for a, b in zip(ticks, ticks[1:])]
    assert max(gaps) < 2.0, f"UI thread blocked for {max(gaps):.2f} s"
    assert "no problems found" in (tmp_path / "report.html").read_text(encoding="utf-8")


def test_one_table_csv_and_timeline_view_png(exporter, qtbot, tmp_path, issues):
    win, ex = exporter
    with qtbot.waitSignal(ex.sig_export_finished, timeout=30_000):
        ex.run_tables(ex._context(), tmp_path, only="kernels", path=tmp_path / "k.csv")
    with open(tmp_path / "k.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(stats.kernel_table(issues.primary))
    from core.export import timeline_data
    from core.export.figures import FigureSpec
    t0, t1 = ex._context().view_range_ns
    spec = FigureSpec(width_px=1000, t0_ns=t0, t1_ns=t1)
    with qtbot.waitSignal(ex.sig_export_finished, timeout=30_000) as sig:
        ex.run_png(lambda: timeline_data.build(issues, spec), tmp_path / "view.png")
    assert sig.args[0].stat().st_size > 10_000


def test_png_options_dialog_maps_choices_to_a_figure_spec(qtbot, issues):
    from gui.report.dialogs import PngOptionsDialog

    steps = [int(n) for n in issues.primary.steps.number]
    dlg = PngOptionsDialog(None, "Export timeline PNG", steps, has_view=True)
    qtbot.addWidget(dlg)
    labels = [dlg.source.itemText(i) for i in range(dlg.source.count())]
    assert labels == ["current view", "busiest step"] + [f"step {n}" for n in steps]
    dlg.source.setCurrentIndex(0)
    dlg.width.setValue(1200)
    dlg.hidpi.setChecked(True)
    spec = dlg.spec((1_000, 5_000_000))
    assert (spec.t0_ns, spec.t1_ns, spec.step, spec.width_px, spec.scale) == (1_000, 5_000_000, None, 1200, 2.0)
    dlg.source.setCurrentIndex(2 + len(steps) - 1)
    spec = dlg.spec((1_000, 5_000_000))
    assert (spec.t0_ns, spec.step, spec.scale) == (None, steps[-1], 2.0)


def test_cancel_stops_the_export(exporter, qtbot, tmp_path):
    win, ex = exporter
    with qtbot.waitSignal(ex.sig_export_failed, timeout=30_000) as sig:
        ex.run_report(ex._context(), tmp_path)
        for worker in list(ex._workers):
            worker.quit()  # what the progress dialog's Cancel button does
    assert sig.args == ["cancelled"]
    assert not (tmp_path / "report.html").exists()
    qtbot.waitUntil(lambda: not ex.is_busy(), timeout=10_000)


@pytest.mark.parametrize("answer", [True, False])
def test_export_into_a_folder_of_other_files_asks_and_never_replaces_them(exporter, qtbot, tmp_path, monkeypatch,
                                                                          answer):
    """A run bundle (its raw nvml.csv) or a folder with the user's own steps.csv picked in the folder dialog:
    the window asks (answered here: no modal box in tests) to export into a new subfolder instead."""
    win, ex = exporter
    (tmp_path / "steps.csv").write_text("mine")
    asked = []
    monkeypatch.setattr(ex, "ask_subfolder", lambda why, sub: asked.append((why, sub)) or answer)
    monkeypatch.setattr(QtWidgets.QFileDialog, "getExistingDirectory", lambda *a, **k: str(tmp_path))
    if answer:
        with qtbot.waitSignal(ex.sig_export_finished, timeout=60_000) as sig:
            ex.export_tables_csv()
        assert sig.args[0] == asked[0][1] and asked[0][1].parent == tmp_path
        assert (asked[0][1] / "steps.csv").stat().st_size > 0
    else:
        with qtbot.waitSignal(ex.sig_export_failed, timeout=10_000) as sig:
            ex.export_report()
        assert "steps.csv, not written by ptprof" in sig.args[0]
        assert sorted(p.name for p in tmp_path.iterdir()) == ["steps.csv"]
    assert "steps.csv" in asked[0][0] and (tmp_path / "steps.csv").read_text() == "mine"


def test_a_folder_that_changed_after_the_question_fails_the_export_in_one_line(exporter, qtbot, tmp_path):
    win, ex = exporter
    (tmp_path / "kernels.csv").write_text("mine")
    with qtbot.waitSignal(ex.sig_export_failed, timeout=30_000) as sig:
        ex.run_tables(ex._context(), tmp_path)
    assert "kernels.csv, not written by ptprof" in sig.args[0]
    with qtbot.waitSignal(ex.sig_export_failed, timeout=30_000) as sig:
        ex.run_report(ex._context(), tmp_path)
    assert "kernels.csv, not written by ptprof" in sig.args[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kernels.csv"]
