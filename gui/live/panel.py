"""LivePanel: a run as it happens, on one time axis (s since the run started): step time, and per GPU
utilisation, memory and power from the sampler's ring buffers, with the profiled windows shaded on
every plot. Refreshed by a QTimer at ~5 Hz with setData only - no per-sample Python objects.

    panel = LivePanel(parent)
    panel.attach(sampler, t0_ns, schedule)   # core.gpu.sampler.Sampler (or None), run start, Schedule
                                             # (a remote run: + clock_offset_ns, desktop - host clock)
    controller.sig_event_received.connect(panel.add_event)
    panel.state_line()                       # "recording cycle 1 of 3 · step 17" (gui.live.state)

Without a GPU the GPU plots are hidden and a line says why; the step-time plot stays.
"""
from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from core import units
from core.gpu.backend import COLUMNS
from gui.live.state import RunState
from gui.theme import Theme, load_theme

REFRESH_MS = 200
GPU_COLORS = ("#4a7fd4", "#e8774c", "#2e9e4f", "#c45cc4", "#d9a400", "#2bb5a8", "#8d939a", "#e84c7d")
STEP_COLOR = "#d65c8a"
ACTIVE_RGBA = (92, 196, 107, 60)  # recorded (active) windows, shaded on every plot
PLOT_MIN_PX = 50  # a plot stays tall enough for its 3 y labels (~11 px each at 8 pt) not to touch
AXIS_PX = 52  # left axis width, the same on every plot so that one time has one x
Y_MARGIN = 0.12  # of the y range, below 0 and above the top label (half a label's height at PLOT_MIN_PX)
TIME_AXIS_PX = 44  # the lowest plot's tick labels and "s since start"
MIN_X_S = 10.0  # the time axis shows at least this much (a run's first seconds fill it)
_UTIL, _MEM_USED, _MEM_TOTAL, _POWER, _TEMP = (COLUMNS.index(c) for c in
                                               ("util_pct", "mem_used_mb", "mem_total_mb", "power_w", "temp_c"))
MAX_STEPS = 20_000


def nice_top(value: float) -> float:
    """The smallest 1/2/5 x 10^k at or above value (the y range's top)."""
    if not math.isfinite(value) or value <= 0:
        return 1.0
    exp = 10 ** math.floor(math.log10(value))
    for k in (1, 2, 5, 10):
        if value <= k * exp + 1e-12:
            return k * exp
    return 10 * exp


def _fmt_tick(v: float) -> str:
    return f"{v:.0f}" if v >= 10 or v == 0 else f"{v:.2g}"


class LivePanel(QtWidgets.QWidget):
    def __init__(self, parent: QtWidgets.QWidget | None = None, theme: Theme | None = None):
        super().__init__(parent)
        self.theme = theme or load_theme()
        self.sampler = None
        self.t0_ns = 0
        self.clock_offset_ns = 0
        self.run = RunState()
        self.state = QtWidgets.QLabel("No run yet.", self)
        font = self.state.font()
        font.setBold(True)
        self.state.setFont(font)
        self.message = QtWidgets.QLabel("", self)
        self.message.setWordWrap(True)
        self.message.hide()
        self.values = QtWidgets.QLabel("", self)
        self.values.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.values.setTextFormat(QtCore.Qt.TextFormat.RichText)
        self.graphs = pg.GraphicsLayoutWidget(self)
        self.graphs.setBackground(self.theme.background)
        self.graphs.ci.layout.setContentsMargins(2, 2, 8, 2)
        self.graphs.ci.layout.setVerticalSpacing(2)
        self.step_plot = self._plot(0, "step ms")
        self.util_plot = self._plot(1, "GPU %")
        self.mem_plot = self._plot(2, "GiB")
        self.power_plot = self._plot(3, "W")
        self._set_ticks(self.util_plot, 100.0)
        for p in self.gpu_plots():
            p.setXLink(self.step_plot)
        self.step_curve = self.step_plot.plot([], [], pen=pg.mkPen(STEP_COLOR, width=2), symbol="o", symbolSize=5,
                                              symbolBrush=STEP_COLOR, symbolPen=None)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.setSpacing(2)
        lay.addWidget(self.state)
        self.link = QtWidgets.QLabel("", self)  # a remote run's link when it is down (set_connection)
        self.link.setStyleSheet("color: #d08b00; font-weight: bold;")
        self.link.hide()
        lay.addWidget(self.link)
        lay.addWidget(self.message)
        lay.addWidget(self.values)
        lay.addWidget(self.graphs, 1)
        self._util_curves: dict[int, pg.PlotDataItem] = {}
        self._mem_curves: dict[int, pg.PlotDataItem] = {}
        self._power_curves: dict[int, pg.PlotDataItem] = {}
        self._seen: dict[int, int] = {}
        self._tops: dict[int, tuple[float, float]] = {}  # per GPU: highest memory (GiB) and power (W) so far
        self._step_x: list[float] = []
        self._step_y: list[float] = []
        self._step_dirty = False
        self._last_step: dict | None = None
        self._markers: list[pg.GraphicsObject] = []  # per recorded window: one band per plot, then its label line
        self._live_bands: list[pg.LinearRegionItem] = []  # the window being recorded, growing
        self._active_x: float | None = None
        self._now_s = 0.0
        self._user_x = False  # the user zoomed / panned: stop following the run
        self.step_plot.getViewBox().sigRangeChangedManually.connect(self._on_vb_range_changed_manually)
        self._show_gpu(False)
        self.timer = QtCore.QTimer(self)
        self.timer.setInterval(REFRESH_MS)
        self.timer.timeout.connect(self._on_timer_timeout)

    def _plot(self, row: int, unit: str) -> pg.PlotItem:
        p = self.graphs.addPlot(row=row, col=0)
        p.setMenuEnabled(False)
        p.setMouseEnabled(x=True, y=False)
        p.hideButtons()
        p.showGrid(x=True, y=True, alpha=0.2)
        p.setMinimumHeight(PLOT_MIN_PX)
        for name in ("left", "bottom"):
            ax = p.getAxis(name)
            ax.setPen(self.theme.grid)
            ax.setTextPen(self.theme.text)
            ax.enableAutoSIPrefix(False)  # no "(x0.001)": seconds are seconds
            ax.setStyle(maxTickLevel=0, tickTextOffset=3)
        p.getAxis("left").setWidth(AXIS_PX)
        p.setLabel("left", unit, color=self.theme.text.name())
        p.setLabel("bottom", "s since start", color=self.theme.text.name())
        self._set_ticks(p, 1.0)
        return p

    def plots(self) -> list[pg.PlotItem]:
        return [self.step_plot, *self.gpu_plots()]

    def gpu_plots(self) -> list[pg.PlotItem]:
        return [self.util_plot, self.mem_plot, self.power_plot]

    def _show_gpu(self, shown: bool) -> None:
        """GPU plots only with GPU data; the time axis (labels) only on the lowest plot shown."""
        for p in self.gpu_plots():
            p.setVisible(shown)
        lowest = self.power_plot if shown else self.step_plot
        for p in self.plots():
            p.showAxis("bottom", p is lowest)
            p.getAxis("bottom").setStyle(showValues=p is lowest)
        # pyqtgraph does not pass its plots' minimum heights up to the widget: without this a short dock
        # squeezed the four plots to ~30 px each and cut the time axis
        n = 4 if shown else 1
        self.graphs.setMinimumHeight(n * (PLOT_MIN_PX + 2) + TIME_AXIS_PX)

    @staticmethod
    def _set_ticks(p: pg.PlotItem, top: float) -> None:
        """Three y labels (0, half, top) whatever the plot's height, so they never overlap; the range
        has a margin below 0 and above top so that their text is not cut at the plot's edges."""
        p.setYRange(-Y_MARGIN * top, (1 + Y_MARGIN) * top, padding=0)
        p.getAxis("left").setTicks([[(v, _fmt_tick(v)) for v in (0.0, top / 2, top)]])

    # -- data in ---------------------------------------------------------------------------------
    def attach(self, sampler, t0_ns: int, schedule=None, clock_offset_ns: int = 0) -> None:
        """A new run: clear, show its GPUs (or why there are none), start refreshing. `clock_offset_ns`: a
        remote run's desktop - host clock; its events' stamps are moved onto this clock (its sampler's rings
        are on it already), so the time axis is the desktop's alone."""
        self.clear()
        self.sampler = sampler
        self.t0_ns = t0_ns
        self.clock_offset_ns = clock_offset_ns
        self.run = RunState(schedule=schedule)
        has_gpu = sampler is not None and sampler.available
        self._show_gpu(has_gpu)
        if not has_gpu:
            reason = sampler.reason if sampler is not None else "no sampler"
            self.message.setText(f"No GPU data: {reason}. GPU plots are hidden; step times are shown. "
                                 "CPU memory (profile_memory) is in the trace: its memory plot shows it "
                                 "when the run's trace opens.")
            self.message.show()
        else:
            self.message.hide()
            for gpu, _name in enumerate(sampler.names):
                pen = pg.mkPen(GPU_COLORS[gpu % len(GPU_COLORS)], width=1.5)
                self._util_curves[gpu] = self.util_plot.plot([], [], pen=pen)
                self._mem_curves[gpu] = self.mem_plot.plot([], [], pen=pen)
                self._power_curves[gpu] = self.power_plot.plot([], [], pen=pen)
        self.state.setText(self.state_line())
        self.timer.start()

    def detach(self) -> None:
        """Run over: one last refresh, then the curves stay as they are."""
        self._on_timer_timeout()
        self.timer.stop()

    def state_line(self) -> str:
        return self.run.line()

    def set_connection(self, text: str) -> None:
        """A remote run's link to its host: "" when up, else what the user should know (the run goes on)."""
        self.link.setText(text)
        self.link.setVisible(bool(text))

    def set_finished(self, text: str) -> None:
        """The run's end in words (replaces the state line)."""
        self.run.finished = text
        self.state.setText(text)

    def add_event(self, e: dict) -> None:
        t = e.get("type")
        self.run.fold(e)
        x = (int(e.get("t_ns", 0)) + self.clock_offset_ns - self.t0_ns) / 1e9 if self.t0_ns else 0.0
        if e.get("rank", 0) == 0:
            self._now_s = max(self._now_s, x)
        if t == "step" and e.get("rank", 0) == 0:
            self._last_step = e
            if int(e.get("step", 0)) <= 1:
                return  # the first "step" spans interpreter start, imports and setup: off the plot's scale
            self._step_x.append(x)
            self._step_y.append(int(e.get("dur_ns", 0)) / 1e6)
            if len(self._step_x) > MAX_STEPS:
                del self._step_x[:-MAX_STEPS], self._step_y[:-MAX_STEPS]
            self._step_dirty = True
        elif t == "phase" and e.get("rank", 0) == 0 and e.get("phase") == "active":
            self._active_x = x
            self._live_bands = [self._band(p, x, x) for p in self.plots()]
        elif t == "cycle" and e.get("rank", 0) == 0:
            x0 = self._active_x if self._active_x is not None else x
            self._active_x = None
            for band in self._live_bands:
                if band.getViewBox() is not None:
                    band.getViewBox().removeItem(band)
            self._live_bands = []
            self._marker(x0, x, f"trace {e.get('cycle')}")
        self.state.setText(self.state_line())

    def _band(self, plot: pg.PlotItem, x0: float, x1: float) -> pg.LinearRegionItem:
        band = pg.LinearRegionItem((x0, x1), movable=False, brush=pg.mkBrush(*ACTIVE_RGBA), pen=pg.mkPen(None))
        band.setZValue(-10)
        plot.addItem(band)
        return band

    def _marker(self, x0: float, x1: float, label: str) -> None:
        """A recorded window: shaded on every plot, labelled once (top plot) at its end."""
        self._markers.extend(self._band(p, x0, x1) for p in self.plots())
        line = pg.InfiniteLine(pos=x1, angle=90, pen=pg.mkPen(ACTIVE_RGBA[:3], style=QtCore.Qt.PenStyle.DashLine),
                               label=label, labelOpts={"position": 0.97, "color": self.theme.text,
                                                       "anchors": [(1, 0), (1, 0)]})
        self.step_plot.addItem(line)
        self._markers.append(line)

    def clear(self) -> None:
        for p in self.gpu_plots():
            for c in list(p.listDataItems()):
                p.removeItem(c)
        for m in self._markers + self._live_bands:
            vb = m.getViewBox()
            if vb is not None:
                vb.removeItem(m)
        self._util_curves.clear()
        self._mem_curves.clear()
        self._power_curves.clear()
        self._markers.clear()
        self._live_bands = []
        self._active_x = None
        self._seen.clear()
        self._tops.clear()
        self._step_x, self._step_y = [], []
        self.step_curve.setData([], [])
        self._last_step = None
        self._now_s = 0.0
        self._user_x = False
        self.values.setText("")

    # -- refresh ---------------------------------------------------------------------------------
    def _on_vb_range_changed_manually(self, *_) -> None:
        self._user_x = True

    def _on_timer_timeout(self) -> None:
        parts = []
        if self.sampler is not None and self.sampler.available:
            mem_top = power_top = 0.0
            for gpu, ring in self.sampler.rings.items():
                if ring.total != self._seen.get(gpu):  # only rings with new samples are copied
                    self._seen[gpu] = ring.total
                    t, v = ring.snapshot()
                    x = (t - self.t0_ns) / 1e9
                    self._util_curves[gpu].setData(x, v[:, _UTIL], connect="finite")
                    self._mem_curves[gpu].setData(x, v[:, _MEM_USED] / 1024.0, connect="finite")
                    self._power_curves[gpu].setData(x, v[:, _POWER], connect="finite")
                    if len(t):
                        self._now_s = max(self._now_s, float(x[-1]))
                        self._tops[gpu] = (float(np.nanmax(v[:, _MEM_USED], initial=0)) / 1024.0,
                                           float(np.nanmax(v[:, _POWER], initial=0)))
                mem_top = max(mem_top, self._tops.get(gpu, (0.0, 0.0))[0])
                power_top = max(power_top, self._tops.get(gpu, (0.0, 0.0))[1])
                last = ring.last()
                if last is not None:
                    parts.append(_gpu_text(gpu, last[1], GPU_COLORS[gpu % len(GPU_COLORS)]))
            for plot, top in ((self.mem_plot, mem_top), (self.power_plot, power_top)):
                self._set_ticks(plot, nice_top(top))
        if self._step_dirty:
            self._step_dirty = False
            self.step_curve.setData(np.asarray(self._step_x), np.asarray(self._step_y))
            self._set_ticks(self.step_plot, nice_top(max(self._step_y, default=1.0)))
        for band in self._live_bands:  # the window being recorded grows with the run
            band.setRegion((self._active_x, max(self._active_x, self._now_s)))
        if not self._user_x:
            self.step_plot.setXRange(0, max(MIN_X_S, self._now_s * 1.05), padding=0)
        if self._last_step is not None:
            parts.insert(0, f"step {self._last_step.get('step')} · {units.fmt_ns(self._last_step.get('dur_ns', 0))}")
        self.values.setText("&nbsp;&nbsp;&nbsp;".join(parts))

    def step_count(self) -> int:
        """Steps on the plot (the first step, which includes setup, is left out)."""
        return len(self._step_x)


def _gpu_text(gpu: int, v: np.ndarray, color: str) -> str:
    def num(i, fmt):
        return "?" if math.isnan(v[i]) else format(v[i], fmt)
    swatch = f"<span style='color:{color}; font-weight:bold'>━</span>"
    return (f"{swatch} GPU{gpu} {num(_UTIL, '.0f')} %"
            f" · {num(_MEM_USED, '.0f')}/{num(_MEM_TOTAL, '.0f')} MiB · {num(_POWER, '.0f')} W · {num(_TEMP, '.0f')} °C")
