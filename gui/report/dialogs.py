"""Small option dialogs of the export actions: which window / step, what size, 2x DPI."""
from __future__ import annotations

from PySide6 import QtWidgets

from core.export.figures import FigureSpec
from core.export.style import config

CURRENT, BUSIEST, STEP = "current", "busiest", "step"


class PngOptionsDialog(QtWidgets.QDialog):
    """Width / 2x DPI for any figure; for the timeline also current view, busiest step or step N."""

    def __init__(self, parent, title: str, steps: list[int] | None = None, has_view: bool = False) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        form = QtWidgets.QFormLayout(self)
        self.source = None
        if steps is not None:
            self.source = QtWidgets.QComboBox()
            if has_view:
                self.source.addItem("current view", (CURRENT, None))
            self.source.addItem("busiest step", (BUSIEST, None))
            for n in steps:
                self.source.addItem(f"step {n}", (STEP, n))
            form.addRow("window", self.source)
        self.width = QtWidgets.QSpinBox()
        self.width.setRange(400, 8000)
        self.width.setSingleStep(100)
        self.width.setValue(int(config()["size"]["width_px"]))
        self.width.setSuffix(" px")
        form.addRow("width", self.width)
        self.hidpi = QtWidgets.QCheckBox("2× DPI (crisp on retina screens and in slides)")
        form.addRow("", self.hidpi)
        buttons = QtWidgets.QDialogButtonBox(QtWidgets.QDialogButtonBox.StandardButton.Ok
                                             | QtWidgets.QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def spec(self, view_range_ns: tuple[int, int] | None = None) -> FigureSpec:
        kind, step = self.source.currentData() if self.source is not None else (BUSIEST, None)
        t0, t1 = view_range_ns if (kind == CURRENT and view_range_ns) else (None, None)
        return FigureSpec(width_px=self.width.value(), scale=2.0 if self.hidpi.isChecked() else 1.0,
                          t0_ns=t0, t1_ns=t1, step=step if kind == STEP else None)
