"""RankStrip: the summary lane of a run of many ranks (issue 33) above the timeline.

One column per rank, one cell per step: the step's duration as a heat colour (the run's fastest step light,
its slowest dark red), so a slow rank is a dark column and a slow step a dark row. The straggler (from the
Issues analysis: `set_straggler`; before it, the rank with the longest mean step) is marked with a triangle
and its number. Hover: the rank's mean / slowest step; click: `sig_rank_clicked(model index)` (the view
expands that rank on the timeline and draws its memory). The data is a few numbers per rank (the models'
ProfilerStep tables), computed once in `set_models`; a paint fills at most one rect per pixel column.
"""
from __future__ import annotations

import numpy as np
from PySide6 import QtCore, QtGui, QtWidgets

from core.units import fmt_ns

MANY_RANKS = 16  # from this many ranks the timeline opens with every rank folded under this strip
MAX_STEP_ROWS = 12
CELL_PX = 6


class RankStrip(QtWidgets.QWidget):
    sig_rank_clicked = QtCore.Signal(int)

    def __init__(self, theme, parent=None) -> None:
        super().__init__(parent)
        self.theme = theme
        self.setMouseTracking(True)
        self.ranks: list[int] = []
        self.grid = np.zeros((0, 0))  # [step, rank] duration ns (NaN: no such step)
        self.mean = np.zeros(0)
        self.straggler = -1  # model index
        self.selected = -1
        self.why = ""
        self.setToolTip("")
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Expanding, QtWidgets.QSizePolicy.Policy.Fixed)

    def set_models(self, models) -> None:
        n = len(models)
        durs = [np.asarray(m.steps.dur_ns, np.float64) if m.steps is not None else np.zeros(0) for m in models]
        depth = min(MAX_STEP_ROWS, max((len(d) for d in durs), default=0))
        grid = np.full((max(depth, 1), n), np.nan)
        for j, d in enumerate(durs):
            if len(d) and depth:
                grid[:min(depth, len(d)), j] = d[:depth]
        self.ranks = [int(m.rank) for m in models]
        self.grid = grid
        with np.errstate(invalid="ignore"):
            self.mean = np.array([float(np.mean(d)) if len(d) else np.nan for d in durs])
        ok = np.isfinite(self.mean)
        self.straggler = int(np.nanargmax(self.mean)) if ok.any() else -1
        self.why = "longest mean step"
        self.setFixedHeight(self._label_px() + grid.shape[0] * CELL_PX + 6)
        self.update()

    def set_straggler(self, model_index: int, why: str = "the straggler at the collectives") -> None:
        self.straggler = int(model_index)
        self.why = why
        self.update()

    def _label_px(self) -> int:
        return self.fontMetrics().height() + 2

    def _columns(self) -> tuple[float, float]:
        """(x of the first column, width of a column) in widget pixels."""
        x0 = float(self.theme.label_px)
        n = max(1, len(self.ranks))
        return x0, max(1.0, (self.width() - x0 - 4) / n)

    def rank_at(self, x: float) -> int:
        x0, w = self._columns()
        j = int((x - x0) // w)
        return j if 0 <= j < len(self.ranks) and x >= x0 else -1

    def headline(self) -> str:
        n = len(self.ranks)
        if not n:
            return ""
        text = f"{n} ranks"
        finite = self.mean[np.isfinite(self.mean)]
        if len(finite):
            text += f" · mean step {fmt_ns(_median(finite))} (median rank)"
        if self.straggler >= 0 and np.isfinite(self.mean[self.straggler]):
            text += f" · ▲ rank {self.ranks[self.straggler]}: {self.why}"
        return text + " · click a rank to expand it"

    def paintEvent(self, _ev) -> None:  # noqa: N802 (Qt API)
        p = QtGui.QPainter(self)
        t = self.theme
        p.fillRect(self.rect(), t.label_bg)
        p.setPen(t.text)
        lab = self._label_px()
        p.drawText(QtCore.QRectF(4, 0, self.width() - 8, lab), QtCore.Qt.AlignmentFlag.AlignVCenter,
                   self.headline())
        p.drawText(QtCore.QRectF(4, lab, t.label_px - 8, self.height() - lab),
                   QtCore.Qt.AlignmentFlag.AlignVCenter, "steps ↓ ranks →")
        x0, w = self._columns()
        grid = self.grid
        finite = grid[np.isfinite(grid)]
        if not len(finite):
            p.end()
            return
        lo, hi = float(finite.min()), float(finite.max())
        span = hi - lo if hi > lo else 1.0
        base = QtGui.QColor(t.background)
        hot = QtGui.QColor("#d03a2f")
        n_steps, n = grid.shape
        step_w = max(1.0, w)
        for j in range(n):
            x = x0 + j * w
            if j and int(x) == int(x - w) and step_w < 1.5:  # several ranks per pixel: the first one draws
                continue
            for i in range(n_steps):
                v = grid[i, j]
                if not np.isfinite(v):
                    continue
                f = 0.15 + 0.85 * (v - lo) / span
                c = QtGui.QColor.fromRgbF(base.redF() + (hot.redF() - base.redF()) * f,
                                          base.greenF() + (hot.greenF() - base.greenF()) * f,
                                          base.blueF() + (hot.blueF() - base.blueF()) * f)
                p.fillRect(QtCore.QRectF(x, lab + 2 + i * CELL_PX, max(1.0, w - (1 if w > 3 else 0)), CELL_PX - 1), c)
        for j, color in ((self.selected, t.selection), (self.straggler, hot)):
            if j < 0:
                continue
            x = x0 + j * w
            pen = QtGui.QPen(color, 2)
            p.setPen(pen)
            p.drawRect(QtCore.QRectF(x - 1, lab + 1, max(2.0, w + 1), n_steps * CELL_PX + 2))
        if self.straggler >= 0:
            x = x0 + (self.straggler + 0.5) * w
            tri = QtGui.QPolygonF([QtCore.QPointF(x - 5, lab - 1), QtCore.QPointF(x + 5, lab - 1),
                                   QtCore.QPointF(x, lab + 5)])
            p.setPen(QtCore.Qt.PenStyle.NoPen)
            p.setBrush(hot)
            p.drawPolygon(tri)
        p.end()

    def mouseMoveEvent(self, ev) -> None:  # noqa: N802 (Qt API)
        j = self.rank_at(ev.position().x())
        if j < 0:
            self.setToolTip("")
            return
        col = self.grid[:, j]
        col = col[np.isfinite(col)]
        tip = f"rank {self.ranks[j]}"
        if len(col):
            tip += f": mean step {fmt_ns(float(self.mean[j]))}, slowest {fmt_ns(float(col.max()))}"
        if j == self.straggler:
            tip += f" · ▲ {self.why}"
        self.setToolTip(tip + " (click to expand)")

    def mousePressEvent(self, ev) -> None:  # noqa: N802 (Qt API)
        j = self.rank_at(ev.position().x())
        if j >= 0 and ev.button() == QtCore.Qt.MouseButton.LeftButton:
            self.selected = j
            self.update()
            self.sig_rank_clicked.emit(j)


def _median(x: np.ndarray) -> float:
    """np.median's value without np.median: its NaN check imports numpy.ma (40-75 ms, on the UI thread in the
    strip's first paint)."""
    s = np.sort(np.asarray(x, np.float64))
    mid = len(s) // 2
    return float(s[mid]) if len(s) % 2 else float((s[mid - 1] + s[mid]) / 2)
