"""ProgressWidget: the status bar's "Loading name — stage" + bar + Cancel (PySide6 only: the main window builds
it before its first paint, before superqt and the loader are imported)."""
from __future__ import annotations

from PySide6 import QtCore, QtWidgets


class ProgressWidget(QtWidgets.QWidget):
    """Status-bar widget: "Loading name — stage" + bar + Cancel. Hidden when idle."""

    sig_cancel_clicked = QtCore.Signal()

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        lay = QtWidgets.QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.label = QtWidgets.QLabel()
        self.bar = QtWidgets.QProgressBar()
        self.bar.setRange(0, 1000)
        self.bar.setFixedWidth(220)
        self.bar.setTextVisible(False)
        self.cancel = QtWidgets.QPushButton("Cancel")
        self.cancel.clicked.connect(self.sig_cancel_clicked)
        lay.addWidget(self.label)
        lay.addWidget(self.bar)
        lay.addWidget(self.cancel)
        self.hide()

    def start(self, title: str) -> None:
        self._title = title
        self.label.setText(f"Loading {title}…")
        self.bar.setValue(0)
        self.show()

    def set_progress(self, stage: str, fraction: float) -> None:
        self.label.setText(f"Loading {self._title} — {stage}")
        self.bar.setValue(int(max(0.0, min(1.0, fraction)) * 1000))

    def finish(self) -> None:
        self.hide()
