"""SnapshotJob: loads a memory snapshot in a superqt worker thread, with the same signals as
gui.workers.LoadJob so MainWindow's progress bar, Cancel and error dialog serve both."""
from __future__ import annotations

import logging
from pathlib import Path

from PySide6 import QtCore
from superqt.utils import create_worker

from core.snapshot.report import iter_snapshot_report
from core.trace.loader import Progress

log = logging.getLogger(__name__)


class SnapshotJob(QtCore.QObject):
    """Emits exactly one of loaded / failed / cancelled."""

    sig_progress_changed = QtCore.Signal(str, float)  # (stage text, fraction 0..1)
    sig_job_loaded = QtCore.Signal(object, object)  # (SnapshotReport, None)
    sig_job_failed = QtCore.Signal(str, str)  # (path, one-line reason)
    sig_job_cancelled = QtCore.Signal(str)  # path

    def __init__(self, path: str | Path, parent=None) -> None:
        super().__init__(parent)
        self.path = str(path)
        self.worker = create_worker(iter_snapshot_report, self.path, _start_thread=False,
                                    _connect={"yielded": self._on_worker_yielded,
                                              "returned": self._on_worker_returned,
                                              "errored": self._on_worker_errored,
                                              "aborted": self._on_worker_aborted})

    def start(self) -> None:
        self.worker.start()

    def cancel(self) -> None:
        self.worker.quit()  # stops at the next stage boundary

    def _on_worker_yielded(self, prog: Progress) -> None:
        detail = f" {prog.detail}" if prog.detail else ""
        self.sig_progress_changed.emit(f"{prog.stage}{detail}", float(prog.fraction))

    def _on_worker_returned(self, report) -> None:
        self.sig_job_loaded.emit(report, None)

    def _on_worker_errored(self, exc: BaseException) -> None:
        log.info("snapshot load of %s failed: %r", self.path, exc)
        reason = getattr(exc, "reason", None) or (str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        self.sig_job_failed.emit(self.path, reason)

    def _on_worker_aborted(self) -> None:
        self.sig_job_cancelled.emit(self.path)
