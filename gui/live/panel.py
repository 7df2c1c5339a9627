"""LivePanel: GPU utilisation and memory per GPU (from the sampler's ring buffers) and step times
(from events.jsonl), refreshed by a QTimer at ~5 Hz with setData only - no per-sample Python objects.

    panel = LivePanel(parent)
    panel.attach(sampler, t0_ns)        # core.gpu.sampler.Sampler of the run (or None), run start
    controller.sig_event_received.connect(panel.add_event)
"""
from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from core import units
from core.gpu.backend import COLUMNS

REFRESH_MS = 200
GPU_COLORS = ("#4c9be8", "#e8774c", "#5cc46b", "#c45cc4", "#e8c94c", "#4ce8d9", "#a0a0a0", "#e84c7d")
ACTIVE_COLOR = "#5cc46b"  # recorded (active) windows on the step-time plot
_UTIL, _MEM_USED, _MEM_TOTAL, _POWER, _TEMP = (COLUMNS.index(c) for c in
                                               ("util_pct", "mem_used_mb", "mem_total_mb", "power_w", "temp_c"))
MAX_STEPS = 20_000


class LivePanel(QtWidgets.QWidget):
    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.sampler = None
        self.t0_ns = 0
        self.message = QtWidgets.QLabel("No run yet.", self)
        self.message.setWordWrap(True)
        self.values = QtWidgets.QLabel("", self)
        self.values.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.util_plot = self._plot("GPU utilisation", "%")
        self.util_plot.setYRange(0, 100, padding=0.02)
        self.mem_plot = self._plot("GPU memory", "GiB")
        self.step_plot = self._plot("Step time", "ms")
        self.mem_plot.setXLink(self.util_plot)
        self.step_plot.setXLink(self.util_plot)
        self.step_curve = self.step_plot.plot([], [], pen=pg.mkPen("#4c9be8", width=1.5), symbol="o",
                                              symbolSize=4, symbolBrush="#4c9be8")
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addWidget(self.message)
        lay.addWidget(self.values)
        for p in (self.util_plot, self.mem_plot, self.step_plot):
            lay.addWidget(p, 1)
        self._util_curves: dict[int, pg.PlotDataItem] = {}
        self._mem_curves: dict[int, pg.PlotDataItem] = {}
        self._seen: dict[int, int] = {}
        self._step_x: list[float] = []
        self._step_y: list[float] = []
        self._step_dirty = False
        self._last_step: dict | None = None
        self._markers: list[pg.GraphicsObject] = []
        self._active_x: float | None = None
        self.timer = QtCore.QTimer(self)
        self.timer.setInterval(REFRESH_MS)
        self.timer.timeout.connect(self._on_timer_timeout)

    def _plot(self, title: str, unit: str) -> pg.PlotWidget:
        w = pg.PlotWidget(self)
        w.setMinimumHeight(90)
        w.setTitle(title, size="9pt")
        w.setLabel("left", unit)
        w.setLabel("bottom", "s since start")
        w.showGrid(x=True, y=True, alpha=0.2)
        w.setMouseEnabled(x=True, y=False)
        w.addLegend(offset=(5, 5))
        return w

    # -- data in ---------------------------------------------------------------------------------
    def attach(self, sampler, t0_ns: int) -> None:
        """A new run: clear, show its GPUs (or why there are none), start refreshing."""
        self.clear()
        self.sampler = sampler
        self.t0_ns = t0_ns
        if sampler is None or not sampler.available:
            reason = sampler.reason if sampler is not None else "no sampler"
            self.message.setText(f"No GPU data: {reason}. The run still works (CPU); step times are shown.")
            self.message.show()
        else:
            self.message.hide()
            for gpu, name in enumerate(sampler.names):
                color = GPU_COLORS[gpu % len(GPU_COLORS)]
                label = f"gpu{gpu} {name}"
                self._util_curves[gpu] = self.util_plot.plot([], [], pen=pg.mkPen(color, width=1.5), name=label)
                self._mem_curves[gpu] = self.mem_plot.plot([], [], pen=pg.mkPen(color, width=1.5), name=label)
        self.timer.start()

    def detach(self) -> None:
        """Run over: one last refresh, then the curves stay as they are."""
        self._on_timer_timeout()
        self.timer.stop()

    def add_event(self, e: dict) -> None:
        t = e.get("type")
        x = (int(e.get("t_ns", 0)) - self.t0_ns) / 1e9 if self.t0_ns else 0.0
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
        elif t == "cycle" and e.get("rank", 0) == 0:
            x0 = self._active_x if self._active_x is not None else x
            self._active_x = None
            self._marker(x0, x, f"trace {e.get('cycle')}")

    def _marker(self, x0: float, x1: float, label: str) -> None:
        """The recorded window as a shaded band, labelled at its end."""
        band = pg.LinearRegionItem((x0, x1), movable=False, brush=pg.mkBrush(92, 196, 107, 50),
                                   pen=pg.mkPen(None))
        line = pg.InfiniteLine(pos=x1, angle=90, pen=pg.mkPen(ACTIVE_COLOR, style=QtCore.Qt.PenStyle.DashLine),
                               label=label, labelOpts={"position": 0.9, "color": ACTIVE_COLOR})
        for item in (band, line):
            self.step_plot.addItem(item)
            self._markers.append(item)

    def clear(self) -> None:
        for p in (self.util_plot, self.mem_plot):
            p.clear()
            if p.plotItem.legend is not None:
                p.plotItem.legend.clear()
        for m in self._markers:
            self.step_plot.removeItem(m)
        self._util_curves.clear()
        self._mem_curves.clear()
        self._markers.clear()
        self._active_x = None
        self._seen.clear()
        self._step_x, self._step_y = [], []
        self.step_curve.setData([], [])
        self._last_step = None
        self.values.setText("")

    # -- refresh ---------------------------------------------------------------------------------
    def _on_timer_timeout(self) -> None:
        parts = []
        if self.sampler is not None and self.sampler.available:
            for gpu, ring in self.sampler.rings.items():
                if ring.total != self._seen.get(gpu):
                    self._seen[gpu] = ring.total
                    t, v = ring.snapshot()
                    x = (t - self.t0_ns) / 1e9
                    self._util_curves[gpu].setData(x, v[:, _UTIL], connect="finite")
                    self._mem_curves[gpu].setData(x, v[:, _MEM_USED] / 1024.0, connect="finite")
                last = ring.last()
                if last is not None:
                    parts.append(_gpu_text(gpu, last[1]))
        if self._step_dirty:
            self._step_dirty = False
            self.step_curve.setData(np.asarray(self._step_x), np.asarray(self._step_y))
        if self._last_step is not None:
            parts.append(f"step {self._last_step.get('step')} · {units.fmt_ns(self._last_step.get('dur_ns', 0))}")
        self.values.setText("   ".join(parts))

    def step_count(self) -> int:
        """Steps on the plot (the first step, which includes setup, is left out)."""
        return len(self._step_x)


def _gpu_text(gpu: int, v: np.ndarray) -> str:
    def num(i, fmt):
        return "?" if math.isnan(v[i]) else format(v[i], fmt)
    return (f"GPU{gpu} {num(_UTIL, '.0f')} % · {num(_MEM_USED, '.0f')}/{num(_MEM_TOTAL, '.0f')} MiB"
            f" · {num(_POWER, '.0f')} W · {num(_TEMP, '.0f')} °C")
