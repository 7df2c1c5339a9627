"""timeline.png: rows of batched bars (one BarGraphItem per colour), track labels, step edges, legend."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui

from core.export.figures import KIND_LABELS, TimelineFigure
from core.export.style import config, timeline_config
from gui.report.canvas import Canvas, font, qcolor

_HEADER_PX = 64
_AXIS_PX = 48
_LEGEND_PX = 40


def paint(fig: TimelineFigure) -> bytes:
    cfg = timeline_config()
    page = config()["page"]
    n_rows = max(len(fig.row_labels), 1)
    height = _HEADER_PX + n_rows * int(cfg["row_px"]) + _AXIS_PX + _LEGEND_PX
    canvas = Canvas(fig.spec, fig.header, height)
    plot = canvas.layout.addPlot(row=1, col=0)
    canvas.axis_style(plot)
    plot.hideButtons()
    plot.setMenuEnabled(False)
    plot.setMouseEnabled(False, False)
    vb = plot.getViewBox()
    vb.invertY(True)
    vb.setDefaultPadding(0.0)
    plot.setXRange(fig.t0_ms, fig.t1_ms, padding=0)
    plot.setYRange(0, n_rows, padding=0)
    plot.setLabel("bottom", "time since trace start (ms)")
    label_px = int(cfg["label_px"])
    left = plot.getAxis("left")
    left.setWidth(label_px)
    metrics = QtGui.QFontMetrics(font())
    ticks = [(i + 0.5, metrics.elidedText(lab, QtCore.Qt.TextElideMode.ElideMiddle, label_px - 16))
             for i, lab in enumerate(fig.row_labels) if lab]
    left.setTicks([ticks, []])
    left.setStyle(tickLength=0)

    # alternate track groups get a faint band, so multi-row threads read as one block
    bounds = list(fig.group_starts) + [n_rows]
    band = [(a, b) for k, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])) if k % 2 == 1]
    if band:
        y0 = np.array([a for a, _ in band], float)
        y1 = np.array([b for _, b in band], float)
        plot.addItem(pg.BarGraphItem(x0=np.full(len(band), fig.t0_ms), x1=np.full(len(band), fig.t1_ms), y0=y0, y1=y1,
                                     brush=QtGui.QColor(page["band"]), pen=pg.mkPen(None)))
    for bars in fig.bars:
        if not len(bars.x0_ms):
            continue
        width = np.maximum(bars.x1_ms - bars.x0_ms, 0)
        item = pg.BarGraphItem(x0=bars.x0_ms, width=width, y0=bars.row + 0.12, height=np.full(len(width), 0.76),
                               brush=qcolor(bars.color), pen=pg.mkPen(None))
        plot.addItem(item)
    for x in fig.step_edges_ms:
        plot.addItem(pg.InfiniteLine(pos=x, angle=90, pen=pg.mkPen(page["text"], width=1, style=QtCore.Qt.PenStyle.DashLine)))
    for y in fig.group_starts[1:]:
        plot.addItem(pg.InfiniteLine(pos=y, angle=0, pen=pg.mkPen(page["separator"], width=1)))
    _names(plot, fig, canvas.width_px - label_px - 40)
    canvas.layout.nextRow()
    canvas.layout.addItem(_legend(fig.legend), row=2, col=0)
    return canvas.to_png()


def _names(plot: pg.PlotItem, fig: TimelineFigure, plot_px: int) -> None:
    ms_per_px = max((fig.t1_ms - fig.t0_ms) / max(plot_px, 1), 1e-12)
    f = font(11)
    metrics = QtGui.QFontMetrics(f)
    for x0, x1, row, name in fig.texts:
        avail = int((min(x1, fig.t1_ms) - max(x0, fig.t0_ms)) / ms_per_px) - 6
        text = metrics.elidedText(name, QtCore.Qt.TextElideMode.ElideRight, avail)
        if len(text) < 3:
            continue
        item = pg.TextItem(text, color="#111111", anchor=(0, 0.5))
        item.setFont(f)
        item.setPos(max(x0, fig.t0_ms) + 2 * ms_per_px, row + 0.5)
        plot.addItem(item)


def _legend(kinds: tuple[str, ...]) -> pg.LegendItem:
    legend = pg.LegendItem(offset=None, horSpacing=24, labelTextColor=config()["page"]["text"],
                           labelTextSize=f"{config()['size']['font_px']}px")
    legend.setColumnCount(max(len(kinds), 1))
    for k in kinds:
        sample = pg.ScatterPlotItem(symbol="s", size=12, brush=qcolor(k), pen=pg.mkPen(None))
        legend.addItem(sample, KIND_LABELS.get(k, k.lower()))
    return legend
