"""Where exports go by default, and the "done" note in the status bar with Open folder / Open report.

The folder dialog starts next to the trace (a run bundle or the user's trace folder) when that folder
is writable and not inside this application's install (the bundled sample lives in the repository);
otherwise in ~/ptprof-reports. When an export finishes, the status bar says where it went, with buttons
to open the folder / the report - nothing modal, so nothing waits for a click.
"""
from __future__ import annotations

import os
from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets

APP_ROOT = Path(__file__).resolve().parents[2]
REPORTS_DIR = Path.home() / "ptprof-reports"
NOTE_MS = 30_000  # the done note stays this long (or until the next export)


def default_export_dir(trace_path: str | Path | None) -> Path:
    if trace_path:
        folder = Path(trace_path).expanduser().resolve()
        folder = folder if folder.is_dir() else folder.parent
        inside_app = folder == APP_ROOT or APP_ROOT in folder.parents
        if folder.is_dir() and os.access(folder, os.W_OK) and not inside_app:
            return folder
    return REPORTS_DIR


def ensure_dir(folder: Path) -> Path:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        pass
    return folder


class DoneNote(QtWidgets.QWidget):
    """`Report written to … [Open folder] [Open report]` in the status bar; goes away by itself."""

    def __init__(self, path: Path, parent=None) -> None:
        super().__init__(parent)
        path = Path(path)
        self.path = path
        self.folder = path if path.is_dir() else path.parent
        lay = QtWidgets.QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        what = "Report" if path.name == "report.html" else "Export"
        self.label = QtWidgets.QLabel(f"{what} written to {self.folder}")
        lay.addWidget(self.label)
        self.open_folder = QtWidgets.QPushButton("Open folder")
        self.open_folder.clicked.connect(lambda: self.open(self.folder))
        lay.addWidget(self.open_folder)
        self.open_file = None
        if path.is_file():
            self.open_file = QtWidgets.QPushButton("Open report" if path.suffix == ".html" else "Open file")
            self.open_file.clicked.connect(lambda: self.open(self.path))
            lay.addWidget(self.open_file)
        QtCore.QTimer.singleShot(NOTE_MS, self.deleteLater)

    @staticmethod
    def open(path: Path) -> bool:
        return QtGui.QDesktopServices.openUrl(QtCore.QUrl.fromLocalFile(str(path)))


def show_done(window: QtWidgets.QMainWindow, path: Path) -> DoneNote | None:
    """Replace any earlier note with one for `path` (None when the window has no status bar)."""
    bar = window.statusBar() if isinstance(window, QtWidgets.QMainWindow) else None
    if bar is None:
        return None
    old = getattr(window, "_export_note", None)
    if old is not None:
        try:
            bar.removeWidget(old)
            old.deleteLater()
        except RuntimeError:  # already deleted by its timer
            pass
    note = DoneNote(path, bar)
    bar.addWidget(note)
    window._export_note = note
    return note
