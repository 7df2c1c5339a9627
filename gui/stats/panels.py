"""Kernels / Ops / Steps tables over core.analysis results. Selecting a row highlights its
occurrences on the timeline; "Next" zooms to the next one after the current view.

With several ranks shown ("all ranks"), each rank's table is computed and the rows are stacked
with a Rank column in front: filtering by a kernel name then lines the ranks up side by side
(stragglers, imbalance), and every row still maps to its own rank's slices on the timeline."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import shiboken6
from PySide6 import QtCore, QtWidgets
from superqt.utils import create_worker

from core.analysis.metrics import format_metrics, rank_metrics
from core.analysis.stats import kernel_table, op_table
from core.analysis.step_times import BOUNDS
from core.analysis.steps import step_stats
from core.export.tables import kind_labels, step_extras
from core.trace import query
from core.trace.model import Kind, TraceModel
from core.units import fmt_bytes, fmt_ns
from gui import lane
from gui.stats.table_model import Column, ColumnTableModel, FilterProxy, StatsTableView


def _ns(v) -> str:
    return fmt_ns(v)


def _pct(v) -> str:
    return "" if v != v else f"{v:.1f} %"


def _int(v) -> str:
    return f"{int(v):,}" if v >= 0 else ""


class StatsPanel(QtWidgets.QWidget):
    """Filter box + table + occurrence navigation. Subclasses build the columns."""

    sig_occurrences_selected = QtCore.Signal(int, object)  # (model index, slice rows ndarray)
    sig_occurrence_requested = QtCore.Signal(int, int)  # (model index, slice row) to reveal
    sig_range_requested = QtCore.Signal(float, float)  # (t0_ns, t1_ns)
    sig_table_ready = QtCore.Signal()  # columns computed (in a worker) and shown

    filter_hint = "filter by name"
    hide_if_zero: tuple[str, ...] = ()  # column titles hidden when every value is 0

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.model: TraceModel | None = None  # the (first) model shown
        self.model_index = 0
        self.parts: list[Part] = []  # one per rank shown, in row order
        self.view_t_ns = 0.0  # where "Next" starts looking (kept up to date by the owner)
        self.occurrences = np.zeros(0, np.int64)
        self._occ_part: Part | None = None
        self.ready = False
        self._generation = 0
        self._models: list[tuple[int, TraceModel]] = []
        self._worker = None  # the table's worker while it is queued or running
        # a closed tab's table still queued on the lane is dropped (it held the model and cost seconds)
        self._queued = []  # the same worker, reachable after this widget is gone
        self.destroyed.connect(lambda *_, q=self._queued: [lane.drop(w) for w in q])
        self.table_model = ColumnTableModel(parent=self)
        self.proxy = FilterProxy(self)
        self.proxy.setSourceModel(self.table_model)
        self.table = StatsTableView()
        self.table.setModel(self.proxy)
        self.filter = QtWidgets.QLineEdit(placeholderText=self.filter_hint, clearButtonEnabled=True)
        self.filter.textChanged.connect(self.proxy.setFilterFixedString)
        self.filter.textChanged.connect(lambda _t: self._show_row_count())
        self.next_btn = QtWidgets.QPushButton("Next occurrence")
        self.next_btn.setEnabled(False)
        self.next_btn.clicked.connect(self.goto_next)
        self.info = QtWidgets.QLabel()
        self.bar = QtWidgets.QHBoxLayout()
        self.bar.addWidget(self.filter, 1)
        self.bar.addWidget(self.info)
        self.bar.addWidget(self.next_btn)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addLayout(self.bar)
        lay.addWidget(self.table)
        self.table.selectionModel().selectionChanged.connect(self._on_table_selection)

    def set_model(self, model: TraceModel, model_index: int) -> None:
        """Show `model`'s table: computed by core in a worker thread, then shown here."""
        self.set_models([(model_index, model)])

    def set_models(self, models: list[tuple[int, TraceModel]]) -> None:
        """Show the tables of these (model index, model) pairs; several = stacked with a Rank column."""
        self._models = list(models)
        self.model_index, self.model = models[0]
        self.ready = False
        self._generation += 1
        gen = self._generation
        self.table_model.set_columns([])
        self.parts = []
        self.occurrences = np.zeros(0, np.int64)
        self._occ_part = None
        self.next_btn.setEnabled(False)
        self.info.setText("computing…")
        fn = self.prepare()
        if self._worker is not None:
            lane.drop(self._worker)  # still queued: its table is not wanted any more
        build = self.build_columns

        def job(ms):
            # the tables and their columns (kernel names made distinct, string lookups, ...) in the worker:
            # at 128 ranks the UI thread built every rank's columns in one go (issue 33)
            out = []
            for mi, m in ms:
                table = fn(m)
                part = Part(mi, m, table, 0, 0)
                out.append((part, build(m, table, part)))
            return out
        worker = create_worker(job, self._models, _start_thread=False,
                               _connect={"returned": lambda tables, g=gen: self._on_worker_returned(g, tables),
                                         "errored": lambda exc, g=gen: self._on_worker_errored(g, exc)})
        self._worker = worker
        self._queued[:] = [worker]
        worker.finished.connect(lambda w=worker: self._worker_finished(w))
        # the lane (gui/lane.py): one table at a time, the shown one first; a hidden tab's table waits
        lane.start(worker, lane.VISIBLE if self.isVisible() else lane.HIDDEN)

    def _worker_finished(self, worker) -> None:
        if shiboken6.isValid(self) and self._worker is worker:
            self._worker = None
            self._queued.clear()

    def showEvent(self, ev) -> None:  # noqa: N802 (Qt API)
        super().showEvent(ev)
        if self._worker is not None:  # its tab was opened before the table was computed: next in line
            lane.promote(self._worker, lane.VISIBLE)

    def _on_worker_returned(self, gen: int, built) -> None:
        if not shiboken6.isValid(self) or gen != self._generation or self.model is None:
            return  # a newer model or grouping was asked for meanwhile
        parts, per_part = [], []
        start = 0
        for part, cols in built:
            part.start = start
            part.n = len(cols[0].values) if cols else 0
            start += part.n
            parts.append(part)
            per_part.append(cols)
        self.parts = parts
        self.columns_shown(parts)
        columns = per_part[0] if len(parts) == 1 else _stack(parts, per_part)
        self.table_model.set_columns(columns)
        self.proxy.setFilterKeyColumn(1 if len(parts) > 1 else 0)  # the name, not the Rank column
        self.table.sortByColumn(-1, QtCore.Qt.SortOrder.AscendingOrder)
        self.table.resizeColumnsToContents()
        for i, col in enumerate(columns):  # e.g. Device / Device self on a CPU-only trace: 0 ns in every row
            self.table.setColumnHidden(i, col.title in self.hide_if_zero and not np.any(col.values))
        if self.table_model.columnCount():
            self._fit_name_column(1 if len(parts) > 1 else 0)
        self._show_row_count()
        self.ready = True
        self.sig_table_ready.emit()

    def _show_row_count(self) -> None:
        """'61 rows', or '7 of 61 rows' while the filter hides some (the label follows the filter)."""
        if not self.parts:
            return
        total, shown = self.table_model.rowCount(), self.proxy.rowCount()
        n_ranks = len({part.model.rank for part in self.parts})
        # a run bundle's profiler cycles are several traces of one rank: "2 traces", not "2 ranks"
        ranks = "" if len(self.parts) < 2 else (f" · {n_ranks} ranks" if n_ranks == len(self.parts)
                                                 else f" · {len(self.parts)} traces")
        self.info.setText(f"{shown:,} of {total:,} rows{ranks}" if shown != total else f"{total:,} rows{ranks}")

    csv_key_column = "name"  # the column of the exported CSV (core.export.tables) that row_key() matches

    def row_key(self, part: "Part", row: int):
        """What identifies `row` of `part` in the exported CSV's csv_key_column."""
        raise NotImplementedError

    def shown_keys(self) -> dict[int, set] | None:
        """None while no filter is set; else, per rank, the csv_key_column values of the rows the filter
        shows: 'Export table as CSV…' writes those rows only, as the table shows them."""
        if not self.filter.text() or not self.parts:
            return None
        starts = np.array([p.start for p in self.parts], np.int64)
        keys: dict[int, set] = {p.model.rank: set() for p in self.parts}
        for r in range(self.proxy.rowCount()):
            src = self.proxy.mapToSource(self.proxy.index(r, 0)).row()
            part = self.parts[int(np.searchsorted(starts, src, side="right")) - 1]
            keys[part.model.rank].add(self.row_key(part, src - part.start))
        return keys

    def _fit_name_column(self, col: int) -> None:
        """The name column: 160-420 px, wider up to its contents when the other columns leave room (a
        narrow table's last column stretched over the space while names were cut at 420 px)."""
        natural = self.table.columnWidth(col)
        others = sum(self.table.columnWidth(c) for c in range(self.table_model.columnCount())
                     if c != col and not self.table.isColumnHidden(c))
        room = self.table.viewport().width() - others
        self.table.setColumnWidth(col, max(min(420, max(160, natural)), min(natural, room)))

    def _on_worker_errored(self, gen: int, exc: BaseException) -> None:
        if shiboken6.isValid(self) and gen == self._generation:
            self.info.setText(f"could not compute: {exc}")

    def prepare(self):
        """On the UI thread: the function (model -> table) the worker runs; it must not touch widgets."""
        return self.compute

    def compute(self, model: TraceModel):
        raise NotImplementedError

    def columns_shown(self, parts: list["Part"]) -> None:
        """On the UI thread once the parts are placed (build_columns runs in the worker: no Qt there)."""

    def build_columns(self, model: TraceModel, table, part: "Part") -> list[Column]:
        """Columns of one model's table; per-row state a subclass needs later goes on `part.state`."""
        raise NotImplementedError

    def occurrences_of(self, part: "Part", row: int) -> np.ndarray:
        """Slice rows (of part.model) of the table row `row` of that part, in time order."""
        return np.zeros(0, np.int64)

    def part_of(self, source_row: int) -> tuple["Part", int]:
        for part in self.parts:
            if source_row < part.start + part.n:
                return part, source_row - part.start
        raise IndexError(source_row)

    def select_source_row(self, source_row: int) -> None:
        idx = self.proxy.mapFromSource(self.table_model.index(source_row, 0))
        self.table.selectRow(idx.row())

    def _on_table_selection(self, *_) -> None:
        rows = self.table.selectionModel().selectedRows()
        if not rows or not self.parts:
            return
        part, row = self.part_of(self.proxy.mapToSource(rows[0]).row())
        self._occ_part = part
        self.occurrences = self.occurrences_of(part, row)
        self.next_btn.setEnabled(len(self.occurrences) > 0)
        self.info.setText(f"{len(self.occurrences):,} on timeline" if len(self.occurrences) else "")
        self.sig_occurrences_selected.emit(part.model_index, self.occurrences)

    def goto_next(self) -> int:
        part = self._occ_part
        if part is None or not len(self.occurrences):
            return -1
        row = query.next_after(part.model, self.occurrences, self.view_t_ns)
        self.view_t_ns = float(part.model.slices.ts_ns[row])
        self.sig_occurrence_requested.emit(part.model_index, row)
        return row


@dataclass(eq=False)
class Part:
    """The rows one model contributes to a table: source rows [start, start + n)."""

    model_index: int
    model: TraceModel
    table: object
    start: int
    n: int
    state: dict = field(default_factory=dict)


def _stack(parts: list[Part], per_part: list[list[Column]]) -> list[Column]:
    """One table of several ranks' columns, a Rank column first; tooltips map back to their part."""
    offsets = np.array([p.start for p in parts], np.int64)
    ranks = np.concatenate([np.full(p.n, p.model.rank if p.model.rank is not None else p.model_index, np.int64)
                            for p in parts])
    out = [Column("Rank", ranks, lambda v: str(int(v)), align_right=False)]
    for j, first in enumerate(per_part[0]):
        cols = [cols[j] for cols in per_part]
        values = np.concatenate([np.asarray(c.values) for c in cols]) if cols else np.zeros(0)
        tooltip = _stacked_tooltip(offsets, cols) if first.tooltip is not None else None
        out.append(Column(first.title, values, first.fmt, tooltip, first.align_right))
    return out


def _stacked_tooltip(offsets: np.ndarray, cols: list[Column]):
    def tooltip(r: int):
        k = int(np.searchsorted(offsets, r, side="right")) - 1
        tip = cols[k].tooltip
        return tip(r - int(offsets[k])) if tip is not None else None
    return tooltip


def _share_tip(kind) -> str:
    return {Kind.KERNEL: "share of all kernel time", Kind.MEMCPY: "share of all memcpy time",
            Kind.MEMSET: "share of all memset time"}.get(Kind(int(kind)), "")


class KernelsPanel(StatsPanel):
    filter_hint = "filter kernels by name"

    def compute(self, m: TraceModel):
        return kernel_table(m)  # the same rows as kernels.csv (core.export.tables.kernels)

    def build_columns(self, m: TraceModel, kt, part: Part) -> list[Column]:
        part.state["names"] = kt.name
        full = m.strings.lookup(kt.name)
        short = np.array(query.distinct_kernel_names(full), dtype=object)  # unique per row
        return [
            Column("Kernel", short, fmt=str, tooltip=lambda r: full[r], align_right=False),
            Column("Kind", np.array(kind_labels(kt.kind), dtype=object), str, align_right=False),
            Column("Calls", kt.calls, _int),
            Column("Total", kt.total_ns, _ns),
            Column("Mean", kt.mean_ns, _ns),
            Column("Min", kt.min_ns, _ns),
            Column("Max", kt.max_ns, _ns),
            Column("p50", kt.p50_ns, _ns),
            Column("p95", kt.p95_ns, _ns),
            Column("Std dev", kt.stddev_ns, _ns),
            Column("% of kind time", kt.gpu_pct, _pct, tooltip=lambda r: _share_tip(kt.kind[r])),
            Column("Grid", np.array(m.strings.lookup(kt.grid), dtype=object), str),
            Column("Block", np.array(m.strings.lookup(kt.block), dtype=object), str),
            Column("Registers", kt.registers, _int),
            Column("Occupancy", kt.occupancy_pct.astype(float), _pct),
        ]

    def row_key(self, part: Part, row: int) -> str:
        return part.model.strings[int(part.state["names"][row])]

    def occurrences_of(self, part: Part, row: int) -> np.ndarray:
        sid = int(part.state["names"][row])
        s = part.model.slices
        rows = np.flatnonzero(s.name == sid)
        return rows[np.argsort(s.ts_ns[rows], kind="stable")]


class OpsPanel(StatsPanel):
    filter_hint = "filter ops by name"
    hide_if_zero = ("Device", "Device self")  # a CPU run: no device time to show

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.group = QtWidgets.QComboBox()
        self.group.addItems(["group by name", "group by name + input shapes"])
        self.group.currentIndexChanged.connect(self._on_group_changed)
        self.bar.insertWidget(1, self.group)

    def _on_group_changed(self, _i: int) -> None:
        if self._models:
            self.set_models(self._models)

    def prepare(self):
        by_shapes = self.group.currentIndex() == 1
        return lambda m: (by_shapes, op_table(m, by_shapes=by_shapes))

    def build_columns(self, m: TraceModel, result, part: Part) -> list[Column]:
        by_shapes, ot = result
        part.state.update(ot=ot, by_shapes=by_shapes)
        names = np.array(m.strings.lookup(ot.name), dtype=object)
        cols = [
            Column("Op", names, str, tooltip=lambda r: names[r], align_right=False),
            Column("Calls", ot.calls, _int),
            Column("Host total", ot.host_total_ns, _ns),
            Column("Host self", ot.host_self_ns, _ns),
            Column("Device", ot.device_ns, _ns),
            Column("Device self", ot.device_self_ns, _ns),
        ]
        if by_shapes:
            shapes = np.array(m.strings.lookup(ot.input_dims), dtype=object)
            cols.insert(1, Column("Input shapes", shapes, str, tooltip=lambda r: shapes[r], align_right=False))
        return cols

    def row_key(self, part: Part, row: int) -> str:
        return part.model.strings[int(part.state["ot"].name[row])]  # ops.csv groups by name

    def occurrences_of(self, part: Part, row: int) -> np.ndarray:
        s = part.model.slices
        ot = part.state["ot"]
        rows = np.flatnonzero((s.name == ot.name[row]) & np.isin(
            s.kind, np.array([Kind.CPU_OP, Kind.ANNOTATION, Kind.COLLECTIVE], np.int8)))
        if part.state["by_shapes"]:
            rows = rows[s.at("input_dims", rows) == ot.input_dims[row]]
        return rows[np.argsort(s.ts_ns[rows], kind="stable")]


def _bound_codes(bound: np.ndarray) -> np.ndarray:
    """Bound names -> their index in BOUNDS (a numeric sort key; steps are few)."""
    return np.array([BOUNDS.index(b) for b in bound.tolist()], np.int64)


class StepsPanel(StatsPanel):
    """Per-step table plus a Metrics line per rank (core.analysis.metrics: MFU, overlap, launch delay, queues)."""

    filter_hint = "filter steps"

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.metrics_label = QtWidgets.QLabel()
        self.metrics_label.setWordWrap(True)
        self.metrics_label.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.layout().insertWidget(1, self.metrics_label)

    def compute(self, m: TraceModel):
        return step_stats(m), step_extras(m), rank_metrics(m)

    def build_columns(self, m: TraceModel, result, part: Part) -> list[Column]:
        st, (comm_ns, tflops, mfu), metrics = result
        part.state["st"] = st
        lines = format_metrics([metrics])
        part.state["metrics"] = lines[0].strip().replace("metrics: ", f"Metrics{f' (rank {m.rank})' if m.rank else ''}: ") \
            if lines else "Metrics: none for this trace"
        cols = [
            Column("Step", st.number, lambda v: "all" if v < 0 else f"#{int(v)}", align_right=False),
            Column("Start", st.ts_ns, _ns),
            Column("CPU", st.dur_ns, _ns),
            Column("GPU", st.gpu_span_ns, _ns),
            Column("Effective", st.effective_ns, _ns),
            Column("Bound", _bound_codes(st.bound), lambda v: BOUNDS[int(v)], align_right=False),
            Column("GPU busy", st.gpu_busy_pct, _pct),
            Column("Kernels", st.kernel_count, _int),
            Column("Kernel time", st.kernel_ns, _ns),
            Column("Communication", comm_ns, _ns),
            Column("Memcpy", st.memcpy_ns, _ns),
            Column("Memory peak", st.mem_peak_bytes, lambda v: fmt_bytes(v) if v >= 0 else ""),
            Column("TFLOP/s", tflops, lambda v: "" if v != v else f"{v:.2f}"),
            Column("MFU", mfu, _pct),
        ]
        return cols

    csv_key_column = "step"

    def row_key(self, part: Part, row: int) -> int:
        return int(part.state["st"].number[row])

    def columns_shown(self, parts: list[Part]) -> None:
        self.metrics_label.setText("\n".join(p.state.get("metrics", "") for p in parts))

    def occurrences_of(self, part: Part, row: int) -> np.ndarray:
        st = part.state["st"]
        t0, d = float(st.ts_ns[row]), float(st.dur_ns[row])
        self.sig_range_requested.emit(t0 - d * 0.02, t0 + d * 1.02)
        steps = part.model.steps
        rows = steps.slice
        return rows[steps.number == st.number[row]] if len(rows) else rows
