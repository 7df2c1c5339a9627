"""TraceView: everything shown for one open trace set (one tab): search + rank filter + legend,
the timeline, memory/NVML plots x-linked to it, and bottom tabs (Details, Kernels, Ops, Steps, HTA)."""
from __future__ import annotations

import numpy as np
import shiboken6
from PySide6 import QtCore, QtWidgets

from core.analysis.memory import counter_series, memory_series
from core.trace import query
from core.trace.model import TraceSet, TrackKind
from core.units import fmt_bytes
from gui import lane
from gui.health_banner import HealthBanner
from gui.memory.box import PlotsBox
from gui.memory.panel import MemoryPanel
from gui.stats.panels import KernelsPanel, OpsPanel, StatsPanel, StepsPanel
from gui.theme import Theme
from gui.timeline.details import DetailsPanel
from gui.timeline.legend import Legend
from gui.timeline.rank_strip import MANY_RANKS, RankStrip
from gui.timeline.rows import CounterRow, model_title
from gui.timeline.search import SearchBar
from gui.timeline.view import RowScrollBar, TimelineWidget


def counter_rows(ts: TraceSet) -> list[CounterRow]:
    """Timeline counter rows: allocated memory per GPU of each rank (full row = peak reserved) and
    NVML GPU utilisation (full row = 100 %) under the rank that ran on that GPU (under the first
    shown rank when no single rank did)."""
    rows = []
    for mi, m in enumerate(ts.models):
        for s in memory_series(m) or memory_series(m, include_cpu=True):  # CPU memory of a CPU run
            top = float(max(1, s.peak_reserved_bytes, s.peak_allocated_bytes))
            rows.append(CounterRow(mi, f"{s.label} memory (0–{fmt_bytes(top)})", s.ts_ns,
                                   s.allocated_bytes.astype(float), top, "#4a7fd4"))
    spans = [m.span_ns for m in ts.models if len(m.slices)]
    t0, t1 = (min(a for a, _ in spans), max(b for _, b in spans)) if spans else (0, 0)
    for c in counter_series(ts.nvml, ts.nvml_strings) if ts.nvml is not None else []:
        inside = (c.ts_ns >= t0) & (c.ts_ns <= t1)
        if c.name.endswith("/gpu_util") and inside.any():  # samples outside the window: an empty row
            rows.append(CounterRow(_model_of_gpu(ts, c.name.split("/")[0]), f"NVML {c.name.split('/')[0]} util (0–100 %)",
                                   c.ts_ns, c.value, 100.0, "#2e9e4f"))
    return rows


def _model_of_gpu(ts: TraceSet, gpu: str) -> int:
    """Index of the one model with GPU streams on NVML device `gpu` ("gpu1"), else -1."""
    try:
        dev = int(gpu.removeprefix("gpu"))
    except ValueError:
        return -1
    hits = [mi for mi, m in enumerate(ts.models)
            if ((m.tracks.kind == TrackKind.GPU_STREAM) & (m.tracks.device == dev)).any()]
    return hits[0] if len(hits) == 1 else -1



class TraceView(QtWidgets.QWidget):
    """A trace's tab. It opens in four event-loop turns, so that none freezes the window for long on
    a big trace: the timeline, tables (queued), details, search and legend first, then (after the
    timeline's first paint) the memory plot's frame, its curves the turn after and, after their paint,
    the NVML plot, in the height already planned for them (`ready`, `sig_ready`)."""
    sig_slice_selected = QtCore.Signal(int, int)  # (model index, slice row); -1 = none
    sig_ready = QtCore.Signal()  # every part of the view is filled (the NVML plot's turn, the last)

    tab_kind = "trace"  # what core.session.Session.set_tab reports for this tab (gui/main_window.py)

    def __init__(self, trace_set: TraceSet, indexes: list[query.SliceIndex] | None, theme: Theme,
                 parent=None) -> None:
        super().__init__(parent)
        self.trace_set = trace_set
        self.models = list(trace_set.models)
        self._keep_tab = False
        self.ready = False
        self._plots_started = False
        self.search = SearchBar()
        self.rank_filter = QtWidgets.QComboBox()
        self.rank_filter.setToolTip("Rank filter: which ranks the timeline shows and the tables describe")
        self.legend = Legend(theme)
        self.timeline = TimelineWidget(theme)
        self.memory = MemoryPanel(theme)
        self.memory_box = PlotsBox(self.memory)
        self.details = DetailsPanel()
        self.kernels, self.ops, self.steps = KernelsPanel(), OpsPanel(), StepsPanel()
        self.tabs = QtWidgets.QTabWidget()
        self.tabs.setDocumentMode(True)
        for w, title in ((self.details, "Details"), (self.kernels, "Kernels"), (self.ops, "Ops"),
                         (self.steps, "Steps")):
            self.tabs.addTab(w, title)
        self.hta_placeholder = QtWidgets.QLabel("HTA analyses appear here once the analysis has run.")
        self.hta_placeholder.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
        self.tabs.addTab(self.hta_placeholder, "HTA")
        self._layout()
        self._wire()
        self._load(indexes)

    def _layout(self) -> None:
        top = QtWidgets.QHBoxLayout()
        top.setContentsMargins(4, 2, 4, 2)
        self.search.setMinimumWidth(260)
        top.addWidget(self.search, 3)
        top.addSpacing(12)
        top.addWidget(QtWidgets.QLabel("Ranks:"))
        top.addWidget(self.rank_filter, 1)
        # the colour legend gets its own line so that it is never squeezed by the search box
        legend_row = QtWidgets.QHBoxLayout()
        legend_row.setContentsMargins(4, 0, 4, 2)
        legend_row.addWidget(self.legend)
        legend_row.addStretch(1)
        self.split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        pane = QtWidgets.QWidget()
        h = QtWidgets.QHBoxLayout(pane)
        h.setContentsMargins(0, 0, 0, 0)
        h.setSpacing(0)
        h.addWidget(self.timeline, 1)
        self.row_scroll = RowScrollBar(self.timeline)
        h.addWidget(self.row_scroll)
        # same right edge for the plots' view boxes as for the timeline's (left: both label_px wide)
        self.memory.set_right_margin(self.row_scroll.sizeHint().width())
        self.split.addWidget(pane)
        self.split.addWidget(self.memory_box)
        self.split.addWidget(self.tabs)
        # a taller window gives its extra height to the timeline (GPU rows were left below the fold)
        self.split.setStretchFactor(0, 1)
        self.split.setStretchFactor(1, 0)
        self.split.setStretchFactor(2, 0)
        self.split.setSizes([600, 160, 220])
        self._split_by_user = False  # once the user drags the splitter, resizes keep their proportions
        self.split.splitterMoved.connect(self._on_split_splitter_moved)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addLayout(top)
        lay.addLayout(legend_row)
        self.health = HealthBanner()  # "can I trust this trace?" (core.analysis.health), filled by a worker
        lay.addWidget(self.health)
        self.rank_strip = None
        if len(self.models) >= MANY_RANKS:  # the summary lane of a run of many ranks (ranks start folded)
            self.rank_strip = RankStrip(self.timeline.theme)
            lay.addWidget(self.rank_strip)
        lay.addWidget(self.split, 1)

    def _wire(self) -> None:
        self.memory_box.sig_folded_changed.connect(lambda _f: self.fit_splitter())
        self.timeline.sig_slice_selected.connect(self._on_timeline_selected)
        self.timeline.sig_range_changed.connect(self._on_timeline_range)
        self.timeline.sig_search_requested.connect(self._on_timeline_search)
        self.details.sig_goto_requested.connect(self._on_goto)
        self.search.sig_matches_changed.connect(self._on_search_matches)
        self.search.sig_match_selected.connect(self._on_goto)
        self.rank_filter.currentIndexChanged.connect(self._on_rank_filter_changed)
        if self.rank_strip is not None:
            self.rank_strip.sig_rank_clicked.connect(self._on_rank_clicked)
        for panel in self.stats_panels():
            panel.sig_occurrences_selected.connect(self.highlight_slices)
            panel.sig_occurrence_requested.connect(self._on_table_goto)
            panel.sig_range_requested.connect(self.show_range)

    def _load(self, indexes) -> None:
        # the health check, the tables and the Issues analysis start once the plots' turns have
        # painted (_load_nvml releases the lane), not beside any turn
        self._release_lane = lane.hold()
        self.health.check(self.trace_set)
        self.timeline.set_models(self.models, indexes)
        self.timeline.set_counters(counter_rows(self.trace_set))
        self.timeline.vb.sigResized.connect(self._on_timeline_resized)
        self.details.set_models(self.models)
        if self.rank_strip is not None:
            self.rank_strip.set_models(self.models)
        self.search.set_models(self.models)
        self.legend.set_models(self.models)  # now: its line's height is part of the first frame's layout
        self.rank_filter.blockSignals(True)
        if len(self.models) > 1:
            self.rank_filter.addItem("all ranks")
        for m in self.models:
            self.rank_filter.addItem(model_title(m))
        self.rank_filter.setEnabled(False)  # until the memory plots are there (_load_plots)
        self.rank_filter.blockSignals(False)
        self._set_stats_model(None if len(self.models) > 1 else 0)
        # until a slice is clicked (which shows Details) the top kernels (ops on a CPU run) fill the pane,
        # not ~400 px of "Click a slice…"
        counts = getattr(self.trace_set, "counts", None)
        self.tabs.setCurrentWidget(self.kernels if counts is None or counts.kernels else self.ops)
        self.memory.plan(self.trace_set, self.memory_rank())  # the plots' height now, for the first frame's layout
        QtCore.QTimer.singleShot(0, self.fit_splitter)
        QtCore.QTimer.singleShot(0, self.timeline.setFocus)  # W/S/A/D work right away
        # after the timeline's first paint (a timer would fire before it: the paint waited for the plots)
        lane.after_first_paint(self.timeline, self._load_plots)

    def _load_plots(self) -> None:
        """The open's second turn: the memory plot's PlotItem (pyqtgraph builds its view box, axes and
        menus: ~30 ms), in the place the first turn planned for it; its curves the turn after (with
        their first paint they made one 70 + 35 ms gap at 10 GB); the NVML plot after their paint."""
        if not shiboken6.isValid(self) or self.ready or self._plots_started:  # closed / already done
            return
        self._plots_started = True
        self.memory.prepare_plot()
        QtCore.QTimer.singleShot(0, self._fill_plots)

    def _fill_plots(self) -> None:
        if not shiboken6.isValid(self) or self.ready:
            return
        self.memory.set_trace(self.trace_set, self.memory_rank(), nvml=False)
        self.memory.link_x(self.timeline.vb)
        lane.after_first_paint(self.memory, self._load_nvml)

    def _load_nvml(self) -> None:
        if not shiboken6.isValid(self) or self.ready:
            return
        self.memory.set_nvml(self.trace_set)
        self.rank_filter.setEnabled(len(self.models) > 1)
        self.fit_splitter()
        self.ready = True
        lane.hold_until_painted(self.memory)  # the plots' first paint (at once when the view is not shown)
        self._release_lane()
        self.sig_ready.emit()

    def memory_rank(self) -> int | None:
        """Whose memory the plots draw: every rank (None), or past MANY_RANKS the selected rank (at first the
        straggler): 128 ranks drew 257 curves on the UI thread."""
        if self.rank_strip is None:
            return None
        strip = self.rank_strip
        return strip.selected if strip.selected >= 0 else max(strip.straggler, 0)

    def set_straggler(self, model_index: int) -> None:
        """The Issues analysis found this rank to be the straggler: marked on the rank strip."""
        if self.rank_strip is not None and 0 <= model_index < len(self.models):
            self.rank_strip.set_straggler(model_index)

    def _on_rank_clicked(self, mi: int) -> None:
        self.timeline.expand_rank(mi)
        if self.ready:
            self.memory.set_trace(self.trace_set, mi)
        self.fit_splitter()

    def _on_split_splitter_moved(self, *_) -> None:
        self._split_by_user = True

    def resizeEvent(self, ev) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(ev)
        if not self._split_by_user and ev.size().height() != ev.oldSize().height():
            # now, not queued: the layout has already given the splitter its new height, and a queued
            # fit painted the default sizes first (the layout jumped once after a trace opened)
            self.fit_splitter()

    def fit_splitter(self) -> None:
        """Give the timeline the height its rows need; the plots their compact height (or the toggle's
        line when folded; at most 28 % of a short window); tables keep 200 px (22 % of a short window)."""
        total = self.split.height() if self.split.height() > 0 else (sum(self.split.sizes()) or self.height())
        self.memory_box.refresh()
        mem = self.memory_box.wanted_height()
        self.memory_box.setVisible(mem > 0)
        want = (len(self.timeline.rows) + 1) * self.timeline.theme.row_px + 40
        # a short window (1366x768: ~560 px here) gave the timeline ~240 px: the plots and tables give way
        tables = 200 if total >= 800 else max(120, total * 22 // 100)
        if total < 700 and mem > total * 28 // 100 and not self.memory_box.folded:
            mem = max(total * 28 // 100, 0)
        tl = max(200, min(want, total - mem - tables))
        self.split.setSizes([tl, mem, max(120, total - tl - mem)])

    def stats_panels(self) -> list[StatsPanel]:
        return [self.kernels, self.ops, self.steps]

    def _set_stats_model(self, mi: int | None) -> None:
        """Tables of model `mi`, or of every rank (stacked, with a Rank column) for None."""
        pairs = list(enumerate(self.models)) if mi is None else [(mi, self.models[mi])]
        for panel in self.stats_panels():
            panel.set_models(pairs)

    # --- API for the main window / lead -------------------------------------------------------
    def show_range(self, t0_ns: float, t1_ns: float) -> None:
        """Zoom the timeline (and the x-linked plots) to [t0, t1] ns on the trace set's time base."""
        self.timeline.show_range(t0_ns, t1_ns)

    def highlight_slices(self, model_index: int, rows) -> None:
        """Outline these slices of model `model_index` on the timeline (replaces earlier highlights), scrolled
        to their rows when none is in view (a rank 1 finding showed rank 0's empty rows)."""
        rows = np.asarray(rows, np.int64)
        self.timeline.highlight({model_index: rows})
        self.timeline.bring_rows_into_view(model_index, rows)

    def select_slice(self, model_index: int, row: int) -> None:
        self.timeline.select_slice(model_index, row)

    def add_tab(self, widget: QtWidgets.QWidget, title: str, replace_hta: bool = False) -> int:
        """Add a bottom tab (e.g. HTA results). replace_hta swaps out the HTA placeholder."""
        if replace_hta:
            i = self.tabs.indexOf(self.hta_placeholder)
            self.tabs.removeTab(i)
            return self.tabs.insertTab(i, widget, title)
        return self.tabs.addTab(widget, title)

    # --- handlers -----------------------------------------------------------------------------
    def _on_timeline_selected(self, mi: int, row: int) -> None:
        self.details.show_slice(mi, row)
        if row >= 0 and not self._keep_tab:
            self.tabs.setCurrentWidget(self.details)
        self.sig_slice_selected.emit(mi, row)

    def _on_timeline_range(self, t0: float, t1: float) -> None:
        for panel in self.stats_panels():
            panel.view_t_ns = (t0 + t1) / 2

    def _on_timeline_resized(self, *_) -> None:
        """pyqtgraph re-lines-up x-linked plots only when the timeline's range changes; a resize of the
        timeline alone (scroll bar, splitter) would leave them shifted."""
        self.memory.relink_x(self.timeline.vb)

    def _on_goto(self, mi: int, row: int) -> None:
        self.timeline.select_slice(mi, row, reveal=True)

    def _on_table_goto(self, mi: int, row: int) -> None:
        """"Next occurrence" from a table: select and reveal it, but stay on the table's tab."""
        self._keep_tab = True
        try:
            self.timeline.select_slice(mi, row, reveal=True)
        finally:
            self._keep_tab = False

    def _on_timeline_search(self, text: str) -> None:
        self.search.edit.setText(text)
        self.search.run()

    def _on_search_matches(self, per_model: dict) -> None:
        self.timeline.highlight(per_model)

    def _on_rank_filter_changed(self, i: int) -> None:
        if len(self.models) <= 1:
            return
        if i <= 0:
            hidden: set[int] = set()
            mi = None
        else:
            mi = i - 1
            hidden = set(range(len(self.models))) - {mi}
        self.timeline.set_hidden_models(hidden)
        self.search.set_hidden_models(hidden)
        self._set_stats_model(mi)
        self.memory.set_trace(self.trace_set, mi)
        self.fit_splitter()
