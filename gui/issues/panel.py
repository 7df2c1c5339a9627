"""IssuesPanel: findings sorted by impact with severity icons, details (evidence, source, fix), checks not
run, and the per-step breakdown. Analysis runs in a superqt worker right after set_trace_set(); the panel
fills in when it returns, without blocking the UI thread.

Wiring (main window):
    panel.sig_finding_selected.connect(
        lambda mi, t0, t1, rows: (timeline.show_range(t0, t1), timeline.highlight({mi: rows})))
    panel.sig_range_requested.connect(timeline.show_range)
or `gui.issues.connect_timeline(panel, timeline)`.
"""
from __future__ import annotations

import logging
import re

import numpy as np
import shiboken6
from PySide6 import QtCore, QtWidgets
from superqt.utils import create_worker

from core import units
from core.analysis.breakdown import DEFAULT_KERNEL_WAIT_MAX_NS, step_breakdown
from core.analysis.headline import fixes_text, step_text
from core.rules import Analysis, iter_analyze
from core.rules.config import load_config
from gui import lane
from gui.issues.breakdown_view import BreakdownView
from gui.issues.details import FindingDetails, not_run_text
from gui.issues.model import COLUMNS, SORT_ROLE, TRY_COLUMN, FindingsModel, SourceSortProxy
from gui.timeline.rows import model_short

log = logging.getLogger(__name__)


def _analysis_job(trace_set, config):
    """Worker body: rules (yielding progress), then the per-step breakdown of every model. Several ranks /
    cycles: rank by rank, then across ranks (core/ranks, the path of `ptprof analyze`)."""
    if len(trace_set.models) > 1:
        from core.ranks.inset import iter_analyze_set
        result = yield from iter_analyze_set(trace_set, config)
    else:
        result = yield from iter_analyze(trace_set, config)
    kw = int(config.get("gpu_idle", {}).get("kernel_wait_max_ns", DEFAULT_KERNEL_WAIT_MAX_NS))
    breakdowns = [step_breakdown(m, kw) for m in trace_set.models]
    return result, breakdowns


STATUS_LINES = 3
# more findings than this (a run of 100+ ranks: 1,153; 97 at 32 ranks): rows of a fixed height, see _fit_rows
MANY_ROWS = 64


def _glued(text: str) -> str:
    """No line break inside "8.13 ms/step" (the narrow dock wrapped it as "8.13" + "ms/" + "step")."""
    return re.sub(r"(\d) (?=[A-Za-zµ%])", "\\1\u00a0", text).replace("/", "/\u2060")


def _plural(n: int, word: str) -> str:
    return units.count(n, word)


class WrapLabel(QtWidgets.QLabel):
    """A word-wrapped label never given fewer lines than its text at its width: its minimum height follows
    its width. A plain QLabel under the dock's splitter got a fixed share and clipped its first and last lines
    ("Checks not run" and the status line at 1366x768, drawn over the findings table's edge)."""

    def __init__(self, text: str = "", floor_px: int = 0) -> None:
        super().__init__(text)
        self.setWordWrap(True)
        self.setAlignment(QtCore.Qt.AlignmentFlag.AlignLeft | QtCore.Qt.AlignmentFlag.AlignTop)
        self.floor_px = floor_px
        self.setMinimumHeight(floor_px)

    def setText(self, text: str) -> None:  # noqa: N802 (Qt API)
        super().setText(text)
        self.fit_height()

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        self.fit_height()

    def fit_height(self) -> None:
        need = max(self.floor_px, self.heightForWidth(self.width()) if self.width() > 0 and self.text() else 0)
        if need != self.minimumHeight():
            self.setMinimumHeight(need)


class _TitleDelegate(QtWidgets.QStyledItemDelegate):
    """Finding titles wrap, up to TITLE_LINES lines a row (the whole title is in Details and the tooltip)."""
    TITLE_LINES = 3

    def sizeHint(self, option, index):  # noqa: N802 (Qt API)
        size = super().sizeHint(option, index)
        cap = self.TITLE_LINES * option.fontMetrics.lineSpacing() + 6
        return QtCore.QSize(size.width(), min(size.height(), cap))


class IssuesPanel(QtWidgets.QWidget):
    sig_finding_selected = QtCore.Signal(int, object, object, object)
    """(model index, t0_ns, t1_ns, evidence rows: np.ndarray int64) of the selected finding."""
    sig_range_requested = QtCore.Signal(object, object)
    """(t0_ns, t1_ns): a step clicked in the breakdown view."""
    sig_analysis_finished = QtCore.Signal(object)
    """The Analysis, once the worker has returned and the panel is filled."""
    sig_progress_changed = QtCore.Signal(str, float)
    """(rule id, fraction) while the analysis runs."""
    sig_try_requested = QtCore.Signal(str)
    """A switch spec (core/runner/switches.py): Try it on the selected finding (gui/tryfix)."""

    def __init__(self, parent=None, config: dict | None = None) -> None:
        super().__init__(parent)
        self._config = config if config is not None else load_config()
        self._trace_set = None
        self._analysis: Analysis | None = None
        self._breakdowns: list = []
        self._worker = None
        self._token = 0

        # the step line is long; the narrow dock wraps it. Room for the finished line (3 lines in a ~530 px
        # dock) from the start, text at the top: when the analysis ended, "Analysing…" (1 line) became 3 and
        # pushed the table down ~30 px; more lines where the dock is narrower (never clipped)
        self.status = WrapLabel("No trace loaded.")
        self.status.floor_px = STATUS_LINES * self.status.fontMetrics().lineSpacing() + 2
        self.status.fit_height()
        self.cancel_button = QtWidgets.QPushButton("Cancel")
        self.cancel_button.setVisible(False)
        # its row keeps the button's height when it hides at the end of the analysis: the table under it
        # moved up 8 px ~1 s after a trace opened
        policy = self.cancel_button.sizePolicy()
        policy.setRetainSizeWhenHidden(True)
        self.cancel_button.setSizePolicy(policy)
        self.rank_combo = QtWidgets.QComboBox()
        self.rank_combo.setVisible(False)
        self.model = FindingsModel(self)
        self.proxy = SourceSortProxy(self)  # the model sorts itself: one Python sort, not data() per comparison
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(SORT_ROLE)
        self.table = QtWidgets.QTableView()
        self.table.setModel(self.proxy)
        self.table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setSortingEnabled(True)
        self.table.verticalHeader().setVisible(False)
        self.table.setWordWrap(True)  # long titles wrap (1366x768 cut them to ~20 characters)
        # the columns fit the dock (Problem stretches and elides; full text on hover): no horizontal
        # scrolling, so selecting a finding can never scroll Severity out of view
        self.table.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.table.setTextElideMode(QtCore.Qt.TextElideMode.ElideNone)
        self.table.verticalHeader().setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        self.table.setItemDelegateForColumn(COLUMNS.index("Problem"), _TitleDelegate(self.table))
        self.table.horizontalHeader().setStretchLastSection(False)
        self.table.horizontalHeader().setMinimumSectionSize(36)
        # at least two and a half findings of three lines in view: at 1366x768 "Checks not run" and the status
        # line left the table one row of nine
        line = self.table.fontMetrics().lineSpacing()
        self.table.setMinimumHeight(int(self.table.horizontalHeader().sizeHint().height() + 2.5 * (3 * line + 8)))
        self.csv_export = None  # callable: "Export findings as CSV…" (set by gui/integrations.py)
        self.table.setContextMenuPolicy(QtCore.Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._on_table_context_menu_requested)
        self.not_run = WrapLabel()
        self.not_run.setVisible(False)
        self.details = FindingDetails()
        self.breakdown = BreakdownView()
        self.tabs = QtWidgets.QTabWidget()
        self.tabs.addTab(self.details, "Details")
        self.tabs.addTab(self.breakdown, "Per-step breakdown")
        # Try it: the selected finding's fix switched on at run time (gui/tryfix); only where a switch exists
        self.try_button = QtWidgets.QPushButton("Try it")
        self.try_button.setVisible(False)
        self.try_button.clicked.connect(self._on_try_button_clicked)
        self.tabs.setCornerWidget(self.try_button, QtCore.Qt.Corner.TopRightCorner)
        self._tried: dict = {}  # what `ptprof try` / Try it measured on this run (tried.json)
        self._current = None  # the selected Finding

        top = QtWidgets.QHBoxLayout()
        top.addWidget(self.status, 1)
        top.addWidget(self.cancel_button)
        top.addWidget(self.rank_combo)
        upper = QtWidgets.QWidget()
        ul = QtWidgets.QVBoxLayout(upper)
        ul.setContentsMargins(0, 0, 0, 0)
        ul.addLayout(top)
        ul.addWidget(self.table, 1)
        ul.addWidget(self.not_run)
        split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        split.addWidget(upper)
        split.addWidget(self.tabs)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 1)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addWidget(split)

        self.table.selectionModel().currentRowChanged.connect(self._on_table_current_changed)
        self.table.clicked.connect(self._on_table_clicked)
        self.rank_combo.currentIndexChanged.connect(self._on_rank_changed)
        self.cancel_button.clicked.connect(self._on_cancel_clicked)
        self.breakdown.sig_step_clicked.connect(self.sig_range_requested)

    # --- public API -----------------------------------------------------------------------
    def context_menu(self) -> QtWidgets.QMenu:
        menu = QtWidgets.QMenu(self.table)
        act = menu.addAction("Export findings as CSV…")
        act.setEnabled(self.csv_export is not None and self.model.rowCount() > 0)
        if self.csv_export is not None:
            act.triggered.connect(self.csv_export)
        return menu

    def _on_table_context_menu_requested(self, pos) -> None:
        self.context_menu().exec(self.table.viewport().mapToGlobal(pos))

    def set_trace_set(self, trace_set, why_none: str = "No trace loaded.") -> None:
        """Clear and analyse `trace_set` in a worker (a previous run is cancelled and its result dropped).
        None: show `why_none` (e.g. what the current tab is instead of a trace)."""
        self.cancel()
        self._trace_set = trace_set
        self._clear()
        if trace_set is None:
            self.status.setText(why_none)
            return
        self._token += 1
        token = self._token
        self.status.setText("Analysing…")
        self.cancel_button.setVisible(True)
        self._worker = create_worker(
            _analysis_job, trace_set, self._config, _start_thread=False,
            _connect={"yielded": lambda p, t=token: self._on_worker_yielded(t, p),
                      "returned": lambda r, t=token: self._on_worker_returned(t, r),
                      "errored": lambda e, t=token: self._on_worker_errored(t, e)})
        lane.start(self._worker, lane.ISSUES)  # after the health check and the shown table (gui/lane.py)

    def set_analysis(self, trace_set, analysis: Analysis, breakdowns=None) -> None:
        """Show a finished analysis (what the worker does on return; also for reports and tests)."""
        self._trace_set = trace_set
        self._analysis = analysis
        kw = int(self._config.get("gpu_idle", {}).get("kernel_wait_max_ns", DEFAULT_KERNEL_WAIT_MAX_NS))
        self._breakdowns = list(breakdowns) if breakdowns is not None else [step_breakdown(m, kw)
                                                                            for m in trace_set.models]
        from core.runner.bundle import is_bundle
        from core.tryfix.store import tried_for
        path = getattr(trace_set, "path", None)
        self.model.try_enabled = bool(path) and is_bundle(path)
        self._tried = tried_for(path)
        self._fit_rows(len(analysis.findings))
        self.model.set_findings(analysis.findings)
        self.table.sortByColumn(0, QtCore.Qt.SortOrder.DescendingOrder)  # errors first, then by saving / impact
        self._fit_columns()
        n_err = sum(1 for f in analysis.findings if f.severity.label == "error")
        n_warn = sum(1 for f in analysis.findings if f.severity.label == "warning")
        step, fixes = step_text(analysis.summary), fixes_text(analysis.summary)
        counts = ", ".join(_plural(n, w) for n, w in ((n_err, "error"), (n_warn, "warning")) if n)
        self.status.setText(f"{_plural(len(analysis.findings), 'finding')}{': ' + counts if counts else ''} · "
                            f"{_plural(analysis.summary.get('steps', 0), 'step')}{', ' + _glued(step) if step else ''}"
                            f"{' · ' + _glued(fixes) if fixes else ''} · analysed in {analysis.elapsed_s:.2f} s")
        # shown once: here, each reason once for all ranks it applies to; always set, since a tab switch hands
        # this panel another trace's analysis and the label must not keep the last one's reasons
        self.not_run.setText("Checks not run: " + not_run_text(analysis.not_run) if analysis.not_run else "")
        self.not_run.setVisible(bool(analysis.not_run))
        # "Checks not run: source" is the analysis' word that the trace has no Python stacks
        self.details.stacks = not any(getattr(n, "rule", None) == "source" for n in analysis.not_run)
        self.details.show_finding(None)
        self.rank_combo.blockSignals(True)
        self.rank_combo.clear()
        for m in trace_set.models:
            self.rank_combo.addItem(model_short(m))  # a bundle's cycles: "rank 0 · cycle 2", not "rank 0" twice
        self.rank_combo.setVisible(len(trace_set.models) > 1)
        self.rank_combo.blockSignals(False)
        self.breakdown.set_breakdown(self._breakdowns[0] if self._breakdowns else None)
        self.sig_analysis_finished.emit(analysis)

    def _fit_columns(self) -> None:
        """Every column but Problem sized to its contents; Problem takes the rest of the width."""
        header = self.table.horizontalHeader()
        problem = COLUMNS.index("Problem")
        for hidden in ("Rule", "Count"):  # Details names the rule, the title says the count: Problem needs the width
            if hidden in COLUMNS:
                self.table.setColumnHidden(COLUMNS.index(hidden), True)
        # Try it only for a run bundle's findings (its command can run again): elsewhere the width is Problem's
        self.table.setColumnHidden(TRY_COLUMN, not self.model.try_enabled)
        for col in range(self.model.columnCount()):
            mode = (QtWidgets.QHeaderView.ResizeMode.Stretch if col == problem
                    else QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
            header.setSectionResizeMode(col, mode)

    def _fit_rows(self, n: int) -> None:
        """Rows sized to their wrapped titles ask every cell of every row for its size on each layout: 1,153
        findings of 128 ranks held the UI thread ~1.5 s, 97 findings of 32 ranks 80 ms (with the result's paint
        one 113 ms gap). Past MANY_ROWS the rows get the title's cap (the delegate's TITLE_LINES); columns are
        sized from 64 rows."""
        many = n > MANY_ROWS
        self.table.horizontalHeader().setResizeContentsPrecision(64)  # as the stats tables: 64 rows, not all
        rows = self.table.verticalHeader()
        if many:
            rows.setDefaultSectionSize(_TitleDelegate.TITLE_LINES * self.table.fontMetrics().lineSpacing() + 6)
        rows.setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.Fixed if many
                                  else QtWidgets.QHeaderView.ResizeMode.ResizeToContents)

    def analysis(self) -> Analysis | None:
        return self._analysis

    def trace_set(self):
        return self._trace_set

    def show_try_message(self, text: str) -> None:
        """A Try it outcome or refusal (one line) in the status line, above the table."""
        self.status.setText(text)

    def refresh_tried(self) -> None:
        """Re-read tried.json (a try just measured a fix) and show the selected finding again."""
        from core.tryfix.store import tried_for
        self._tried = tried_for(getattr(self._trace_set, "path", None))
        if self._current is not None:
            self._show(self._current)

    def measured_text(self, f) -> str:
        if not self._tried:
            return ""
        from core.tryfix.store import measured_for_rule, measured_text
        hit = measured_for_rule(self._tried, f.rule)
        return f"{measured_text(hit[1], prefix=False)} with {hit[0]} (Try it)" if hit else ""

    def is_running(self) -> bool:
        return self._worker is not None

    def cancel(self) -> None:
        if self._worker is not None:
            self._token += 1  # drop whatever it still returns
            if not lane.drop(self._worker):  # queued: taken off the lane; running: asked to stop
                self._worker.quit()
            self._worker = None
        self.cancel_button.setVisible(False)

    def select_row(self, row: int) -> None:
        """Select the finding shown at `row` (0 = largest impact)."""
        self.table.selectRow(row)

    # --- slots ------------------------------------------------------------------------------
    def _clear(self) -> None:
        self._analysis = None
        self._breakdowns = []
        self._current = None
        self._tried = {}
        self.try_button.setVisible(False)
        self.model.try_enabled = False
        self.model.set_findings([])
        self.not_run.setVisible(False)
        self.details.show_finding(None)
        self.breakdown.set_breakdown(None)

    def _on_cancel_clicked(self) -> None:
        self.cancel()
        self.status.setText("Analysis cancelled.")

    def _on_worker_yielded(self, token: int, prog) -> None:
        if token != self._token or not shiboken6.isValid(self.status):
            return
        fraction, rule_id = prog
        self.status.setText(f"Analysing… {rule_id} ({100 * fraction:.0f} %)")
        self.sig_progress_changed.emit(str(rule_id), float(fraction))

    def _on_worker_returned(self, token: int, result) -> None:
        if token != self._token or not shiboken6.isValid(self.status):
            return
        self._worker = None
        self.cancel_button.setVisible(False)
        analysis, breakdowns = result
        self.set_analysis(self._trace_set, analysis, breakdowns)

    def _on_worker_errored(self, token: int, exc: BaseException) -> None:
        if token != self._token or not shiboken6.isValid(self.status):
            return
        self._worker = None
        self.cancel_button.setVisible(False)
        log.warning("analysis failed: %r", exc)
        self.status.setText(f"Analysis failed: {type(exc).__name__}: {exc}")

    def _on_table_current_changed(self, current: QtCore.QModelIndex, _previous) -> None:
        if not current.isValid():
            return
        row = self.proxy.mapToSource(current).row()
        f = self.model.finding(row)
        self._show(f, self.model.try_spec(row))
        t0, t1 = f.time_ranges[0] if f.time_ranges else (0, 0)
        rows = np.asarray(f.evidence_rows, dtype=np.int64)
        self.sig_finding_selected.emit(int(f.model_index), int(t0), int(t1), rows)

    def _show(self, f, spec: str | None = None) -> None:
        self._current = f
        if spec is None and self.model.try_enabled:
            from core.tryfix.fixes import switch_for_rule
            spec = switch_for_rule(f.rule)
        self.details.show_finding(f, measured=self.measured_text(f))
        self.try_button.setVisible(bool(spec))
        if spec:
            self.try_button.setText(f"Try it: {spec}")
            self.try_button.setToolTip(f"Run this script again with {spec} switched on (no code change), "
                                       "measure what it saves, and compare before vs after")
            self.try_button.setProperty("spec", spec)

    def _on_try_button_clicked(self) -> None:
        spec = self.try_button.property("spec")
        if spec:
            self.sig_try_requested.emit(str(spec))

    def _on_table_clicked(self, index: QtCore.QModelIndex) -> None:
        if index.isValid() and index.column() == TRY_COLUMN:
            spec = self.model.try_spec(self.proxy.mapToSource(index).row())
            if spec:
                self.sig_try_requested.emit(spec)

    def _on_rank_changed(self, index: int) -> None:
        if 0 <= index < len(self._breakdowns):
            self.breakdown.set_breakdown(self._breakdowns[index])
