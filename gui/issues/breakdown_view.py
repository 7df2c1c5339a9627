"""Per-step breakdown as stacked bars (one BarGraphItem per category: batched, not one item per bar)."""
from __future__ import annotations

import tomllib
from functools import lru_cache
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from core.analysis.breakdown import PARTS, StepBreakdown

STYLE_PATH = Path(__file__).resolve().parents[2] / "resources" / "issues.toml"


@lru_cache(maxsize=1)
def style() -> dict:
    with open(STYLE_PATH, "rb") as fh:
        return tomllib.load(fh)


class BreakdownView(QtWidgets.QWidget):
    """Stacked bars of where each step's time goes (% of the step), with a legend and a totals line."""

    sig_step_clicked = QtCore.Signal(object, object)  # (t0_ns, t1_ns) of the clicked step

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.plot = pg.PlotWidget()
        self.plot.setLabel("left", "% of step")
        self.plot.setLabel("bottom", "step")
        self.plot.setYRange(0, 100)
        self.plot.setMouseEnabled(x=True, y=False)
        self.legend = self.plot.addLegend(offset=(-10, 10))
        self.totals = QtWidgets.QLabel()
        self.totals.setWordWrap(True)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.plot, 1)
        lay.addWidget(self.totals)
        self.bars: dict[str, pg.BarGraphItem] = {}
        self._b: StepBreakdown | None = None
        self.plot.scene().sigMouseClicked.connect(self._on_scene_clicked)

    def set_breakdown(self, b: StepBreakdown | None) -> None:
        self._b = b
        for item in self.bars.values():
            self.plot.removeItem(item)
        self.bars.clear()
        self.legend.clear()
        if b is None or not len(b):
            self.totals.setText("")
            return
        colors, labels = style()["breakdown"], style()["labels"]
        x = np.arange(len(b), dtype=float)
        dur = np.maximum(b.dur_ns.astype(float), 1.0)
        bottom = np.zeros(len(b))
        parts = PARTS if b.has_gpu else ()
        for p in parts:
            h = 100.0 * getattr(b, p) / dur
            if not h.any():
                continue
            item = pg.BarGraphItem(x=x, height=h, y0=bottom.copy(), width=0.8, brush=colors[p], pen=None)
            self.plot.addItem(item)
            self.legend.addItem(item, labels[p])
            self.bars[p] = item
            bottom += h
        if not b.has_gpu:
            h = 100.0 * b.dataloader_cpu_ns / dur
            item = pg.BarGraphItem(x=x, height=h, width=0.8, brush=colors["dataloader_ns"], pen=None)
            self.plot.addItem(item)
            self.legend.addItem(item, "DataLoader (CPU)")
            self.bars["dataloader_cpu_ns"] = item
        ticks = [(float(i), str(int(n))) for i, n in enumerate(b.number)]
        self.plot.getAxis("bottom").setTicks([ticks[:: max(1, len(ticks) // 20)]])
        self.plot.setXRange(-0.6, len(b) - 0.4, padding=0)
        tot = b.totals()
        total = max(tot["dur_ns"], 1)
        if b.has_gpu:
            text = " · ".join(f"{labels[p]} {100.0 * tot[p] / total:.1f} %" for p in PARTS if tot[p])
        else:
            text = (f"CPU-only trace: DataLoader {100.0 * b.dataloader_cpu_ns.sum() / total:.1f} % of step time; "
                    "no GPU breakdown")
        self.totals.setText(text)

    def breakdown(self) -> StepBreakdown | None:
        return self._b

    def _on_scene_clicked(self, ev) -> None:
        b = self._b
        if b is None or not len(b):
            return
        pos = self.plot.getPlotItem().vb.mapSceneToView(ev.scenePos())
        i = int(round(pos.x()))
        if 0 <= i < len(b):
            t0 = int(b.ts_ns[i])
            self.sig_step_clicked.emit(t0, t0 + int(b.dur_ns[i]))
