"""Colour legend of slice kinds (one swatch per kind present in the trace)."""
from __future__ import annotations

import numpy as np
from PySide6 import QtGui, QtWidgets

from core.analysis import rows
from core.trace.model import Kind, TraceModel
from gui.theme import Theme

_LABELS = {Kind.KERNEL: "kernel", Kind.MEMCPY: "memcpy", Kind.MEMSET: "memset", Kind.CPU_OP: "cpu op",
           Kind.RUNTIME: "cuda runtime", Kind.DRIVER: "cuda driver", Kind.PYTHON: "python",
           Kind.ANNOTATION: "annotation / step", Kind.GPU_ANNOTATION: "gpu annotation",
           Kind.COLLECTIVE: "collective", Kind.TRACE: "profiler", Kind.OTHER: "other"}


class Legend(QtWidgets.QWidget):
    def __init__(self, theme: Theme, parent=None) -> None:
        super().__init__(parent)
        self.theme = theme
        self.lay = QtWidgets.QHBoxLayout(self)
        self.lay.setContentsMargins(4, 0, 4, 0)
        self.lay.setSpacing(10)

    def set_models(self, models: list[TraceModel]) -> None:
        while self.lay.count():
            w = self.lay.takeAt(0).widget()
            if w is not None:
                w.deleteLater()
        present = set()
        for m in models:  # the kind histogram: counted once per model (in the load worker for the window)
            present.update(np.flatnonzero(rows.kind_counts(m)).tolist())
        for k in Kind:
            if k in present and k != Kind.TRACE:
                self.lay.addWidget(self._swatch(k))
        self.lay.addStretch(1)

    def _swatch(self, kind: Kind) -> QtWidgets.QLabel:
        pm = QtGui.QPixmap(12, 12)
        pm.fill(self.theme.kind_color(int(kind)))
        box = QtWidgets.QLabel()
        box.setPixmap(pm)
        w = QtWidgets.QWidget()
        h = QtWidgets.QHBoxLayout(w)
        h.setContentsMargins(0, 0, 0, 0)
        h.setSpacing(3)
        h.addWidget(box)
        h.addWidget(QtWidgets.QLabel(_LABELS.get(kind, kind.name.lower())))
        return w
