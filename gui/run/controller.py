"""RunController: drives one core.runner.session.RunSession from the Qt event loop.

The child runs in its own process group (subprocess with start_new_session, the Qt-free equivalent of
QProcess + setsid), so Stop reaches every rank and DataLoader worker: SIGINT (the profiler writes the
window in progress), then SIGTERM, then SIGKILL after StopPlan's grace periods. A QTimer polls the
session: new events.jsonl lines, console lines, exit. Closing the app calls shutdown(): no orphans.
"""
from __future__ import annotations

import logging

from PySide6 import QtCore

from core.gpu.backend import GpuBackend
from core.runner.bundle import BundleError
from core.runner.config import RunConfig
from core.runner.process import StopPlan
from core.runner.session import RunSession

log = logging.getLogger(__name__)
POLL_MS = 100


class RunController(QtCore.QObject):
    sig_run_started = QtCore.Signal(str)  # bundle folder
    sig_step_received = QtCore.Signal(dict)  # a "step" event: step, dur_ns, t_ns, rank, source
    sig_event_received = QtCore.Signal(dict)  # every events.jsonl event (phase, cycle, notice, exception, end, ...)
    sig_lines_received = QtCore.Signal(list)  # [(stream "stdout"|"stderr", text), ...] console output
    sig_state_changed = QtCore.Signal(str)  # "running" | "stopping" | "finished"
    sig_run_finished = QtCore.Signal(str, int)  # (bundle folder, exit code)
    sig_run_failed = QtCore.Signal(str)  # the run could not start: one line
    sig_connection_changed = QtCore.Signal(str)  # a remote run's link: "connected", "disconnected - reconnecting (n)"
    sig_remote_started = QtCore.Signal(str)  # (internal) a remote start finished in its worker: "" or the error

    def __init__(self, parent: QtCore.QObject | None = None, plan: StopPlan = StopPlan(),
                 backend_factory=None):
        super().__init__(parent)
        self.plan = plan
        self.backend_factory = backend_factory  # () -> GpuBackend; None = NVML if present
        self.session: RunSession | None = None
        self._timer = QtCore.QTimer(self)
        self._timer.setInterval(POLL_MS)
        self._timer.timeout.connect(self._on_timer_timeout)
        self._state = "idle"
        self._connection = ""
        self._worker = None
        self.sig_remote_started.connect(self._on_remote_started)

    @property
    def is_running(self) -> bool:
        return self._state == "connecting" or (self.session is not None and not self.session.finished)

    @property
    def state(self) -> str:
        return self._state

    def start(self, cfg: RunConfig, doctor: dict | None = None, host=None, remote_dir: str = "") -> bool:
        """Start a validated config. False (and sig_run_failed) when a run is active or launching fails.
        `host` (core.remote.ssh.SshHost): the run happens there (core/remote/session.py), started in a
        worker (connecting and uploading take seconds); sig_run_started follows when it runs."""
        if self.is_running:
            self.sig_run_failed.emit("a run is already in progress: stop it first")
            return False
        if host is not None:
            return self._start_remote(cfg, doctor, host, remote_dir)
        backend: GpuBackend | None = self.backend_factory() if self.backend_factory else None
        try:
            self.session = RunSession(cfg, backend=backend, plan=self.plan, doctor=doctor).start()
        except BundleError as exc:  # the folder changed since the dialog checked it
            self.sig_run_failed.emit(str(exc))
            return False
        except OSError as exc:
            self.sig_run_failed.emit(f"cannot create the run folder: {exc.strerror or exc}")
            return False
        self.sig_run_started.emit(str(self.session.bundle.root))
        self._set_state("running")
        self._timer.start()
        self._on_timer_timeout()
        return True

    def _start_remote(self, cfg: RunConfig, doctor: dict | None, host, remote_dir: str = "") -> bool:
        from superqt.utils import create_worker

        from core.remote.session import RemoteSession, RemoteStartError
        try:
            session = RemoteSession(cfg, host, plan=self.plan, doctor=doctor, remote_dir=remote_dir)
        except BundleError as exc:
            self.sig_run_failed.emit(str(exc))
            return False
        self.session = session
        self._set_state("connecting")

        def go() -> str:
            try:
                session.start()
                return ""
            except RemoteStartError as exc:
                return str(exc)
        self._worker = create_worker(go, _start_thread=False, _ignore_errors=True)
        self._worker.returned.connect(self.sig_remote_started.emit)
        self._worker.start()
        return True

    def attach(self, host, run_id: str, out_dir: str) -> bool:
        """Follow a remote run that goes on without us (the app was closed, the desktop died): the same
        signals as a run started here, from where the local folder stops."""
        if self.is_running:
            self.sig_run_failed.emit("a run is already in progress: stop it first")
            return False
        from superqt.utils import create_worker

        from core.remote.session import RemoteSession, RemoteStartError
        self._set_state("connecting")
        box = {}

        def go() -> str:
            try:
                box["session"] = RemoteSession.attach(host, run_id, out_dir=out_dir, plan=self.plan)
                return ""
            except RemoteStartError as exc:
                return str(exc)

        def done(error: str) -> None:
            self.session = box.get("session")
            self.sig_remote_started.emit(error)
        self._worker = create_worker(go, _start_thread=False, _ignore_errors=True)
        self._worker.returned.connect(done)
        self._worker.start()
        return True

    def _on_remote_started(self, error: str) -> None:
        self._worker = None
        if error:
            self.session = None
            self._set_state("idle")
            self.sig_run_failed.emit(error)
            return
        self.sig_run_started.emit(str(self.session.bundle.root))
        self._set_state("running")
        self._timer.start()
        self._on_timer_timeout()

    @property
    def remote(self) -> bool:
        return self.session is not None and hasattr(self.session, "connection")

    def stop(self) -> None:
        """Ask the run to stop (escalates to SIGTERM/SIGKILL on its own if ignored)."""
        if self.is_running:
            self.session.request_stop()
            self._set_state("stopping")

    def shutdown(self) -> None:
        """Blocking stop for app exit: the whole escalation, then the last events are delivered. A remote
        run is left going on its host (ptprof remote attach / fetch it later)."""
        if self._state == "connecting":
            return  # a remote start in its worker: the run (if it starts) goes on on its host
        if self.is_running and self.remote:
            self._timer.stop()
            self.session.detach("the app was closed")
            return
        if self.is_running:
            self._set_state("stopping")
            self.session.stop_and_wait()
            self._on_timer_timeout()

    def _set_state(self, state: str) -> None:
        if state != self._state:
            self._state = state
            self.sig_state_changed.emit(state)

    def _on_timer_timeout(self) -> None:
        s = self.session
        if s is None:
            return
        if self._state == "connecting":
            return
        up = s.poll()
        connection = getattr(s, "connection", "")
        if getattr(s, "fetching", False) and connection == "connected":
            done, total = s.fetch_progress
            connection = f"fetching the bundle ({done / 1e6:.1f} of {total / 1e6:.1f} MB)"
        if connection != self._connection:
            self._connection = connection
            self.sig_connection_changed.emit(connection)
        if up.lines:
            self.sig_lines_received.emit(up.lines)
        for e in up.events:
            if e.get("type") == "step":
                self.sig_step_received.emit(e)
            self.sig_event_received.emit(e)
        if s.finished:
            self._timer.stop()
            self._set_state("finished")
            self.sig_run_finished.emit(str(s.bundle.root), int(s.exit_code))
