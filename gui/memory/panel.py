"""Memory and counter plots under the timeline, x-linked to it: allocated / reserved per device from
`[memory]` events with the peak marked against the device's total memory, and NVML samples
(utilisation %, memory used) when the trace came with them."""
from __future__ import annotations

from dataclasses import replace

import pyqtgraph as pg
from PySide6 import QtCore, QtGui

from core.analysis.memory import counter_series, memory_series
from core.trace.model import TraceSet
from core.units import fmt_bytes
from gui.theme import Theme
from gui.timeline.axes import TimeAxis

GIB = 1024 ** 3
_PALETTE = ("#4a7fd4", "#2e9e4f", "#e8a33d", "#d65c8a", "#9b6bd3", "#6fa8a0", "#d94040", "#8d939a")
_NVML_PLOTTED = ("gpu_util", "mem_util")  # % series share one plot; others show in the legend only


class MemoryPanel(pg.GraphicsLayoutWidget):
    def __init__(self, theme: Theme, parent=None) -> None:
        super().__init__(parent)
        self.theme = theme
        self.setBackground(theme.background)
        self.ci.layout.setContentsMargins(0, 0, 0, 0)
        self.mem_plot = self._new_plot("memory", "GiB")
        self.mem_unit = (GIB, "GiB")
        self.nvml_plot: pg.PlotItem | None = None
        self.peaks: list[tuple[str, int, int]] = []  # (device label, peak bytes, ts_ns)
        fill = QtGui.QColor(self.theme.background)
        fill.setAlpha(200)
        self.summary = pg.TextItem("", color=self.theme.text, anchor=(0, 0), fill=fill)
        self.summary.setParentItem(self.mem_plot.getViewBox())  # pinned to the view, not to data
        self.summary.setPos(4, 0)
        self.curves: dict[str, pg.PlotDataItem] = {}

    def _new_plot(self, title: str, units: str) -> pg.PlotItem:
        plot = self.addPlot(row=len(self.ci.items), col=0, axisItems={"bottom": TimeAxis("bottom")})
        plot.setMenuEnabled(False)
        plot.setMouseEnabled(x=True, y=False)
        plot.showGrid(x=True, y=True, alpha=0.15)
        left = plot.getAxis("left")
        left.setWidth(self.theme.label_px)
        left.enableAutoSIPrefix(False)
        plot.hideAxis("bottom")  # the timeline's time axis above serves (x-linked)
        for ax in ("left", "bottom"):
            plot.getAxis(ax).setTextPen(self.theme.text)
            plot.getAxis(ax).setPen(self.theme.grid)
        legend = plot.addLegend(offset=(-10, -2), labelTextColor=self.theme.text, brush=self.theme.label_bg,
                                colCount=2, verSpacing=-6)
        legend.setZValue(20)
        return plot

    def link_x(self, view_box: pg.ViewBox) -> None:
        self.mem_plot.setXLink(view_box)
        if self.nvml_plot is not None:
            self.nvml_plot.setXLink(view_box)

    def set_trace(self, ts: TraceSet, model_index: int | None = 0) -> None:
        """Memory of model `model_index`, or of every rank (None; curves labelled by rank)."""
        self.mem_plot.clear()
        self.curves.clear()
        self.peaks = []
        models = ts.models if model_index is None else [ts.models[model_index]]
        multi = len(models) > 1
        series = [(m, replace(s, label=f"rank {m.rank} {s.label}") if multi and m.rank is not None else s)
                  for m in models for s in memory_series(m)]
        top = max((s.peak_reserved_bytes for _, s in series), default=0)
        self.mem_unit = (GIB, "GiB") if top >= 2 * GIB else (1024 ** 2, "MiB")
        for i, (m, s) in enumerate(series):
            color = QtGui.QColor(_PALETTE[i % len(_PALETTE)])
            x = s.ts_ns.astype(float)
            for what, y, style in (("allocated", s.allocated_bytes, QtCore.Qt.PenStyle.SolidLine),
                                   ("reserved", s.reserved_bytes, QtCore.Qt.PenStyle.DashLine)):
                curve = self.mem_plot.plot(x, y / self.mem_unit[0], pen=pg.mkPen(color, width=1.5, style=style),
                                           name=f"{s.label} {what} ({self.mem_unit[1]})", stepMode=None)
                curve.setDownsampling(auto=True, method="peak")
                curve.setClipToView(True)
                self.curves[f"{s.label} {what}"] = curve
            self._mark_peak(s, color, m.meta.device_properties)
        self.summary.setText("   ".join(self._peak_text(s, m.meta.device_properties) for m, s in series))
        series = [s for _, s in series]
        self.mem_plot.setVisible(bool(series))
        self.setToolTip("" if series else "no [memory] events: record with profile_memory=True to see memory")
        self._set_nvml(ts)

    def _peak_text(self, s, props) -> str:
        name = next((p.get("name") for p in props if p.get("id") == s.device), None)
        text = f"{s.label} peak {fmt_bytes(s.peak_allocated_bytes)} allocated, {fmt_bytes(s.peak_reserved_bytes)} reserved"
        if s.total_bytes:
            text += f" = {s.peak_pct_of_total:.1f} % of {fmt_bytes(s.total_bytes)}" + (f" ({name})" if name else "")
        return text

    def _mark_peak(self, s, color, props) -> None:
        y = s.peak_allocated_bytes / self.mem_unit[0]
        dot = pg.ScatterPlotItem([float(s.peak_ts_ns)], [y], size=9, brush=color, pen=pg.mkPen(self.theme.text))
        self.mem_plot.addItem(dot)
        label = pg.TextItem(f"peak {fmt_bytes(s.peak_allocated_bytes)}", color=self.theme.text, anchor=(1.05, 0.3))
        label.setPos(float(s.peak_ts_ns), y)
        self.mem_plot.addItem(label)
        self.peaks.append((s.label, s.peak_allocated_bytes, s.peak_ts_ns))

    def _set_nvml(self, ts: TraceSet) -> None:
        series = counter_series(ts.nvml, ts.nvml_strings) if ts.nvml is not None else []
        shown = [s for s in series if s.name.split("/")[-1] in _NVML_PLOTTED]
        if not shown:
            if self.nvml_plot is not None:
                self.nvml_plot.hide()
            return
        if self.nvml_plot is None:
            self.nvml_plot = self._new_plot("NVML", "%")
            self.nvml_plot.setXLink(self.mem_plot)
        self.nvml_plot.clear()
        self.nvml_plot.show()
        for i, s in enumerate(shown):
            c = pg.mkPen(_PALETTE[(i + 2) % len(_PALETTE)], width=1.5)
            self.curves[s.name] = self.nvml_plot.plot(s.ts_ns.astype(float), s.value, pen=c,
                                                          name=f"NVML {s.name} (%)")
        self.nvml_plot.setYRange(0, 100, padding=0.05)
