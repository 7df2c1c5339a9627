"""OomJob: reads an OOM bundle's report and its failure snapshot in a worker thread, with LoadJob's
signals (MainWindow's progress bar, Cancel and error dialog serve it as they serve SnapshotJob)."""
from __future__ import annotations

from pathlib import Path

from core.analysis.oom_view import iter_oom_view
from gui.workers import GeneratorJob


class OomJob(GeneratorJob):
    """`sig_job_loaded` carries (core.analysis.oom_view.OomView, None)."""

    def __init__(self, path: str | Path, parent=None) -> None:
        super().__init__(path, iter_oom_view, (str(path),), parent)
