"""Active memory over time per device (stepped), ProfilerStep bands, the peak marked; x = ns since the
first traced event (gui.timeline.axes.TimeAxis labels it)."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui

from core.snapshot.report import SnapshotReport
from core.units import fmt_bytes, fmt_ns
from gui.theme import Theme, style_plot
from gui.timeline.axes import TimeAxis

_PALETTE = ("#4a7fd4", "#2e9e4f", "#e8a33d", "#d65c8a", "#9b6bd3", "#6fa8a0")
_PEAK = "#d94040"
GIB, MIB = 1024 ** 3, 1024 ** 2
Y_HEADROOM = 1.15  # y range top = max(peak, reserved) x this: the reserved line's label sits above it


def memory_time_plot(widget: pg.PlotWidget, theme: Theme) -> pg.PlotItem:
    """The snapshot views' plot: bytes over time, x-only mouse, a light grid, plain (no SI) byte axis."""
    style_plot(widget, theme)
    p = widget.getPlotItem()
    p.setMenuEnabled(False)
    p.setMouseEnabled(x=True, y=False)
    p.showGrid(x=True, y=True, alpha=0.15)
    p.getAxis("left").enableAutoSIPrefix(False)
    return p


class SnapshotPlot(pg.PlotWidget):
    def __init__(self, theme: Theme, parent=None) -> None:
        super().__init__(parent, axisItems={"bottom": TimeAxis("bottom")})
        self.theme = theme
        p = memory_time_plot(self, theme)
        self.legend = p.addLegend(offset=(60, 25), labelTextColor=theme.text, brush=theme.label_bg)
        self.curves: dict[int, pg.PlotDataItem] = {}
        self.peak_items: list = []
        self.unit = (GIB, "GiB")
        self.t0_ns = 0
        self.t_end_ns = 1.0
        self.alloc_line = pg.InfiniteLine(angle=90, pen=pg.mkPen(theme.highlight, width=1.5))
        self.alloc_line.setToolTip("when the selected allocation was made")

    def set_report(self, report: SnapshotReport) -> None:
        p = self.getPlotItem()
        p.clear()
        self.curves.clear()
        self.peak_items = []
        snap = report.snapshot
        tops = [r.timeline.peak_bytes for r in report.devices.values()] + [snap.reserved_bytes(d) for d in snap.devices]
        self.unit = (GIB, "GiB") if max(tops, default=0) >= 2 * GIB else (MIB, "MiB")
        div, unit = self.unit
        p.setLabel("left", f"active memory ({unit})", color=self.theme.text.name())
        t0 = self.t0_ns = min((t.span_ns[0] for t in snap.traces), default=0)
        t_end = max((t.span_ns[1] for t in snap.traces), default=0) - t0
        self._step_bands(report, t0, t_end)
        for i, (d, dev) in enumerate(sorted(report.devices.items())):
            tl = dev.timeline
            if not len(tl):
                continue
            color = QtGui.QColor(_PALETTE[i % len(_PALETTE)])
            # stepMode="right": y[i] holds from x[i] to x[i+1]; start at the baseline, hold to the end
            x = np.concatenate(([0.0], (tl.time_ns - t0).astype(float), [float(t_end)]))
            y = np.concatenate(([tl.baseline_bytes], tl.active_bytes, [tl.active_bytes[-1]])) / div
            fill = QtGui.QColor(color)
            fill.setAlpha(50)
            area = p.plot(x, y, pen=None, stepMode="right", fillLevel=0, brush=fill)  # fill only: no edge to 0
            curve = p.plot(x, y, pen=pg.mkPen(color, width=1.5), stepMode="right", name=f"cuda:{d} active")
            for item in (area, curve):
                item.setDownsampling(auto=True, method="peak")
                item.setClipToView(True)
            self.curves[d] = curve
            reserved = snap.reserved_bytes(d) / div
            line = pg.InfiniteLine(pos=reserved, angle=0, pen=pg.mkPen(color, width=1, style=QtCore.Qt.PenStyle.DashLine),
                                   label=f"cuda:{d} reserved at snapshot {fmt_bytes(snap.reserved_bytes(d))}",
                                   labelOpts={"position": 0.02 + 0.3 * (i % 3), "color": self.theme.text,
                                              "anchors": [(0, 1), (0, 1)]})
            p.addItem(line)
            self._mark_peak(tl, t0, color, d)
        self.alloc_line.hide()
        p.addItem(self.alloc_line, ignoreBounds=True)
        # fixed ranges: auto-range counted the labels (text items sized in pixels) and stretched x ~30 %
        # past the last event; y leaves room above the reserved line for its label
        top = max(tops, default=0) / div
        self.t_end_ns = float(max(t_end, 1))
        self.fit_x()
        p.setYRange(0, max(top, 1e-9) * Y_HEADROOM, padding=0)

    def fit_x(self) -> None:
        """x from the first to the last traced event (the blocks plot under it is x-linked)."""
        self.getPlotItem().setXRange(0, self.t_end_ns, padding=0.01)

    def mark_allocation(self, alloc_time_ns: int) -> None:
        """A vertical line where the selected allocation was made."""
        self.alloc_line.setPos(float(alloc_time_ns - self.t0_ns))
        self.alloc_line.show()

    def _mark_peak(self, tl, t0: int, color: QtGui.QColor, device: int) -> None:
        if tl.peak_step < 0:
            return
        div, unit = self.unit
        x = float(tl.peak_time_ns - t0)
        y = tl.peak_bytes / div
        p = self.getPlotItem()
        vline = pg.InfiniteLine(pos=x, angle=90, pen=pg.mkPen(_PEAK, width=1, style=QtCore.Qt.PenStyle.DotLine))
        dot = pg.ScatterPlotItem([x], [y], size=10, brush=pg.mkBrush(_PEAK), pen=pg.mkPen(color))
        fill = QtGui.QColor(self.theme.background)
        fill.setAlpha(200)
        # left of the marker, centred on it: above it the label crossed the reserved line
        label = pg.TextItem(f"peak cuda:{device} {fmt_bytes(tl.peak_bytes)} at +{fmt_ns(x)}", color=_PEAK,
                            anchor=(1.04, 0.5), fill=fill)
        label.setPos(x, y)
        for item in (vline, dot, label):
            p.addItem(item, ignoreBounds=True)
            self.peak_items.append(item)

    def _step_bands(self, report: SnapshotReport, t0: int, t_end: int) -> None:
        """ProfilerStep bands inside the traced span (a step after the last event would only stretch x)."""
        p = self.getPlotItem()
        steps = [w for w in report.snapshot.steps() if w.t0_ns - t0 < t_end and w.t1_ns > t0]
        for i, w in enumerate(steps):
            brush = QtGui.QColor(self.theme.step_band)
            if i % 2:
                brush.setAlpha(max(brush.alpha() // 3, 10))
            band = pg.LinearRegionItem((w.t0_ns - t0, w.t1_ns - t0), movable=False, brush=brush,
                                       pen=pg.mkPen(None))
            band.setZValue(-20)
            band.setToolTip(f"{w.name} · {fmt_ns(w.t1_ns - w.t0_ns)}")
            p.addItem(band)
            lbl = pg.TextItem(w.name.replace("ProfilerStep#", "" if i else "step "), color=self.theme.text,
                              anchor=(0, 1))
            lbl.setPos(w.t0_ns - t0, 0)
            lbl.setZValue(-10)
            p.addItem(lbl)
