"""Kernels / Ops / Steps tables over core.analysis results. Selecting a row highlights its
occurrences on the timeline; "Next" zooms to the next one after the current view."""
from __future__ import annotations

import numpy as np
from PySide6 import QtCore, QtWidgets
import shiboken6
from superqt.utils import create_worker

from core.analysis.stats import kernel_table, op_table
from core.analysis.steps import step_stats
from core.trace import query
from core.trace.model import Kind, TraceModel
from core.units import fmt_bytes, fmt_ns
from gui.stats.table_model import Column, ColumnTableModel, FilterProxy, StatsTableView


def _ns(v) -> str:
    return fmt_ns(v)


def _pct(v) -> str:
    return "" if v != v else f"{v:.1f} %"


def _int(v) -> str:
    return f"{int(v):,}" if v >= 0 else ""


_RUNNING: set = set()  # table workers stay referenced until they finish, even if their panel is closed


class StatsPanel(QtWidgets.QWidget):
    """Filter box + table + occurrence navigation. Subclasses build the columns."""

    sig_occurrences_selected = QtCore.Signal(int, object)  # (model index, slice rows ndarray)
    sig_occurrence_requested = QtCore.Signal(int, int)  # (model index, slice row) to reveal
    sig_range_requested = QtCore.Signal(float, float)  # (t0_ns, t1_ns)
    sig_table_ready = QtCore.Signal()  # columns computed (in a worker) and shown

    filter_hint = "filter by name"

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.model: TraceModel | None = None
        self.model_index = 0
        self.view_t_ns = 0.0  # where "Next" starts looking (kept up to date by the owner)
        self.occurrences = np.zeros(0, np.int64)
        self.ready = False
        self._generation = 0
        self.table_model = ColumnTableModel(parent=self)
        self.proxy = FilterProxy(self)
        self.proxy.setSourceModel(self.table_model)
        self.table = StatsTableView()
        self.table.setModel(self.proxy)
        self.filter = QtWidgets.QLineEdit(placeholderText=self.filter_hint, clearButtonEnabled=True)
        self.filter.textChanged.connect(self.proxy.setFilterFixedString)
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
        self.model, self.model_index = model, model_index
        self.ready = False
        self._generation += 1
        gen = self._generation
        self.table_model.set_columns([])
        self.occurrences = np.zeros(0, np.int64)
        self.next_btn.setEnabled(False)
        self.info.setText("computing…")
        worker = create_worker(self.prepare(), model, _start_thread=False,
                               _connect={"returned": lambda table, g=gen: self._on_worker_returned(g, table),
                                         "errored": lambda exc, g=gen: self._on_worker_errored(g, exc)})
        worker.finished.connect(lambda w=worker: _RUNNING.discard(w))
        _RUNNING.add(worker)
        worker.start()

    def _on_worker_returned(self, gen: int, table) -> None:
        if not shiboken6.isValid(self) or gen != self._generation or self.model is None:
            return  # a newer model or grouping was asked for meanwhile
        self.table_model.set_columns(self.build_columns(self.model, table))
        self.table.sortByColumn(-1, QtCore.Qt.SortOrder.AscendingOrder)
        self.table.resizeColumnsToContents()
        if self.table_model.columnCount():
            self.table.setColumnWidth(0, min(420, max(160, self.table.columnWidth(0))))
        self.info.setText(f"{self.table_model.rowCount():,} rows")
        self.ready = True
        self.sig_table_ready.emit()

    def _on_worker_errored(self, gen: int, exc: BaseException) -> None:
        if shiboken6.isValid(self) and gen == self._generation:
            self.info.setText(f"could not compute: {exc}")

    def prepare(self):
        """On the UI thread: the function (model -> table) the worker runs; it must not touch widgets."""
        return self.compute

    def compute(self, model: TraceModel):
        raise NotImplementedError

    def build_columns(self, model: TraceModel, table) -> list[Column]:
        raise NotImplementedError

    def occurrences_of(self, source_row: int) -> np.ndarray:
        return np.zeros(0, np.int64)

    def select_source_row(self, source_row: int) -> None:
        idx = self.proxy.mapFromSource(self.table_model.index(source_row, 0))
        self.table.selectRow(idx.row())

    def _on_table_selection(self, *_) -> None:
        rows = self.table.selectionModel().selectedRows()
        if not rows or self.model is None:
            return
        src = self.proxy.mapToSource(rows[0]).row()
        self.occurrences = self.occurrences_of(src)
        self.next_btn.setEnabled(len(self.occurrences) > 0)
        self.info.setText(f"{len(self.occurrences):,} on timeline" if len(self.occurrences) else "")
        self.sig_occurrences_selected.emit(self.model_index, self.occurrences)

    def goto_next(self) -> int:
        if self.model is None or not len(self.occurrences):
            return -1
        row = query.next_after(self.model, self.occurrences, self.view_t_ns)
        self.view_t_ns = float(self.model.slices.ts_ns[row])
        self.sig_occurrence_requested.emit(self.model_index, row)
        return row


class KernelsPanel(StatsPanel):
    filter_hint = "filter kernels by name"

    def compute(self, m: TraceModel):
        return kernel_table(m, kinds=(Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET))

    def build_columns(self, m: TraceModel, kt) -> list[Column]:
        self._names = kt.name
        full = m.strings.lookup(kt.name)
        short = np.array([query.short_kernel_name(n) for n in full], dtype=object)
        return [
            Column("Kernel", short, fmt=str, tooltip=lambda r: full[r], align_right=False),
            Column("Calls", kt.calls, _int),
            Column("Total", kt.total_ns, _ns),
            Column("Mean", kt.mean_ns, _ns),
            Column("Min", kt.min_ns, _ns),
            Column("Max", kt.max_ns, _ns),
            Column("% GPU time", kt.gpu_pct, _pct),
            Column("Grid", np.array(m.strings.lookup(kt.grid), dtype=object), str),
            Column("Block", np.array(m.strings.lookup(kt.block), dtype=object), str),
            Column("Registers", kt.registers, _int),
            Column("Occupancy", kt.occupancy_pct.astype(float), _pct),
        ]

    def occurrences_of(self, source_row: int) -> np.ndarray:
        sid = int(self._names[source_row])
        rows = np.flatnonzero(self.model.slices.name == sid)
        return rows[np.argsort(self.model.slices.ts_ns[rows], kind="stable")]


class OpsPanel(StatsPanel):
    filter_hint = "filter ops by name"

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.group = QtWidgets.QComboBox()
        self.group.addItems(["group by name", "group by name + input shapes"])
        self.group.currentIndexChanged.connect(self._on_group_changed)
        self.bar.insertWidget(1, self.group)

    def _on_group_changed(self, _i: int) -> None:
        if self.model is not None:
            self.set_model(self.model, self.model_index)

    def prepare(self):
        by_shapes = self.group.currentIndex() == 1
        return lambda m: (by_shapes, op_table(m, by_shapes=by_shapes))

    def build_columns(self, m: TraceModel, result) -> list[Column]:
        by_shapes, ot = result
        self._ot = ot
        self._by_shapes = by_shapes
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

    def occurrences_of(self, source_row: int) -> np.ndarray:
        s = self.model.slices
        hit = s.name == self._ot.name[source_row]
        if self._by_shapes:
            hit &= s.input_dims == self._ot.input_dims[source_row]
        rows = np.flatnonzero(hit & np.isin(s.kind, np.array([Kind.CPU_OP, Kind.ANNOTATION, Kind.COLLECTIVE],
                                                             np.int8)))
        return rows[np.argsort(s.ts_ns[rows], kind="stable")]


class StepsPanel(StatsPanel):
    filter_hint = "filter steps"

    def compute(self, m: TraceModel):
        return step_stats(m)

    def build_columns(self, m: TraceModel, st) -> list[Column]:
        self._st = st
        return [
            Column("Step", st.number, lambda v: "all" if v < 0 else f"#{int(v)}", align_right=False),
            Column("Start", st.ts_ns, _ns),
            Column("Duration", st.dur_ns, _ns),
            Column("GPU busy", st.gpu_busy_pct, _pct),
            Column("Kernels", st.kernel_count, _int),
            Column("Kernel time", st.kernel_ns, _ns),
            Column("Memcpy", st.memcpy_ns, _ns),
            Column("Memory peak", st.mem_peak_bytes, lambda v: fmt_bytes(v) if v >= 0 else ""),
        ]

    def occurrences_of(self, source_row: int) -> np.ndarray:
        t0, d = float(self._st.ts_ns[source_row]), float(self._st.dur_ns[source_row])
        self.sig_range_requested.emit(t0 - d * 0.02, t0 + d * 1.02)
        rows = self.model.steps.slice
        return rows[self.model.steps.number == self._st.number[source_row]] if len(rows) else rows
