"""Per-step breakdown as stacked bars (one BarGraphItem per category: batched, not one item per bar).

The legend is a line of text above the plot (a swatch, the category and its share of all steps), never
drawn on the bars; colours come from resources/theme.toml per category (gui.theme.category_color)."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from core.analysis.breakdown import PARTS, StepBreakdown
from core.compat import tomllib
from gui.theme import Theme, category_color, load_theme, style_plot

STYLE_PATH = Path(__file__).resolve().parents[2] / "resources" / "issues.toml"


@lru_cache(maxsize=1)
def style() -> dict:
    with open(STYLE_PATH, "rb") as fh:
        return tomllib.load(fh)


class BreakdownView(QtWidgets.QWidget):
    """Stacked bars of where each step's time goes (% of the step), with a legend and a totals line."""

    sig_step_clicked = QtCore.Signal(object, object)  # (t0_ns, t1_ns) of the clicked step

    def __init__(self, parent=None, theme: Theme | None = None) -> None:
        super().__init__(parent)
        self.theme = theme or load_theme()
        self.plot = pg.PlotWidget()
        style_plot(self.plot, self.theme)
        self.plot.setLabel("left", "% of step", color=self.theme.text.name())
        self.plot.setLabel("bottom", "step", color=self.theme.text.name())
        self.plot.setYRange(0, 100)
        self.plot.setMouseEnabled(x=True, y=False)
        self.plot.setMenuEnabled(False)
        self.plot.hideButtons()
        self.totals = QtWidgets.QLabel()  # the legend: swatch + category + share of all steps
        self.totals.setWordWrap(True)
        self.totals.setTextFormat(QtCore.Qt.TextFormat.RichText)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.totals)
        lay.addWidget(self.plot, 1)
        self.bars: dict[str, pg.BarGraphItem] = {}
        self._b: StepBreakdown | None = None
        self.plot.scene().sigMouseClicked.connect(self._on_scene_clicked)

    def set_breakdown(self, b: StepBreakdown | None) -> None:
        self._b = b
        for item in self.bars.values():
            self.plot.removeItem(item)
        self.bars.clear()
        if b is None or not len(b):
            self.totals.setText("")
            return
        labels = style()["labels"]
        x = np.arange(len(b), dtype=float)
        dur = np.maximum(b.dur_ns.astype(float), 1.0)
        bottom = np.zeros(len(b))
        parts = PARTS if b.has_gpu else ()
        for i, p in enumerate(parts):
            h = 100.0 * getattr(b, p) / dur
            if not h.any():
                continue
            item = pg.BarGraphItem(x=x, height=h, y0=bottom.copy(), width=0.8, brush=self.color(p, i), pen=None)
            self.plot.addItem(item)
            self.bars[p] = item
            bottom += h
        if not b.has_gpu:
            h = 100.0 * b.dataloader_cpu_ns / dur
            item = pg.BarGraphItem(x=x, height=h, width=0.8, brush=self.color("dataloader_ns"), pen=None)
            self.plot.addItem(item)
            self.bars["dataloader_cpu_ns"] = item
        ticks = [(float(i), str(int(n))) for i, n in enumerate(b.number)]
        self.plot.getAxis("bottom").setTicks([ticks[:: max(1, len(ticks) // 20)]])
        self.plot.setXRange(-0.6, len(b) - 0.4, padding=0)
        tot = b.totals()
        total = max(tot["dur_ns"], 1)
        if b.has_gpu:  # top of the stack first, as the bars read from the top
            shown = [p for p in PARTS if tot[p]][::-1]
            items = [f"{labels.get(p, _label(p))} {100.0 * tot[p] / total:.1f} %".replace(" ", "&nbsp;")
                     for p in shown]  # an item never breaks across lines
            text = "&nbsp;&nbsp; ".join(f"{_swatch(self.color(p, PARTS.index(p)))}&nbsp;{item}"
                                        for p, item in zip(shown, items))
        else:
            text = (f"{_swatch(self.color('dataloader_ns'))}&nbsp;CPU-only trace: DataLoader "
                    f"{100.0 * b.dataloader_cpu_ns.sum() / total:.1f} % of step time; no GPU breakdown")
        self.totals.setText(text)

    def color(self, category: str, index: int = 0):
        return category_color(self.theme, category, index)

    def breakdown(self) -> StepBreakdown | None:  # noqa: D102
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


def _swatch(color) -> str:
    return f"<span style='color:{color.name()}; font-size:13pt'>■</span>"


def _label(part: str) -> str:
    return part.removesuffix("_ns").replace("_", " ")
