"""TimelineWidget: the kernel timeline of one trace set (all ranks), with navigation, hover
tooltips, selection, highlights and flow arrows. Wiring only; drawing is in item.py."""
from __future__ import annotations

import html

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from core.trace import query
from core.trace.model import FlowKind, Kind, TraceModel, TrackKind
from core.units import fmt_bytes, fmt_ns
from gui.theme import Theme
from gui.timeline.axes import RowLabels, TimeAxis
from gui.timeline.item import TimelineItem
from gui.timeline.nav import NavViewBox
from gui.timeline.rows import COUNTER, CounterRow, RowState, build_rows, is_deep

REVEAL_MIN_PX = 4.0  # a revealed slice narrower than this on screen is zoomed to
REVEAL_ZOOM = 20.0  # ... a window this many times its duration (~5 % of the width)
REVEAL_MIN_WINDOW_NS = 5_000.0  # ... but at least 5 µs, so neighbours of a 1 ns memset show too


class TimelineWidget(pg.GraphicsLayoutWidget):
    sig_slice_selected = QtCore.Signal(int, int)  # (model index, slice row); row -1 = cleared
    sig_range_changed = QtCore.Signal(float, float)  # visible (t0_ns, t1_ns)
    sig_search_requested = QtCore.Signal(str)  # "find all with this name" from a slice's context menu
    sig_rows_changed = QtCore.Signal()  # the row layout changed (fold / unfold, rank filter, counters)

    def __init__(self, theme: Theme, parent=None) -> None:
        super().__init__(parent)
        self.theme = theme
        self.setBackground(theme.background)
        self.setFocusPolicy(QtCore.Qt.FocusPolicy.StrongFocus)
        self.ci.layout.setContentsMargins(0, 0, 0, 0)
        self.ci.layout.setSpacing(0)
        self.vb = NavViewBox(theme.row_px)
        self.axis = TimeAxis("top", anchored=True)
        self.axis.linkToView(self.vb)
        self.axis.setPen(theme.text)
        self.axis.setTextPen(theme.text)
        self.labels = RowLabels(self.vb, theme)
        self.ci.addItem(self.axis, row=0, col=1)
        # above the row labels: the anchor time that deep-zoom tick labels ("+100 ns") are offsets from
        self.anchor_label = pg.LabelItem("", color=theme.text, justify="right", size="9pt")
        self.anchor_label.setToolTip("tick labels are offsets from this time")
        self.ci.addItem(self.anchor_label, row=0, col=0)
        self.axis.sig_anchor_changed.connect(self._on_axis_anchor)
        self.ci.addItem(self.labels, row=1, col=0)
        self.ci.addItem(self.vb, row=1, col=1)
        self.item = TimelineItem(theme)
        self.vb.addItem(self.item)
        self.models: list[TraceModel] = []
        self.indexes: list[query.SliceIndex] = []
        self.state = RowState()
        self.rows = []
        self.counters: list[CounterRow] = []
        self._hover = pg.SignalProxy(self.scene().sigMouseMoved, rateLimit=theme.hover_rate_hz,
                                     slot=self._on_scene_hover)
        self.scene().sigMouseClicked.connect(self._on_scene_clicked)
        self.vb.sig_double_clicked.connect(self._on_vb_double_clicked)
        self.vb.sigXRangeChanged.connect(self._on_vb_range)
        self.labels.sig_track_toggled.connect(self._on_labels_toggled)

    # --- data ---------------------------------------------------------------------------------
    def set_models(self, models: list[TraceModel], indexes: list[query.SliceIndex] | None = None) -> None:
        self.models = list(models)
        self.indexes = indexes or [query.SliceIndex(m) for m in self.models]
        from gui.timeline.rank_strip import MANY_RANKS
        self.state = RowState(ranks_folded=len(self.models) >= MANY_RANKS)
        self._rebuild_rows()
        spans = [m.span_ns for m in self.models if len(m.slices)]
        span = (min(s[0] for s in spans), max(s[1] for s in spans)) if spans else (0, 1)
        self.item.set_data(self.models, self.indexes, self.rows, span)
        self._set_step_bands()
        self.vb.set_extent(span[0], span[1], len(self.rows))
        self.show_range(*self.default_range())

    def set_counters(self, counters: list[CounterRow]) -> None:
        """Counter rows under each rank's tracks (memory, NVML)."""
        self.counters = list(counters)
        self.item.counters = self.counters
        self._rebuild_rows()
        self.item.update()

    def _rebuild_rows(self) -> None:
        self.rows = build_rows(self.models, self.state, self.counters, self.theme.depth_cap)
        self.labels.set_rows(self.rows)
        self.item.set_rows(self.rows)
        self.vb.n_rows = max(1, len(self.rows))
        self.vb.scroll_rows(0)
        self.sig_rows_changed.emit()

    def set_hidden_models(self, hidden: set[int]) -> None:
        """Rank filter: hide these model indices."""
        self.state.hidden_models = set(hidden)
        self._rebuild_rows()
        self._set_step_bands()
        self.item.update()

    def steps_model(self) -> TraceModel | None:
        """The first shown model: its ProfilerSteps give the default zoom."""
        mi = self.first_shown_model()
        return self.models[mi] if mi >= 0 else None

    def first_shown_model(self) -> int:
        return next((i for i in range(len(self.models)) if i not in self.state.hidden_models), -1)

    def _set_step_bands(self) -> None:
        """Each shown rank's ProfilerStep bands behind that rank's rows."""
        bands = {}
        for mi, m in enumerate(self.models):
            st = m.steps
            if mi not in self.state.hidden_models and st is not None and len(st):
                bands[mi] = list(zip(st.ts_ns.tolist(), (st.ts_ns + st.dur_ns).tolist()))
        self.item.step_bands = bands

    def expand_rank(self, model: int) -> None:
        """Unfold rank `model` (the others keep their state) and scroll its rows into view."""
        from gui.timeline.rows import HEADER
        self.state.collapsed.discard((model, HEADER))
        self.state.expanded.add((model, HEADER))
        self._rebuild_rows()
        self.item.update()
        first = next((i for i, r in enumerate(self.rows) if r.model == model), 0)
        self.vb._apply_rows(first)  # its header at the top

    def toggle_track(self, model: int, track: int) -> None:
        """Collapse / expand a track's rows (track HEADER folds a whole rank)."""
        m = self.models[model]
        kind = -1 if track < 0 else int(m.tracks.kind[track])
        deep = track >= 0 and is_deep(m, track, self.theme.depth_cap)
        self.state.toggle(model, track, kind, deep)
        self._rebuild_rows()
        self.item.update()

    def default_range(self) -> tuple[float, float]:
        """One step (the second when there are several: the first is often warm-up), else all."""
        m = self.steps_model()
        if m is None:
            return (0.0, 1.0)
        st = m.steps
        if len(st):
            i = 1 if len(st) > 1 else 0
            t0, d = float(st.ts_ns[i]), float(st.dur_ns[i])
            return t0 - d * 0.02, t0 + d * 1.02
        s0, s1 = self.item._span
        return s0, s1

    # --- API ------------------------------------------------------------------------------------
    def show_range(self, t0_ns: float, t1_ns: float) -> None:
        self.vb.show_time(t0_ns, t1_ns)

    def view_range(self) -> tuple[float, float]:
        x0, x1 = self.vb.viewRange()[0]
        return x0, x1

    def select_slice(self, model: int, row: int, reveal: bool = True) -> None:
        if row < 0:
            self.item.selected = None
            self.item.flows = []
        else:
            self.item.selected = (model, row)
            self.item.flows = self._flows_of(model, row)
            if reveal:
                self.reveal_slice(model, row)
        self.item.update()
        self.sig_slice_selected.emit(model, row)

    def reveal_slice(self, model: int, row: int, zoom: bool = False) -> None:
        """Bring a slice into view: zoom=True fits it; otherwise keep the zoom and pan to it when it is
        off screen, but zoom in around it (REVEAL_ZOOM x its duration) when it would be under
        REVEAL_MIN_PX wide, so that a 4 µs kernel found from a table is visible in a 1 s view."""
        s = self.models[model].slices
        t0, d = float(s.ts_ns[row]), float(max(1, s.dur_ns[row]))
        x0, x1 = self.view_range()
        px_per_ns = max(1.0, self.vb.width()) / max(1e-9, x1 - x0)
        if zoom:
            self.show_range(t0 - d * 0.5, t0 + d * 1.5)
        elif d * px_per_ns < REVEAL_MIN_PX:
            w = max(d * REVEAL_ZOOM, REVEAL_MIN_WINDOW_NS)
            self.show_range(t0 + d / 2 - w / 2, t0 + d / 2 + w / 2)
        elif t0 + d < x0 or t0 > x1:
            w = x1 - x0
            self.show_range(t0 + d / 2 - w / 2, t0 + d / 2 + w / 2)
        ri = self.item.row_of_slice(model, row)
        if ri >= 0:
            self.vb.scroll_to_row(ri)

    def highlight(self, model_rows: dict[int, np.ndarray]) -> None:
        """Outline these slices (model index -> rows); rows are sorted by start time here."""
        out = {}
        for mi, rows in model_rows.items():
            rows = np.asarray(rows, np.int64)
            if len(rows):
                out[mi] = rows[np.argsort(self.models[mi].slices.ts_ns[rows], kind="stable")]
        self.item.set_highlights(out)

    def bring_rows_into_view(self, model: int, rows: np.ndarray) -> None:
        """Scroll vertically (never in time) to the first of these slices' timeline rows unless one is shown."""
        at = self.item.rows_of_slices(model, np.asarray(rows, np.int64)[:4096])
        at = at[at >= 0]
        if not len(at):
            return
        top, bottom = self.vb.viewRange()[1]
        if not ((at >= top) & (at + 1 <= bottom)).any():
            self.vb.scroll_to_row(int(at.min()))

    def fit_selection(self) -> None:
        """Zoom to the selected slice; with nothing selected, show the whole trace."""
        if self.item.selected is not None:
            self.reveal_slice(*self.item.selected, zoom=True)
        else:
            self.show_range(*self.item._span)

    def zoom_to_step(self, t_ns: float, model: int | None = None) -> bool:
        """Zoom to the ProfilerStep of `model` (default: the first shown rank) that holds t."""
        m = self.steps_model() if model is None else self.models[model]
        st = m.steps if m is not None else None
        if st is None or not len(st):
            return False
        i = int(np.searchsorted(st.ts_ns, t_ns, side="right")) - 1
        if i < 0 or t_ns > st.ts_ns[i] + st.dur_ns[i]:
            return False
        d = float(st.dur_ns[i])
        self.show_range(float(st.ts_ns[i]) - d * 0.02, float(st.ts_ns[i]) + d * 1.02)
        return True

    def _flows_of(self, model: int, row: int) -> list[tuple[int, int, int]]:
        m = self.models[model]
        kind = int(m.slices.kind[row])
        if kind in (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET):
            src = query.launcher_of(m, row)
            return [(model, src, row)] if src >= 0 else []
        out = [(model, row, int(d)) for d in query.launched_by(m, row)[:64]]
        f = m.flows
        fb = np.flatnonzero((f.kind == FlowKind.FWD_BWD) & ((f.src == row) | (f.dst == row)))
        out.extend((model, int(f.src[i]), int(f.dst[i])) for i in fb[:8])
        return out

    # --- events ---------------------------------------------------------------------------------
    def _pos_to_hit(self, scene_pos) -> tuple[int, int] | None:
        if not self.vb.sceneBoundingRect().contains(scene_pos):
            return None
        pt = self.vb.mapSceneToView(scene_pos)
        x0, x1 = self.view_range()
        tol = 3 * (x1 - x0) / max(1.0, self.vb.width())
        return self.item.slice_at(int(np.floor(pt.y())), pt.x(), tol)

    def _on_scene_hover(self, args) -> None:
        pos = args[0]
        hit = self._pos_to_hit(pos)
        if hit is None:
            tip = self._counter_tip(pos)
            if tip:
                QtWidgets.QToolTip.showText(QtGui.QCursor.pos(), tip, self)
            else:
                QtWidgets.QToolTip.hideText()
            return
        QtWidgets.QToolTip.showText(QtGui.QCursor.pos(), slice_tooltip(self.models[hit[0]], hit[1]), self)

    def _counter_tip(self, scene_pos) -> str:
        """Value of the counter row under the cursor (the last sample at or before it)."""
        if not self.vb.sceneBoundingRect().contains(scene_pos):
            return ""
        pt = self.vb.mapSceneToView(scene_pos)
        ri = int(np.floor(pt.y()))
        if not 0 <= ri < len(self.rows) or self.rows[ri].track != COUNTER:
            return ""
        c = self.counters[self.rows[ri].depth]
        i = int(c.ts_ns.searchsorted(query.ns_floor(pt.x()), side="right")) - 1
        if i < 0:
            return ""
        v = float(c.value[i])
        shown = fmt_bytes(v) if "memory" in c.label else f"{v:.0f} %"
        return f"{html.escape(c.label.split(' (')[0])}: <b>{shown}</b> at {fmt_ns(c.ts_ns[i])}"

    def _on_scene_clicked(self, ev) -> None:
        if ev.button() == QtCore.Qt.MouseButton.RightButton and not ev.double():
            hit = self._pos_to_hit(ev.scenePos())
            if hit is not None:
                self.context_menu(*hit).popup(QtGui.QCursor.pos())
            return
        if ev.double() or ev.button() != QtCore.Qt.MouseButton.LeftButton:
            return
        hit = self._pos_to_hit(ev.scenePos())
        if hit is None:
            if self.vb.sceneBoundingRect().contains(ev.scenePos()):
                self.select_slice(0, -1)
            return
        self.select_slice(hit[0], hit[1], reveal=False)

    def context_menu(self, model: int, row: int) -> QtWidgets.QMenu:
        """Right-click on a slice: select + zoom, find all with its name, copy its name."""
        name = self.models[model].name(row)
        menu = QtWidgets.QMenu(self)
        menu.addAction("Zoom to slice", lambda: (self.select_slice(model, row), self.reveal_slice(model, row, True)))
        menu.addAction(f"Find all “{name[:40]}”", lambda: self.sig_search_requested.emit(name))
        menu.addAction("Copy name", lambda: QtWidgets.QApplication.clipboard().setText(name))
        return menu

    def _on_vb_double_clicked(self, t_ns: float, y: float) -> None:
        ri = int(np.floor(y))
        if 0 <= ri < len(self.rows) and self.rows[ri].kind == TrackKind.STEPS:
            self.zoom_to_step(t_ns, self.rows[ri].model)
            return
        hit = self.item.slice_at(ri, t_ns, 0)
        if hit is not None:
            self.reveal_slice(hit[0], hit[1], zoom=True)

    def _on_axis_anchor(self, text: str) -> None:
        self.anchor_label.setText(f"t₀ = {text}" if text else "")

    def _on_vb_range(self, *_):
        x0, x1 = self.view_range()
        self.sig_range_changed.emit(x0, x1)

    def _on_labels_toggled(self, model: int, track: int, kind: int) -> None:
        self.toggle_track(model, track)

    def keyPressEvent(self, ev: QtGui.QKeyEvent) -> None:
        k = ev.key()
        Key = QtCore.Qt.Key
        if k == Key.Key_W:
            self.vb.zoom_at(0.7)
        elif k == Key.Key_S:
            self.vb.zoom_at(1 / 0.7)
        elif k == Key.Key_A:
            self.vb.pan_by(-0.2)
        elif k == Key.Key_D:
            self.vb.pan_by(0.2)
        elif k == Key.Key_F:
            self.fit_selection()
        elif k == Key.Key_Escape:
            self.select_slice(0, -1)
        else:
            super().keyPressEvent(ev)
            return
        ev.accept()


def slice_tooltip(m: TraceModel, row: int) -> str:
    s = m.slices
    lines = [f"<b>{html.escape(m.name(row)[:200])}</b>",
             f"{Kind(int(s.kind[row])).name.lower()} · {html.escape(m.track_label(int(s.track[row])))}",
             f"duration {fmt_ns(s.dur_ns[row])} · start {fmt_ns(s.ts_ns[row])}"]
    dims = m.strings[s.at("input_dims", row)]
    if dims and dims != "[]":
        lines.append(f"shapes {html.escape(dims[:160])}")
    types = m.strings[s.at("input_types", row)]
    if types and types != "[]":
        lines.append(f"dtypes {html.escape(types[:160])}")
    grid = m.strings[s.at("grid", row)]
    if grid:
        lines.append(f"grid {grid} · block {m.strings[s.at('block', row)]}")
    return "<br>".join(lines)


class RowScrollBar(QtWidgets.QScrollBar):
    """Vertical scroll bar over the timeline's rows (kept in sync with drag / shift+wheel scrolling).
    Always takes its width (disabled when every row fits): plots under the timeline reserve the same
    right margin, so that one time sits at the same x in the timeline and in them."""

    def __init__(self, timeline: TimelineWidget, parent=None) -> None:
        super().__init__(QtCore.Qt.Orientation.Vertical, parent)
        self.timeline = timeline
        self._syncing = False
        timeline.vb.sigYRangeChanged.connect(self._on_vb_rows)
        timeline.vb.sigResized.connect(self._on_vb_rows)
        timeline.sig_rows_changed.connect(self._on_vb_rows)
        self.valueChanged.connect(self._on_value_changed)

    def _on_vb_rows(self, *_) -> None:
        vb = self.timeline.vb
        top = vb.viewRange()[1][0]
        vis = vb.visible_rows()
        self._syncing = True
        self.setRange(0, max(0, int(np.ceil(vb.n_rows - vis))))
        self.setPageStep(max(1, int(vis)))
        self.setValue(int(round(top)))
        self._syncing = False
        self.setEnabled(vb.n_rows > vis)

    def _on_value_changed(self, v: int) -> None:
        if not self._syncing:
            vb = self.timeline.vb
            vb.scroll_rows(v - vb.viewRange()[1][0])
