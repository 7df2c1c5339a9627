"""Memory and counter plots under the timeline, x-linked to it: allocated / reserved per device from
`[memory]` events with the peak marked against the device's total memory, and NVML samples
(utilisation %) when the trace came with them.

Text never sits on the curves: each plot has a one-line header above its view box (legend swatches
and the peak summary), the y range has headroom above the highest curve for the peak label, and the
y axis names its unit. The view boxes share the timeline's left (label column) and right (scroll bar)
edges, so one time has one x in both."""
from __future__ import annotations

import html
import re
from dataclasses import replace

import pyqtgraph as pg
from PySide6 import QtCore, QtGui

from core.analysis.memory import counter_series, memory_series
from core.trace.model import TraceSet
from core.units import fmt_bytes
from gui.theme import Theme
from gui.timeline.axes import TimeAxis
from gui.timeline.rows import model_short

GIB = 1024 ** 3
_PALETTE = ("#4a7fd4", "#2e9e4f", "#e8a33d", "#d65c8a", "#9b6bd3", "#6fa8a0", "#d94040", "#8d939a")
_NVML_PLOTTED = ("gpu_util", "mem_util")  # % series share one plot; others show in the legend only
MEM_PLOT_PX = 96  # memory plot: 16 px header + ~80 px of curves (compact: the timeline gets the height)
NVML_PLOT_PX = 64  # NVML % plot: 16 px header + ~48 px (0-100 % needs no finer resolution)
NOTE_PX = 18  # a header line alone (NVML with nothing worth a plot)
Y_HEADROOM = 1.35  # y range top = highest curve x this: room for half the peak label (beside the peak) in
                   # the compact ~55 px view box: 55 px / 1.35 leaves 14 px above the peak for 11 px of text
SOLID, DASHED = "━", "┅"  # legend swatches for allocated (solid) and reserved (dashed) lines


class HeaderLabel(pg.LabelItem):
    """One line of rich text above a plot (legend + summary)."""

    def __init__(self, theme: Theme) -> None:
        super().__init__("", color=theme.text, size="8pt", justify="left")
        self.setSizePolicy(pg.QtWidgets.QSizePolicy.Policy.Expanding, pg.QtWidgets.QSizePolicy.Policy.Fixed)

    def toPlainText(self) -> str:
        return html.unescape(re.sub(r"<[^>]+>", "", self.text or ""))


def swatch(color: str, glyph: str) -> str:
    return f"<span style='color:{color}; font-size:12pt; font-weight:bold'>{glyph}</span>"


class MemoryPanel(pg.GraphicsLayoutWidget):
    def __init__(self, theme: Theme, parent=None) -> None:
        super().__init__(parent)
        self.theme = theme
        self.setBackground(theme.background)
        self.ci.layout.setContentsMargins(0, 0, 0, 0)
        self.ci.layout.setVerticalSpacing(0)
        self.summary = HeaderLabel(theme)  # memory plot's header: legend + peak per device
        # made by the first set_trace (a PlotItem is ~15 ms: not in the event-loop turn that opens a trace)
        self.mem_plot: pg.PlotItem | None = None
        self.mem_unit = (GIB, "GiB")
        self.nvml_header: HeaderLabel | None = None
        self.nvml_plot: pg.PlotItem | None = None
        self.mem_note = ""  # why there is no memory plot ("" = plotted)
        self.nvml_note = ""  # why NVML is a line of text instead of a plot ("" = plotted or no NVML)
        self.peaks: list[tuple[str, int, int]] = []  # (device label, peak bytes, ts_ns)
        self.curves: dict[str, pg.PlotDataItem] = {}
        self._linked: pg.ViewBox | None = None
        self._planned_px: int | None = None  # plan(): the height set_trace will want

    def _new_plot(self, header: HeaderLabel, title: str) -> pg.PlotItem:
        row = self.ci.layout.rowCount()
        self.ci.addItem(header, row=row, col=0)
        plot = self.addPlot(row=row + 1, col=0, axisItems={"bottom": TimeAxis("bottom")})
        plot.setMenuEnabled(False)
        plot.setMouseEnabled(x=True, y=False)
        plot.showGrid(x=True, y=True, alpha=0.15)
        plot.layout.setContentsMargins(0, 0, 0, 0)
        left = plot.getAxis("left")
        left.setWidth(self.theme.label_px)
        left.enableAutoSIPrefix(False)
        plot.hideAxis("bottom")  # the timeline's time axis above serves (x-linked)
        for ax in ("left", "bottom"):
            plot.getAxis(ax).setTextPen(self.theme.text)
            plot.getAxis(ax).setPen(self.theme.grid)
        left.setLabel(title, color=self.theme.text.name())
        left.setStyle(tickTextOffset=4)
        header.setToolTip(f"{title}: legend and summary")
        if self._linked is not None:  # made after link_x: it follows the timeline too
            self._link(plot, self._linked)
        return plot

    def plots(self) -> list[pg.PlotItem]:
        return [p for p in (self.mem_plot, self.nvml_plot) if p is not None]

    def shown_plots(self) -> list[pg.PlotItem]:
        """Plots with curves (hidden ones are left out)."""
        return [p for p in self.plots() if p.isVisible() and p.listDataItems()]

    def plan(self, ts: TraceSet, model_index: int | None = 0) -> None:
        """The height set_trace(ts, model_index) will want, known before it runs (the series are
        memoised): a view lays out its first frame with it and fills the plots a turn later, without
        the timeline jumping when they arrive."""
        mem = MEM_PLOT_PX if _series(ts, model_index) else NOTE_PX
        shown, _inside, note = _nvml_plan(ts)
        self._planned_px = mem + (NOTE_PX if note else NVML_PLOT_PX if shown else 0)

    def wanted_height(self) -> int:
        """Pixels the shown plots need (0 = nothing to show)."""
        if self._planned_px is not None:  # planned, not drawn yet
            return self._planned_px
        px = sum(MEM_PLOT_PX if p is self.mem_plot else NVML_PLOT_PX for p in self.shown_plots())
        return px + NOTE_PX * (bool(self.nvml_note) + bool(self.mem_note))

    def set_right_margin(self, px: int) -> None:
        """Right margin matching the timeline's scroll bar, so the view boxes end where the timeline's does."""
        self.ci.layout.setContentsMargins(0, 0, px, 0)

    def link_x(self, view_box: pg.ViewBox) -> None:
        """The plots' x follows `view_box` (the timeline's): their own x auto-range is off, or new curves
        would pull the timeline out to the whole trace through the link."""
        self._linked = view_box
        for plot in self.plots():
            self._link(plot, view_box)
        self.relink_x(view_box)

    @staticmethod
    def _link(plot: pg.PlotItem, view_box: pg.ViewBox) -> None:
        plot.enableAutoRange(x=False)
        plot.setXLink(view_box)

    def relink_x(self, view_box: pg.ViewBox | None = None) -> None:
        """Line the plots up with the timeline again (after a resize of either, or new curves)."""
        vb = view_box or self._linked
        if vb is not None:
            for plot in self.plots():
                plot.getViewBox().linkedViewChanged(vb, pg.ViewBox.XAxis)

    def prepare_plot(self) -> None:
        """The memory plot's empty PlotItem, fitted to the panel (set_trace then only adds curves)."""
        if self.mem_plot is None:
            self.mem_plot = self._new_plot(self.summary, "memory")
            self._refit()

    def set_trace(self, ts: TraceSet, model_index: int | None = 0, nvml: bool = True) -> None:
        """Memory of model `model_index`, or of every rank (None; curves labelled by rank); the NVML
        plot too, unless `nvml` is False (then `set_nvml` follows: a view opening a trace draws the two
        plots in two event-loop turns, ~30 ms each)."""
        if self.mem_plot is None:
            self.mem_plot = self._new_plot(self.summary, "memory")
        self.mem_plot.clear()
        self.curves.clear()
        self.peaks = []
        if nvml:
            self._planned_px = None
        series = _series(ts, model_index)
        top = max((max(s.peak_reserved_bytes, s.peak_allocated_bytes) for _, s in series), default=0)
        self.mem_unit = (GIB, "GiB") if top >= 2 * GIB else (1024 ** 2, "MiB")
        parts, full = [], []
        for i, (m, s) in enumerate(series):
            color = QtGui.QColor(_PALETTE[i % len(_PALETTE)])
            x = s.ts_ns.astype(float)
            for what, y, style in (("allocated", s.allocated_bytes, QtCore.Qt.PenStyle.SolidLine),
                                   ("reserved", s.reserved_bytes, QtCore.Qt.PenStyle.DashLine)):
                if what == "reserved" and not s.peak_reserved_bytes:  # the CPU allocator reserves nothing
                    continue
                curve = self.mem_plot.plot(x, y / self.mem_unit[0], pen=pg.mkPen(color, width=1.5, style=style),
                                           stepMode=None)
                curve.setDownsampling(auto=True, method="peak")
                curve.setClipToView(True)
                self.curves[f"{s.label} {what}"] = curve
            self._mark_peak(s, color)
            legend = f"{swatch(color.name(), SOLID)} allocated " + (
                f"{swatch(color.name(), DASHED)} reserved · " if s.peak_reserved_bytes else "· ")
            if len(series) > 1:  # the line styles once, in front: each series its colour and name
                legend = f"{swatch(color.name(), SOLID)} "
            # several series share the one-line header: each says its peaks, the device's capacity is in the
            # tooltip (two cycles' full texts were wider than a 1904 px window; the second was cut mid-word)
            full.append(self._peak_text(s, m.meta.device_properties))
            parts.append(legend + html.escape(self._peak_text(s, m.meta.device_properties, short=len(series) > 1)))
        if len(series) > 1:
            ink = self.theme.text.name()
            styles = f"{swatch(ink, SOLID)} allocated" + (
                f" {swatch(ink, DASHED)} reserved" if any(s.peak_reserved_bytes for _, s in series) else "")
            parts.insert(0, styles)
        self.summary.setText("&nbsp;&nbsp;&nbsp;&nbsp;".join(parts))
        self.summary.setToolTip("\n".join(full) if len(series) > 1 else "memory: legend and summary")
        # the unit only: a rotated "memory (GiB)" is taller than the compact plot (the header says "memory")
        self.mem_plot.getAxis("left").setLabel(self.mem_unit[1], color=self.theme.text.name())
        if series:
            self.mem_plot.setYRange(0, top / self.mem_unit[0] * Y_HEADROOM, padding=0)
        self.mem_plot.setVisible(bool(series))
        self.mem_note = "" if series else ("Memory: no [memory] events in this trace "
                                           "(record with profile_memory=True to see memory)")
        if self.mem_note:
            self.summary.setText(html.escape(self.mem_note))
        self.summary.setVisible(True)
        self.setToolTip("")
        if nvml:
            self.set_nvml(ts)
        else:
            self._refit()

    def set_nvml(self, ts: TraceSet) -> None:
        """The NVML plot (or its line of text) of `ts`."""
        self._planned_px = None
        self._set_nvml(ts)
        self._refit()

    def _refit(self) -> None:
        # plots added to a panel already shown: its layout shrank to their size hint (a 9 px view box);
        # back to the whole view, as a resize would
        self.ci.setGeometry(QtCore.QRectF(self.range))
        self.relink_x()

    def _peak_text(self, s, props, short: bool = False) -> str:
        name = next((p.get("name") for p in props if p.get("id") == s.device), None)
        if short:  # one of several on the line: "rank 0 · cycle 2 GPU 0 peak 75.52 MiB (166.00 MiB reserved)"
            return f"{s.label} peak {fmt_bytes(s.peak_allocated_bytes)}" + (
                f" ({fmt_bytes(s.peak_reserved_bytes)} reserved)" if s.peak_reserved_bytes else "")
        text = f"{s.label} peak {fmt_bytes(s.peak_allocated_bytes)} allocated" + (
            f", {fmt_bytes(s.peak_reserved_bytes)} reserved" if s.peak_reserved_bytes else "")
        if s.total_bytes:
            text += f" = {s.peak_pct_of_total:.1f} % of {fmt_bytes(s.total_bytes)}" + (f" ({name})" if name else "")
        return text

    def _mark_peak(self, s, color) -> None:
        y = s.peak_allocated_bytes / self.mem_unit[0]
        dot = pg.ScatterPlotItem([float(s.peak_ts_ns)], [y], size=9, brush=color, pen=pg.mkPen(self.theme.text))
        self.mem_plot.addItem(dot)
        # beside the marker, vertically centred on it (the headroom keeps it inside the plot), on the
        # side with more room
        late = len(s.ts_ns) and s.peak_ts_ns > (float(s.ts_ns[0]) + float(s.ts_ns[-1])) / 2
        fill = QtGui.QColor(self.theme.background)
        fill.setAlpha(190)
        label = pg.TextItem(f"peak {fmt_bytes(s.peak_allocated_bytes)}", color=self.theme.text,
                            anchor=(1.05, 0.5) if late else (-0.05, 0.5), fill=fill)
        label.setPos(float(s.peak_ts_ns), y)
        self.mem_plot.addItem(label)
        self.peaks.append((s.label, s.peak_allocated_bytes, s.peak_ts_ns))

    def _set_nvml(self, ts: TraceSet) -> None:
        """NVML % curves when they say something: samples outside the profiled window or a flat 0 %
        become one line of text instead of ~100 px of flat line."""
        shown, inside, self.nvml_note = _nvml_plan(ts)
        plot_it = bool(shown) and not self.nvml_note
        if self.nvml_header is None and shown:
            self.nvml_header = HeaderLabel(self.theme)
            self.nvml_plot = self._new_plot(self.nvml_header, "%")
            if self._linked is None:  # no timeline: it follows the memory plot
                self.nvml_plot.setXLink(self.mem_plot)
        if self.nvml_plot is None:
            return
        self.nvml_plot.clear()
        self.nvml_plot.setVisible(plot_it)
        self.nvml_header.setVisible(bool(shown))
        if not plot_it:
            self.nvml_header.setText(html.escape(self.nvml_note))
            return
        parts = []
        for i, (s, mask) in enumerate(inside):
            color = _PALETTE[(i + 2) % len(_PALETTE)]
            self.curves[s.name] = self.nvml_plot.plot(s.ts_ns.astype(float), s.value, pen=pg.mkPen(color, width=1.5))
            peak = float(s.value[mask].max(initial=0))
            parts.append(f"{swatch(color, SOLID)} NVML {html.escape(s.name)} (%, max {peak:.0f} in the window)")
        self.nvml_header.setText("&nbsp;&nbsp;&nbsp;&nbsp;".join(parts))
        self.nvml_plot.setYRange(0, 100 * Y_HEADROOM, padding=0)
        self.nvml_plot.getAxis("left").setTicks([[(0, "0"), (50, "50"), (100, "100")]])


def _series(ts: TraceSet, model_index: int | None) -> list:
    """(model, MemorySeries) to plot: the devices' memory, else the host allocator's."""
    models = ts.models if model_index is None else [ts.models[model_index]]
    multi = len(models) > 1

    def labelled(include_cpu: bool) -> list:
        return [(m, replace(s, label=f"{model_short(m)} {s.label}") if multi and m.rank is not None else s)
                for m in models for s in memory_series(m, include_cpu=include_cpu)]
    # a CPU run recorded with profile_memory: the host allocator's [memory] events
    return labelled(False) or labelled(True)


def _nvml_plan(ts: TraceSet) -> tuple[list, list, str]:
    """(NVML series to show, (series, inside-the-window mask) pairs, the line of text that replaces
    the plot when the samples say nothing: "" = plot them)."""
    series = counter_series(ts.nvml, ts.nvml_strings) if ts.nvml is not None else []
    shown = [s for s in series if s.name.split("/")[-1] in _NVML_PLOTTED]
    spans = [m.span_ns for m in ts.models if len(m.slices)]
    t0, t1 = (min(a for a, _ in spans), max(b for _, b in spans)) if spans else (0, 0)
    inside = [(s, (s.ts_ns >= t0) & (s.ts_ns <= t1)) for s in shown]
    note = ""
    if shown and not any(mask.any() for _, mask in inside):
        n = len(shown[0].ts_ns)
        note = (f"NVML: {n} samples, none inside the profiled window "
                f"({_rel_s(shown[0].ts_ns[0])} to {_rel_s(shown[0].ts_ns[-1])} of the trace's start)")
    elif shown and all(float(s.value[mask].max(initial=0)) == 0.0 for s, mask in inside):
        note = "NVML: " + ", ".join(s.name for s in shown) + " 0 % throughout the profiled window"
    return shown, inside, note


def _rel_s(t_ns) -> str:
    return f"{float(t_ns) / 1e9:+.2f} s"
