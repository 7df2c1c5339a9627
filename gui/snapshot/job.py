"""SnapshotJob: loads a memory snapshot in a superqt worker thread, with the same signals as
gui.workers.LoadJob so MainWindow's progress bar, Cancel and error dialog serve both."""
from __future__ import annotations

from pathlib import Path

from core.snapshot.report import iter_snapshot_report
from gui.workers import GeneratorJob


class SnapshotJob(GeneratorJob):
    """`sig_job_loaded` carries (SnapshotReport, None). Cancel stops at the next stage boundary."""

    def __init__(self, path: str | Path, parent=None) -> None:
        super().__init__(path, iter_snapshot_report, (str(path),), parent)
