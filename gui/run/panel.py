"""RunPanel: the run dock - status line with Stop, live GPU/step plots and the console, one controller.

Wiring (gui/main_window.py, done by the lead):

    panel = RunPanel(window)
    window.add_dock(panel, "Run", QtCore.Qt.DockWidgetArea.BottomDockWidgetArea)
    window.action_run_script.triggered.connect(lambda: panel.open_dialog())
    window.action_run_script.setEnabled(True)
    panel.sig_bundle_ready.connect(window.open_path)      # the finished run opens like any trace
    panel.sig_run_started.connect(lambda _: dock.show())

It stops a run in progress when the application quits (QCoreApplication.aboutToQuit -> shutdown()).
"""
from __future__ import annotations

from pathlib import Path

from PySide6 import QtCore, QtWidgets

from core.runner.bundle import default_dir
from core.runner.config import RunConfig
from core.runner.process import StopPlan
from gui.live.panel import LivePanel
from gui.run.console import ConsoleWidget
from gui.run.controller import RunController
from gui.run.dialog import RunDialog


class RunPanel(QtWidgets.QWidget):
    sig_run_started = QtCore.Signal(str)  # bundle folder of the run that just started
    sig_run_finished = QtCore.Signal(str, int)  # (bundle folder, exit code)
    sig_bundle_ready = QtCore.Signal(str)  # a finished run's bundle holds traces: open it

    def __init__(self, parent: QtWidgets.QWidget | None = None, plan: StopPlan = StopPlan(), backend_factory=None):
        super().__init__(parent)
        self.controller = RunController(self, plan=plan, backend_factory=backend_factory)
        self.status = QtWidgets.QLabel("No run. File > Run Script… starts one.", self)
        self.status.setWordWrap(True)
        self.stop_button = QtWidgets.QPushButton("Stop", self)
        self.stop_button.setEnabled(False)
        self.stop_button.setToolTip("SIGINT (the profiler saves the window in progress), then SIGTERM, then SIGKILL")
        self.stop_button.clicked.connect(self.controller.stop)
        self.live = LivePanel(self)
        self.live.state.hide()  # the status line above says it (one state line, next to Stop)
        self.console = ConsoleWidget(self)
        top = QtWidgets.QHBoxLayout()
        top.addWidget(self.status, 1)
        top.addWidget(self.stop_button)
        split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal, self)
        split.addWidget(self.live)
        split.addWidget(self.console)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setSizes([600, 400])  # the plots get 60 %: from the size hints alone the console took 60 %
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addLayout(top)
        lay.addWidget(split, 1)
        c = self.controller
        c.sig_run_started.connect(self._on_controller_run_started)
        c.sig_lines_received.connect(self.console.append_lines)
        c.sig_event_received.connect(self._on_controller_event_received)
        c.sig_state_changed.connect(self._on_controller_state_changed)
        c.sig_run_finished.connect(self._on_controller_run_finished)
        c.sig_run_failed.connect(self._on_controller_run_failed)
        app = QtCore.QCoreApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.shutdown)

    @property
    def is_running(self) -> bool:
        return self.controller.is_running

    def open_dialog(self, script: str = "") -> bool:
        """Ask what to run (RunDialog) and start it. False when cancelled or a run is in progress."""
        if self.is_running:
            QtWidgets.QMessageBox.information(self, "Run in progress", "Stop the current run first.")
            return False
        dlg = RunDialog(self, script=script)
        if not dlg.exec() or dlg.accepted_config is None:
            return False
        return self.start(dlg.accepted_config, dlg.accepted_doctor)

    def start(self, cfg: RunConfig, doctor: dict | None = None, open_when_done: bool = True) -> bool:
        """Start a validated RunConfig (core.runner.config.validate); bundle in ~/ptprof-runs unless set.
        open_when_done=False: the finished bundle is not opened as a tab (Try it opens a Compare instead)."""
        self._open_when_done = open_when_done
        if not cfg.out_dir:
            cfg = cfg.with_(out_dir=str(default_dir(cfg.script, Path.home() / "ptprof-runs")))
        self.console.clear()
        return self.controller.start(cfg, doctor)

    def stop(self) -> None:
        self.controller.stop()

    def shutdown(self) -> None:
        """Stop any run and wait for it (app exit)."""
        self.controller.shutdown()

    # -- slots -----------------------------------------------------------------------------------
    def _on_controller_run_started(self, bundle: str) -> None:
        s = self.controller.session
        self.live.attach(s.sampler, s.started_ns, getattr(s.cfg, "schedule", None))
        self.status.setText("Running · " + self.live.state_line())
        name = Path(s.cfg.script).name if s.cfg.script else s.cfg.target  # "-m pkg.train"
        self.console.append_note(f"ptprof: running {name} -> {bundle}")
        self.sig_run_started.emit(bundle)

    def _on_controller_event_received(self, e: dict) -> None:
        self.live.add_event(e)
        t = e.get("type")
        if t == "notice":
            self.console.append_note(f"ptprof: {e.get('message')}")
        elif t == "sync":
            lib = f"{e['lib_label']} <- " if e.get("lib_label") else ""
            self.console.append_note(f"ptprof: host sync at {lib}{e.get('file')}:{e.get('line')} (step {e.get('step')})")
        if t in ("start", "step", "phase", "cycle") and e.get("rank", 0) == 0:
            self.status.setText("Running · " + self.live.state_line())

    def _on_controller_state_changed(self, state: str) -> None:
        self.stop_button.setEnabled(state == "running")
        if state == "stopping":
            self.status.setText("Stopping… (the profiler is writing the window in progress)")

    def _on_controller_run_finished(self, bundle: str, code: int) -> None:
        self.live.detach()
        s = self.controller.session
        traces = s.bundle.trace_files()
        if code == 0:
            text = f"Finished · {s.state.step} steps · {len(traces)} trace file(s)"
        elif s.stopping_requested:
            text = f"Stopped (exit {code}) · {len(traces)} trace file(s) kept"
        else:
            text = f"Failed (exit {code}): {s.state.exception or 'see the console'}"
        if not traces:
            text += " · no trace recorded (the script ended before the schedule's active steps?)"
        self.status.setText(text)
        self.live.set_finished("done · " + text if code == 0 else text)
        self.console.append_note(f"ptprof: {text} -> {bundle}")
        self.sig_run_finished.emit(bundle, code)
        if traces and getattr(self, "_open_when_done", True):
            self.sig_bundle_ready.emit(bundle)

    def _on_controller_run_failed(self, message: str) -> None:
        self.status.setText(message)
        QtWidgets.QMessageBox.warning(self, "Cannot run", message)
