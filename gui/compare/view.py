"""CompareView: one tab comparing run A (baseline) with run B.

Headline (median step A vs B, change, significance), the two timelines stacked with step-aligned, linked
time axes (a step chosen on each side; zoom and pan move both), and tabs: per-step breakdown side by side,
kernel and op delta tables (sortable, filterable, new / gone marked, CSV export), findings fixed / new /
changed, memory curves overlaid on step-relative time. All numbers come from core.analysis.diff.
"""
from __future__ import annotations

import html
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from core import units
from core.analysis.diff import Diff, Row
from core.analysis.memory import memory_series
from core.trace.model import TraceSet
from gui.compare import tables
from gui.theme import Theme
from gui.timeline.view import TimelineWidget

PART_LABELS = {"compute_ns": "compute", "memcpy_ns": "memcpy", "dataloader_ns": "DataLoader",
               "compile_ns": "compile", "comm_wait_ns": "collective wait", "sync_wait_ns": "sync wait",
               "host_wait_ns": "host wait", "kernel_wait_ns": "kernel wait", "comm_ns": "communication",
               "other_idle_ns": "other idle"}


def headline_html(d: Diff) -> str:
    s = d.step

    def side(label: str, x) -> str:
        return (f"<b>{label}</b> {html.escape(Path(x.trace).name)}: median step <b>{units.fmt_ns(x.median_ns)}</b> "
                f"(p10 {units.fmt_ns(x.p10_ns)}, p90 {units.fmt_ns(x.p90_ns)}, {x.steps} steps)"
                + (f" · <b>{html.escape(x.bound)}-bound</b>" if x.bound else "")
                + (f" · {html.escape(x.device)}" if x.device else ""))

    if s.significant is None:
        verdict = html.escape(s.method)
    elif s.significant:
        verdict = "<b>faster</b>" if s.delta_ns < 0 else "<b>slower</b>"
        verdict += f" (significant, p = {s.p_value:.3g})"
    else:
        verdict = f"no significant change (p = {s.p_value:.3g})"
    sign = "+" if s.delta_ns > 0 else "−" if s.delta_ns < 0 else "±"
    lines = [side("A", d.a), side("B", d.b),
             f"Δ step: <b>{sign}{units.fmt_ns(abs(s.delta_ns))} ({s.delta_pct:+.1f} %)</b>, {verdict}"]
    if getattr(d, "basis_note", ""):  # both sides in unprofiled time (core.analysis.diff._unprofiled_basis)
        lines.append(f"note: {html.escape(d.basis_note)}")
    lines += [f"⚠ {html.escape(w)}" for w in d.warnings]
    return "<br>".join(lines)


class _Side(QtWidgets.QWidget):
    """One run's timeline with its step chooser."""

    sig_step_changed = QtCore.Signal()  # the aligned step changed

    def __init__(self, label: str, trace_set: TraceSet, indexes, theme: Theme, note: str = "", parent=None) -> None:
        super().__init__(parent)
        self.trace_set = trace_set
        self.timeline = TimelineWidget(theme)
        self.timeline.set_models(list(trace_set.models), indexes)
        self.step_box = QtWidgets.QComboBox()
        steps = trace_set.primary.steps
        self.step_starts = steps.ts_ns.tolist() if steps is not None and len(steps) else [0]
        names = [f"step {n}" for n in steps.number.tolist()] if steps is not None and len(steps) else ["whole trace"]
        self.step_box.addItems(names)
        self.step_box.setCurrentIndex(1 if len(names) > 1 else 0)
        self.step_box.currentIndexChanged.connect(lambda _i: self.sig_step_changed.emit())
        bar = QtWidgets.QHBoxLayout()
        title = QtWidgets.QLabel(f"<b>{label}</b> {html.escape(Path(trace_set.path).name)}"
                                 + (f" <i>({html.escape(note)} shown)</i>" if note else ""))
        title.setToolTip(trace_set.path)
        bar.addWidget(title)
        bar.addStretch(1)
        bar.addWidget(QtWidgets.QLabel("align at"))
        bar.addWidget(self.step_box)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addLayout(bar)
        lay.addWidget(self.timeline, 1)

    @property
    def anchor_ns(self) -> float:
        return float(self.step_starts[max(0, self.step_box.currentIndex())])


class CompareView(QtWidgets.QWidget):
    """The Compare tab. `diff` is a core.analysis.diff.Diff; sides are (TraceSet, SliceIndex list[, note]): a
    multi-rank run's side is its primary rank, the note says which ("rank 0 of 128")."""

    tab_kind = "compare"  # what core.session.Session.set_tab reports for this tab (gui/main_window.py)

    def __init__(self, diff: Diff, side_a: tuple, side_b: tuple, theme: Theme, parent=None) -> None:
        super().__init__(parent)
        self.diff = diff
        self.theme = theme
        self.header = QtWidgets.QLabel(headline_html(diff))
        self.header.setTextFormat(QtCore.Qt.TextFormat.RichText)
        self.header.setWordWrap(True)
        self.header.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.side_a = _Side("A", side_a[0], side_a[1], theme, *side_a[2:3])
        self.side_b = _Side("B", side_b[0], side_b[1], theme, *side_b[2:3])
        self._syncing = False
        self.side_a.timeline.sig_range_changed.connect(lambda t0, t1: self._follow(self.side_a, self.side_b, t0, t1))
        self.side_b.timeline.sig_range_changed.connect(lambda t0, t1: self._follow(self.side_b, self.side_a, t0, t1))
        self.side_a.sig_step_changed.connect(self._on_sides_step_changed)
        self.side_b.sig_step_changed.connect(self._on_sides_step_changed)
        timelines = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        timelines.addWidget(self.side_a)
        timelines.addWidget(self.side_b)
        self.tabs = QtWidgets.QTabWidget()
        self.breakdown_plot = self._breakdown_plot()
        self.tabs.addTab(self.breakdown_plot, "Breakdown")
        self.kernels = tables.DeltaTable(diff.kernels, "kernels", "GPU time")
        self.ops = tables.DeltaTable(diff.ops, "ops", "CPU time")
        self.tabs.addTab(self.kernels, "Kernels")
        self.tabs.addTab(self.ops, "Ops")
        self.findings = tables.findings_tree(diff.findings)
        n_fixed, n_new = len(diff.findings["fixed"]), len(diff.findings["new"])
        self.tabs.addTab(self.findings, f"Findings ({n_fixed} fixed, {n_new} new)")
        self.memory_plot = self._memory_plot()
        self.tabs.addTab(self.memory_plot, "Memory")
        split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        split.addWidget(timelines)
        split.addWidget(self.tabs)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(6, 6, 6, 6)
        lay.addWidget(self.header)
        lay.addWidget(split, 1)
        self._on_sides_step_changed()

    # --- linked, step-aligned timelines -----------------------------------------------------------
    def set_verdict(self, text_html: str) -> None:
        """A banner above the headline: what a fix was predicted to save and what it measured (Try it)."""
        label = getattr(self, "verdict", None)
        if label is None:
            label = self.verdict = QtWidgets.QLabel()
            label.setWordWrap(True)
            label.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
            label.setFrameShape(QtWidgets.QFrame.Shape.StyledPanel)
            label.setContentsMargins(6, 4, 6, 4)
            self.layout().insertWidget(0, label)
        label.setText(text_html)

    def _follow(self, source: _Side, target: _Side, t0: float, t1: float) -> None:
        if self._syncing:
            return
        self._syncing = True
        try:
            offset = target.anchor_ns - source.anchor_ns
            target.timeline.show_range(t0 + offset, t1 + offset)
        finally:
            self._syncing = False

    def _on_sides_step_changed(self) -> None:
        a = self.side_a
        steps = a.trace_set.primary.steps
        if steps is not None and len(steps):
            i = max(0, a.step_box.currentIndex())
            longest = max(self.diff.a.median_ns, self.diff.b.median_ns, float(steps.dur_ns[i]))
            t0 = a.anchor_ns - 0.02 * longest
            t1 = a.anchor_ns + 1.02 * longest
        else:
            t0, t1 = a.timeline.view_range()
        a.timeline.show_range(t0, t1)
        self._follow(a, self.side_b, t0, t1)
        self._refresh_memory()

    # --- plots --------------------------------------------------------------------------------------
    def _plot(self) -> pg.PlotWidget:
        plot = pg.PlotWidget(background=self.theme.background)
        for name in ("left", "bottom"):
            axis = plot.getAxis(name)
            axis.setPen(self.theme.text)
            axis.setTextPen(self.theme.text)
        plot.addLegend(offset=(10, 10), labelTextColor=self.theme.text)
        return plot

    def _breakdown_plot(self) -> pg.PlotWidget:
        plot = self._plot()
        parts = [p for p, (a, b) in self.diff.breakdown.items() if a or b] or list(self.diff.breakdown)
        x = np.arange(len(parts), dtype=float)
        a_ms = np.array([self.diff.breakdown[p][0] / 1e6 for p in parts])
        b_ms = np.array([self.diff.breakdown[p][1] / 1e6 for p in parts])
        color_a, color_b = (pg.mkColor("#4c78a8"), pg.mkColor("#f58518"))
        plot.addItem(pg.BarGraphItem(x=x - 0.2, height=a_ms, width=0.38, brush=color_a, pen=None, name="A"))
        plot.addItem(pg.BarGraphItem(x=x + 0.2, height=b_ms, width=0.38, brush=color_b, pen=None, name="B"))
        plot.getAxis("bottom").setTicks([[(float(i), PART_LABELS.get(p, p)) for i, p in enumerate(parts)]])
        plot.setLabel("left", "ms per step (mean)", color=self.theme.text.name())
        for xs, values in ((x - 0.2, a_ms), (x + 0.2, b_ms)):  # the value on each bar: no reading off the axis
            for xi, v in zip(xs.tolist(), values.tolist()):
                label = pg.TextItem(f"{v:.2f}" if v < 10 else f"{v:.1f}", color=self.theme.text, anchor=(0.5, 1.0))
                label.setPos(xi, v)
                plot.addItem(label, ignoreBounds=True)
        top = float(max(a_ms.max(initial=0), b_ms.max(initial=0)))
        plot.setYRange(0, max(top, 1e-6) * 1.15, padding=0)  # room for the values above the tallest bars
        plot.setMouseEnabled(x=False, y=False)
        return plot

    def _memory_plot(self) -> pg.PlotWidget:
        plot = self._plot()
        plot.setLabel("bottom", "ms since the aligned step's start", color=self.theme.text.name())
        plot.setLabel("left", "allocated (MiB)", color=self.theme.text.name())
        self.memory_curves = []
        for label, side, color in (("A", self.side_a, "#4c78a8"), ("B", self.side_b, "#f58518")):
            for series in memory_series(side.trace_set.primary)[:1]:
                curve = plot.plot([], [], pen=pg.mkPen(color, width=2), name=f"{label} {series.label}")
                self.memory_curves.append((curve, series, side))
        if not self.memory_curves:
            plot.addItem(pg.TextItem("no [memory] events in either trace", color=self.theme.text))
        return plot

    def _refresh_memory(self) -> None:
        for curve, series, side in getattr(self, "memory_curves", ()):
            curve.setData((series.ts_ns - side.anchor_ns) / 1e6, series.allocated_bytes / 2**20)

    def kernel_rows(self) -> tuple[Row, ...]:
        return self.diff.kernels
