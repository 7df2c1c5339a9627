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
    sig_folded_changed = QtCore.Signal(bool)
    sig_trace_saved = QtCore.Signal(str)  # a cycle's trace file, saved while the script goes on: open it
    sig_run_connecting = QtCore.Signal()  # a remote start or reattach began (seconds): busy before it runs
    sig_run_not_started = QtCore.Signal()  # that remote start or reattach failed (sig_run_started never came)

    def __init__(self, parent: QtWidgets.QWidget | None = None, plan: StopPlan = StopPlan(), backend_factory=None):
        super().__init__(parent)
        self.controller = RunController(self, plan=plan, backend_factory=backend_factory)
        self.status = QtWidgets.QLabel("No run. File > Run Script… starts one.", self)
        self.status.setWordWrap(True)
        self.stop_button = QtWidgets.QPushButton("Stop", self)
        self.stop_button.setEnabled(False)
        self.stop_button.setToolTip("SIGINT (the profiler saves the window in progress), then SIGTERM, then SIGKILL")
        self.stop_button.clicked.connect(self.controller.stop)
        # a remote run's end-of-run fetch: cancel keeps no part of the bundle here (core/remote/fetch.py)
        self.cancel_fetch_button = QtWidgets.QPushButton("Cancel fetch", self)
        self.cancel_fetch_button.setToolTip("Stop bringing the bundle back; it stays on the host "
                                            "(File > Reattach Remote Run… or ptprof remote fetch gets it later)")
        self.cancel_fetch_button.clicked.connect(self._on_cancel_fetch_clicked)
        self.cancel_fetch_button.hide()
        self.live = LivePanel(self)
        self.live.state.hide()  # the status line above says it (one state line, next to Stop)
        self.console = ConsoleWidget(self)
        # folded when the run's trace opens (the trace needs the height; gui/integrations.py): the status
        # line and this toggle stay
        self.fold_button = QtWidgets.QToolButton(self, text="▾ Live", autoRaise=True, checkable=True, checked=True)
        self.fold_button.setToolTip("Show or fold the live plots and the console")
        self.fold_button.toggled.connect(lambda shown: self.set_folded(not shown))
        top = QtWidgets.QHBoxLayout()
        top.addWidget(self.fold_button)
        top.addWidget(self.status, 1)
        top.addWidget(self.cancel_fetch_button)
        top.addWidget(self.stop_button)
        split = self.body = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal, self)
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
        c.sig_connection_changed.connect(self._on_controller_connection_changed)
        app = QtCore.QCoreApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.shutdown)

    def set_folded(self, folded: bool) -> None:
        """Fold to the status line (the live plots and console hidden), or unfold."""
        self.body.setVisible(not folded)
        self.fold_button.blockSignals(True)
        self.fold_button.setChecked(not folded)
        self.fold_button.blockSignals(False)
        self.fold_button.setText(("▸" if folded else "▾") + " Live")
        self.sig_folded_changed.emit(folded)

    def is_folded(self) -> bool:
        return self.body.isHidden()

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
        return self.start(dlg.accepted_config, dlg.accepted_doctor, getattr(dlg, "accepted_host", None),
                          remote_dir=getattr(dlg, "accepted_remote_dir", ""))

    def start(self, cfg: RunConfig, doctor: dict | None = None, host=None, open_when_done: bool = True,
              remote_dir: str = "") -> bool:
        """Start a validated RunConfig (core.runner.config.validate); bundle in ~/ptprof-runs unless set.
        `host` (core.remote.ssh.SshHost): on that host, the bundle fetched into the same folder here.
        open_when_done=False: the finished bundle is not opened as a tab (Try it opens a Compare instead)."""
        self._open_when_done = open_when_done
        if not cfg.out_dir:
            cfg = cfg.with_(out_dir=str(default_dir(cfg.script or cfg.module, Path.home() / "ptprof-runs")))
        self.console.clear()
        if host is not None:
            self.status.setText(f"Connecting to {host.label} …")
        return self.controller.start(cfg, doctor, host=host, remote_dir=remote_dir)

    def attach(self, host, run_id: str, folder: str) -> bool:
        """Follow a remote run again (File > Reattach Remote Run…) into its local folder."""
        self.console.clear()
        self.status.setText(f"Reattaching to {run_id} on {host.label} …")
        return self.controller.attach(host, run_id, folder)

    def stop(self) -> None:
        self.controller.stop()

    def shutdown(self) -> None:
        """Stop any run and wait for it (app exit)."""
        self.controller.shutdown()

    # -- slots -----------------------------------------------------------------------------------
    def _on_controller_run_started(self, bundle: str) -> None:
        self.set_folded(False)
        s = self.controller.session
        self.live.attach(s.sampler, s.started_ns, getattr(s.cfg, "schedule", None),
                         clock_offset_ns=getattr(s, "clock_offset_ns", 0))  # a remote run: host -> desktop clock
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
        if t == "cycle" and self.is_running and getattr(self, "_open_when_done", True):  # Try it: no tabs
            self._on_cycle_saved(e)

    def _on_cycle_saved(self, e: dict) -> None:
        """A single-process run's cycle trace is complete on disk (the child renames it into place before it
        says so): open it now, not when the script ends. Multi-rank runs open as one set at the end."""
        s = self.controller.session
        path = e.get("path")
        root = getattr(getattr(s, "bundle", None), "root", None)
        if root is None or max(1, int(getattr(getattr(s, "cfg", None), "nproc", 1) or 1)) > 1 \
                or not isinstance(path, str):
            return  # a remote run's files are not here; multi-rank runs open as one set
        full = (Path(root) / path).resolve()
        if Path(root).resolve() not in full.parents or not full.is_file():
            return  # only a file inside this run's bundle
        self.console.append_note(f"ptprof: cycle {e.get('cycle')} trace saved, opening it (the script goes on)")
        self.status.setText("Running · " + self.live.state_line() + f" · cycle {e.get('cycle')} trace opened")
        self.sig_trace_saved.emit(str(full))

    def _on_controller_connection_changed(self, connection: str) -> None:
        """A remote run: the link to its host (the run goes on there while it is down)."""
        s = self.controller.session
        if s is None or not connection:
            return
        if connection.startswith("fetching"):
            self.status.setText(f"{s.host.label}: run ended · {connection}")
            self.live.set_connection("")
            self.cancel_fetch_button.setVisible(not s.finished)
            return
        if connection == "connected":
            self.status.setText(f"Running on {s.host.label} · " + self.live.state_line())
            self.live.set_connection("")
        else:
            text = f"{s.host.label}: {connection.replace(' - ', ' — ')} · the run goes on there"
            self.status.setText(text)
            self.live.set_connection(text)
            self.console.append_note(f"ptprof: {text}")

    def _on_controller_state_changed(self, state: str) -> None:
        self.stop_button.setEnabled(state == "running")
        if state == "connecting":
            self.sig_run_connecting.emit()
        elif state == "idle":  # the controller goes back to idle only when a remote start / reattach failed
            self.sig_run_not_started.emit()
        if state == "stopping":
            self.status.setText("Stopping… (the profiler is writing the window in progress)")

    def _on_cancel_fetch_clicked(self) -> None:
        s = self.controller.session
        if s is not None and hasattr(s, "cancel_fetch"):
            s.cancel_fetch()
            self.cancel_fetch_button.setEnabled(False)
            self.status.setText(f"{s.host.label}: cancelling the fetch…")

    def _on_controller_run_finished(self, bundle: str, code: int) -> None:
        self.live.detach()
        self.cancel_fetch_button.hide()
        self.cancel_fetch_button.setEnabled(True)
        s = self.controller.session
        if getattr(s, "fetch_cancelled", False):
            text = (f"Fetch cancelled · nothing of the bundle was kept in {bundle} · it stays on {s.host.label}: "
                    f"File > Reattach Remote Run… or ptprof remote fetch {s.host.label} {s.run_id}")
            self.status.setText(text)
            self.live.set_finished(text)
            self.console.append_note(f"ptprof: {text}")
            self.sig_run_finished.emit(bundle, code)
            return
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
