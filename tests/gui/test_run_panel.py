"""The GUI run path (pytest-qt, offscreen): RunPanel + RunController on a real CPU torch run."""
from __future__ import annotations

import time

import pytest

pytest.importorskip("PySide6")

from helpers import no_torch_skip  # noqa: E402
from runner_scripts import STUBBORN, TRAIN, write  # noqa: E402

from core.gpu.backend import FakeBackend  # noqa: E402
from core.runner.config import RunConfig, Schedule, validate  # noqa: E402
from core.runner.process import StopPlan  # noqa: E402
from core.trace.loader import load  # noqa: E402
from gui.run.panel import RunPanel  # noqa: E402

pytestmark = [pytest.mark.needs_torch, no_torch_skip]


def _cfg(tmp_path, script, args=(), schedule=Schedule(1, 1, 2, 1)):
    return validate(RunConfig(script=str(script), args=tuple(args), schedule=schedule,
                              out_dir=str(tmp_path / "bundle"), nvml_hz=20))


def test_panel_runs_script_and_offers_the_bundle(qtbot, tmp_path):
    panel = RunPanel(backend_factory=lambda: FakeBackend(1))
    qtbot.addWidget(panel)
    steps = []
    panel.controller.sig_step_received.connect(steps.append)
    script = write(tmp_path, "train.py", TRAIN)
    with qtbot.waitSignal(panel.sig_bundle_ready, timeout=90_000) as ready:
        assert panel.start(_cfg(tmp_path, script, ["6"]))
        assert panel.stop_button.isEnabled()
    bundle = ready.args[0]
    assert bundle == str(tmp_path / "bundle")
    assert [e["step"] for e in steps] == [1, 2, 3, 4, 5, 6]
    assert not panel.is_running and not panel.stop_button.isEnabled()
    assert panel.status.text().startswith("Finished · 6 steps · 1 trace file(s)")
    text = panel.console.text.toPlainText()
    assert "finished 6" in text and "ptprof: running train.py" in text
    assert panel.live.step_count() == 5
    assert len(panel.live._util_curves[0].getData()[0]) > 0  # fake GPU curve was fed from the ring
    ts = load(bundle, use_cache=False)
    assert list(ts.primary.steps.number) == [2, 3]


def test_stop_escalates_and_app_shutdown_waits(qtbot, tmp_path):
    panel = RunPanel(plan=StopPlan(sigint_grace_s=0.4, sigterm_grace_s=0.4))
    qtbot.addWidget(panel)
    pid_file = tmp_path / "pid"
    script = write(tmp_path, "stubborn.py", STUBBORN)
    panel.start(_cfg(tmp_path, script, [str(pid_file)]))
    qtbot.waitUntil(lambda: pid_file.exists() and pid_file.read_text() != "", timeout=30_000)
    with qtbot.waitSignal(panel.sig_run_finished, timeout=30_000) as done:
        panel.stop()
        assert panel.controller.state == "stopping"
    assert done.args[1] == 137
    assert panel.controller.session.proc.signals_sent == ["SIGINT", "SIGTERM", "SIGKILL"]
    assert panel.status.text().startswith("Stopped (exit 137)")


def test_shutdown_stops_a_training_run_cleanly(qtbot, tmp_path):
    panel = RunPanel()
    qtbot.addWidget(panel)
    script = write(tmp_path, "forever.py", TRAIN)
    steps = []
    panel.controller.sig_step_received.connect(steps.append)
    panel.start(_cfg(tmp_path, script, ["-1"], schedule=Schedule(0, 1, 100000, 1)))
    qtbot.waitUntil(lambda: len(steps) >= 4, timeout=120_000)
    panel.shutdown()  # what aboutToQuit does: blocks until the child has written its window
    s = panel.controller.session
    assert s.exit_code == 130 and s.proc.signals_sent == ["SIGINT"]
    assert len(s.bundle.trace_files()) == 1  # the active window was flushed


def test_closing_the_window_stops_the_run_without_freezing(qtbot, main_window, tmp_path, monkeypatch):
    """Closing the app during a run: after "Yes", a progress dialog stays up (the event loop keeps
    running: timers tick) until the trace is written; then the window closes."""
    from PySide6 import QtCore, QtWidgets
    win = main_window
    run = win.integrations.run_panel
    script = write(tmp_path, "forever.py", TRAIN)
    steps = []
    run.controller.sig_step_received.connect(steps.append)
    run.start(_cfg(tmp_path, script, ["-1"], schedule=Schedule(0, 1, 100000, 1)))
    qtbot.waitUntil(lambda: len(steps) >= 3, timeout=120_000)
    monkeypatch.setattr(QtWidgets.QMessageBox, "question", lambda *a, **k: QtWidgets.QMessageBox.StandardButton.Yes)
    ticks = []
    timer = QtCore.QTimer()
    timer.timeout.connect(lambda: ticks.append(time.monotonic()))
    timer.start(20)
    win.close()
    timer.stop()
    s = run.controller.session
    assert s.finished and s.exit_code == 130 and len(s.bundle.trace_files()) == 1
    # the event loop ran while the run stopped (a blocking wait gives at most one tick); no gap is
    # asserted on wall time, which a loaded machine stretches
    assert len(ticks) >= 3
    assert not win.isVisible()


def test_live_gpu_plot_exports_during_a_run_with_no_trace_open(qtbot, main_window, tmp_path, monkeypatch):
    win = main_window
    run = win.integrations.run_panel
    exporter = win.integrations.exporter
    assert win.current_view() is None and not exporter.act_gpu_png.isEnabled()
    script = write(tmp_path, "forever.py", TRAIN)
    steps = []
    run.controller.sig_step_received.connect(steps.append)
    run.start(_cfg(tmp_path, script, ["-1"], schedule=Schedule(0, 1, 100000, 1)))
    qtbot.waitUntil(lambda: len(steps) >= 2, timeout=120_000)
    assert exporter.act_gpu_png.isEnabled() and not exporter.act_timeline_png.isEnabled()
    out = tmp_path / "gpu.png"
    monkeypatch.setattr(exporter, "_ask_file", lambda *a: out)
    exporter.export_gpu_png()
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with qtbot.waitSignal(run.sig_run_finished, timeout=180_000):
        run.stop()
    qtbot.waitUntil(lambda: not exporter.act_gpu_png.isEnabled() or win.current_view() is not None, timeout=60_000)
