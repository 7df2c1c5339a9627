"""PlotsBox: the memory / NVML plots under the timeline behind a one-line toggle ("▾ Memory · NVML"),
so that a user who only reads the timeline folds them to 20 px. The box asks for the plots' compact
height (MemoryPanel.wanted_height) and nothing when there is nothing to plot."""
from __future__ import annotations

from PySide6 import QtCore, QtWidgets

from gui.memory.panel import MemoryPanel

TOGGLE_PX = 20


class PlotsBox(QtWidgets.QWidget):
    sig_folded_changed = QtCore.Signal(bool)

    def __init__(self, panel: MemoryPanel, parent=None) -> None:
        super().__init__(parent)
        self.panel = panel
        panel.setMinimumHeight(1)  # an explicit minimum replaces the graphics view's size hint
        self.toggle = QtWidgets.QToolButton(autoRaise=True, checkable=True, checked=True)
        self.toggle.setToolButtonStyle(QtCore.Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.toggle.setToolTip("Show / hide the memory and NVML plots")
        self.toggle.setFixedHeight(TOGGLE_PX)
        self.toggle.toggled.connect(self._on_toggle_toggled)
        lay = QtWidgets.QVBoxLayout(self)
        # no minimum from the children: the splitter gives the box exactly its wanted height (a plot's
        # own minimum size hint kept ~70 px for one line of text)
        lay.setSizeConstraint(QtWidgets.QLayout.SizeConstraint.SetNoConstraint)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addWidget(self.toggle, 0, QtCore.Qt.AlignmentFlag.AlignLeft)
        lay.addWidget(panel, 1)
        self._update_text()

    def minimumSizeHint(self) -> QtCore.QSize:  # noqa: N802 (Qt API)
        return QtCore.QSize(100, TOGGLE_PX)

    @property
    def folded(self) -> bool:
        return not self.toggle.isChecked()

    def set_folded(self, folded: bool) -> None:
        self.toggle.setChecked(not folded)

    def wanted_height(self) -> int:
        """Splitter height: toggle line + plots (only the line when folded; 0 with nothing to plot)."""
        plots = self.panel.wanted_height()
        if plots == 0:
            return 0
        return TOGGLE_PX + (0 if self.folded else plots)

    def _update_text(self) -> None:
        what = "Memory" + (" · NVML" if self.panel.nvml_plot is not None and self.panel.nvml_header.isVisible()
                           else "")
        self.toggle.setText(("▸ " if self.folded else "▾ ") + what)

    def refresh(self) -> None:
        self._update_text()

    def _on_toggle_toggled(self, shown: bool) -> None:
        self.panel.setVisible(shown)
        self._update_text()
        self.sig_folded_changed.emit(not shown)
