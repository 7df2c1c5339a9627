"""memory.png / gpu.png (stacked line panels sharing x) and breakdown.png (stacked bars per step)."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui

from core.export.figures import BarFigure, LineFigure
from core.export.style import config
from gui.report.canvas import Canvas, font, qcolor

_HEADER_PX = 70
_AXIS_PX = 80  # the left axis' width
_BAR_LABEL_PX = 72  # "123.45 ms" at the report's 13 px font, with a gap


def peak_anchor(x: float, x0: float, x1: float) -> tuple[float, float]:
    """TextItem anchor for a peak label at x in the view [x0, x1]: centred, but starting at the point near
    the left edge and ending at it near the right edge, so "peak 2.40 GiB" is never clipped to "ak 2.40 GiB"."""
    span = x1 - x0
    frac = (x - x0) / span if span > 0 else 0.5
    return (0.0 if frac < 0.2 else 1.0 if frac > 0.8 else 0.5, 1.2)


def label_stride(n: int, plot_px: float, label_px: float = _BAR_LABEL_PX) -> int:
    """Label every k-th of n evenly spaced bars so that labels of label_px never overlap (30 steps on a
    1600 px page: every 2nd)."""
    if n <= 0:
        return 1
    per_bar = max(plot_px, 1.0) / n
    return max(1, int(np.ceil(label_px / per_bar)))


def _legend(plot: pg.PlotItem, columns: int) -> pg.LegendItem:
    """One horizontal strip at the top left, inside the headroom the y range leaves above the data."""
    page = config()["page"]
    legend = plot.addLegend(offset=(10, 4), labelTextColor=page["text"], labelTextSize=f"{config()['size']['font_px']}px",
                            brush=pg.mkBrush(255, 255, 255, 230), pen=pg.mkPen(page["grid"]), horSpacing=18)
    legend.setColumnCount(max(columns, 1))
    return legend


def paint_lines(fig: LineFigure) -> bytes:
    size = config()["size"]
    page = config()["page"]
    per_panel = int(size["plot_height_px"]) if len(fig.panels) < 2 else int(size["plot_height_px"]) * 3 // 4
    height = _HEADER_PX + per_panel * max(len(fig.panels), 1)
    canvas = Canvas(fig.spec, fig.header, height)
    first = None
    for i, panel in enumerate(fig.panels):
        plot = canvas.layout.addPlot(row=1 + i, col=0)
        canvas.axis_style(plot)
        plot.hideButtons()
        plot.setMenuEnabled(False)
        plot.showGrid(x=True, y=True, alpha=0.25)
        plot.setLabel("left", panel.y_label)
        plot.getAxis("left").setWidth(80)
        if i == len(fig.panels) - 1:
            plot.setLabel("bottom", fig.x_label)
        if first is not None:
            plot.setXLink(first)
        first = first or plot
        _legend(plot, len(panel.series))
        for k, (x0, x1, _label) in enumerate(fig.shade):
            if k % 2 == 0 or len(fig.shade) == 1:
                region = pg.LinearRegionItem((x0, x1), movable=False, brush=QtGui.QColor(page["band"]),
                                             pen=pg.mkPen(None))
                region.setZValue(-100)
                plot.addItem(region)
        for s in panel.series:
            pen = pg.mkPen(qcolor(s.color), width=2, style=QtCore.Qt.PenStyle.DashLine if "reserved" in s.label
                           else QtCore.Qt.PenStyle.SolidLine)
            if s.step and len(s.x) > 1:
                plot.plot(s.x, s.y, stepMode="right", pen=pen, name=s.label)
            else:
                plot.plot(s.x, s.y, pen=pen, name=s.label, symbol="o" if len(s.x) < 60 else None, symbolSize=4,
                          symbolBrush=qcolor(s.color), symbolPen=pg.mkPen(None))
        xs = [s.x for s in panel.series if len(s.x)]
        x_lo = min(float(np.nanmin(x)) for x in xs) if xs else 0.0
        x_hi = max(float(np.nanmax(x)) for x in xs) if xs else 1.0
        for m in panel.markers:
            plot.plot([m.x], [m.y], pen=None, symbol="t", symbolSize=12, symbolBrush=qcolor("peak"))
            text = pg.TextItem(m.text, color=config()["series"]["peak"], anchor=peak_anchor(m.x, x_lo, x_hi))
            text.setFont(font(bold=True))
            text.setPos(m.x, m.y)
            plot.addItem(text)
        ys = [s.y for s in panel.series if len(s.y)]
        top = panel.y_max or (max(float(np.nanmax(y)) for y in ys) if ys else 1.0)
        plot.setYRange(0, max(top, 1e-9) * 1.22, padding=0)  # headroom for the legend strip and peak labels
        if panel.y_max == 100.0:  # percent: no ticks above 100 in the headroom
            plot.getAxis("left").setTicks([[(v, str(v)) for v in range(0, 101, 20)], []])
        plot.enableAutoRange(axis="x")
    if not fig.panels:
        canvas.layout.addLabel("no data", row=1, col=0)
    return canvas.to_png()


def paint_note(fig_header, spec, note: str) -> bytes:
    """A small page that says why a figure has no data (e.g. no memory events in the trace)."""
    canvas = Canvas(spec, fig_header, 160)
    canvas.layout.addLabel(f"<span style='font-size:16px; color:#5f6368'>{note}</span>", row=1, col=0)
    return canvas.to_png()


def paint_bars(fig: BarFigure) -> bytes:
    size = config()["size"]
    canvas = Canvas(fig.spec, fig.header, int(size["breakdown_height_px"]))
    plot = canvas.layout.addPlot(row=1, col=0)
    canvas.axis_style(plot)
    plot.hideButtons()
    plot.setMenuEnabled(False)
    plot.showGrid(y=True, alpha=0.25)
    plot.setLabel("left", fig.y_label)
    plot.getAxis("left").setWidth(80)
    _legend(plot, len(fig.categories))
    n = len(fig.bar_labels)
    x = np.arange(n, dtype=float)
    bottom = np.zeros(n)
    for j, (label, key) in enumerate(fig.categories):
        h = fig.values_ms[:, j]
        if not (h > 0).any():
            continue
        item = pg.BarGraphItem(x=x, width=0.62, y0=bottom.copy(), height=h, brush=qcolor(key),
                               pen=pg.mkPen("#ffffff", width=1), name=label)
        plot.addItem(item)
        bottom += h
    stride = label_stride(n, canvas.width_px - _AXIS_PX - 40)
    for i, total in enumerate(bottom.tolist()):
        if i % stride:
            continue
        t = pg.TextItem(f"{total:.2f} ms", color=config()["page"]["text"], anchor=(0.5, 1.0))
        t.setFont(font())
        t.setPos(i, total)
        plot.addItem(t)
    plot.getAxis("bottom").setTicks([[(i, lab) for i, lab in enumerate(fig.bar_labels) if i % stride == 0], []])
    plot.setXRange(-0.6, n - 0.4, padding=0)
    plot.setYRange(0, float(bottom.max()) * 1.35 if n else 1.0, padding=0)
    return canvas.to_png()
