"""SnapshotView: one tab per opened CUDA memory snapshot.

Top: active memory over time (SnapshotPlot) and, x-linked under it, every allocation as a block over
time (BlocksPlot, memory_viz's per-allocation view; hover = size + stack). Bottom left: the largest
allocations live at the peak (size, address, user frame; the full stack of the selected row on the
right, wrapped to the pane). A summary line and a per-device segment table give reserved / allocated
totals at snapshot time.
"""
from __future__ import annotations

import numpy as np
from PySide6 import QtCore, QtGui, QtWidgets

from core.snapshot.report import SnapshotReport
from core.units import fmt_bytes, fmt_ns
from gui.snapshot.blocks import BlocksPlot
from gui.snapshot.plot import SnapshotPlot
from gui.stats.table_model import Column, ColumnTableModel, FilterProxy, StatsTableView
from gui.theme import Theme

Qt = QtCore.Qt


class SnapshotView(QtWidgets.QWidget):
    sig_allocation_selected = QtCore.Signal(int)  # row in the peak table (source model), -1 = none

    tab_kind = "snapshot"  # what core.session.Session.set_tab reports for this tab (gui/main_window.py)

    def __init__(self, report: SnapshotReport, theme: Theme, parent=None) -> None:
        super().__init__(parent)
        self.report = report
        self.snapshot = report.snapshot
        self.theme = theme
        self.device = min(report.devices, default=0)
        self.summary = QtWidgets.QLabel(self._summary_text(), textInteractionFlags=Qt.TextInteractionFlag.TextSelectableByMouse)
        self.summary.setWordWrap(True)
        self.device_box = QtWidgets.QComboBox()
        self.device_box.addItems([f"cuda:{d}" for d in sorted(report.devices)])
        self.device_box.setVisible(len(report.devices) > 1)
        self.device_box.currentIndexChanged.connect(self._on_device_box_changed)
        self.plot = SnapshotPlot(theme)
        self.plot.set_report(report)
        self.blocks = BlocksPlot(theme)
        self.blocks.setXLink(self.plot)
        self.blocks_caption = QtWidgets.QLabel()
        self._set_blocks()
        self.table = StatsTableView()
        self.table_model = ColumnTableModel()
        self.proxy = FilterProxy()
        self.proxy.setSourceModel(self.table_model)
        self.table.setModel(self.proxy)
        self.table.selectionModel().currentRowChanged.connect(self._on_table_row_changed)
        self.stack_text = QtWidgets.QPlainTextEdit(readOnly=True)
        # wrapped: long file paths stay inside the pane (NoWrap cut them at its right edge)
        self.stack_text.setLineWrapMode(QtWidgets.QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.stack_text.setPlaceholderText("Select an allocation to see its full stack (innermost first).")
        self.stack_text.setFont(QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont))
        self.segments_table = StatsTableView()
        self.segments_model = ColumnTableModel(self._segment_columns())
        self.segments_table.setModel(self.segments_model)
        self._fitted = False
        self._layout()
        self._fill_table()

    def _layout(self) -> None:
        top = QtWidgets.QHBoxLayout()
        top.addWidget(self.summary, 1)
        top.addWidget(self.device_box)
        self.peak_label = QtWidgets.QLabel()
        left = QtWidgets.QWidget()
        ll = QtWidgets.QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        ll.addWidget(self.peak_label)
        ll.addWidget(self.table, 1)
        ll.addWidget(QtWidgets.QLabel("Segments at snapshot time"))
        ll.addWidget(self.segments_table)
        rows = len(self.segments_model.columns[0].values)
        scroll_h = self.segments_table.horizontalScrollBar().sizeHint().height()
        self.segments_table.setMaximumHeight(22 * (min(rows, 8) + 1) + 8 + scroll_h)
        bottom = QtWidgets.QSplitter(Qt.Orientation.Horizontal)
        bottom.addWidget(left)
        bottom.addWidget(self.stack_text)
        bottom.setSizes([900, 600])
        plots = QtWidgets.QWidget()
        pl = QtWidgets.QVBoxLayout(plots)
        pl.setContentsMargins(0, 0, 0, 0)
        pl.setSpacing(0)
        pl.addWidget(self.plot, 2)
        pl.addWidget(self.blocks_caption)
        pl.addWidget(self.blocks, 3)
        split = QtWidgets.QSplitter(Qt.Orientation.Vertical)
        split.addWidget(plots)
        split.addWidget(bottom)
        split.setSizes([560, 340])
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(6, 4, 6, 4)
        lay.addLayout(top)
        lay.addWidget(split, 1)

    def showEvent(self, ev) -> None:  # noqa: N802 (Qt API)
        super().showEvent(ev)
        if not self._fitted:  # once laid out: x-linking the two plots before that stretched x by ~20 %
            self._fitted = True
            QtCore.QTimer.singleShot(0, self.plot.fit_x)

    # --- content ------------------------------------------------------------------------------
    def _summary_text(self) -> str:
        s = self.snapshot
        n_events = sum(len(t) for t in s.traces)
        t0 = min((t.span_ns[0] for t in s.traces), default=0)
        t1 = max((t.span_ns[1] for t in s.traces), default=0)
        parts = [f"CUDA memory snapshot · {len(s.devices)} device(s) · {len(s.segments)} segments · "
                 f"reserved {fmt_bytes(s.reserved_bytes())} · allocated {fmt_bytes(s.allocated_bytes())} "
                 f"at snapshot time · {n_events:,} trace events over {fmt_ns(t1 - t0)}"]
        for d, dev in sorted(self.report.devices.items()):
            tl = dev.timeline
            if tl.peak_step >= 0:
                parts.append(f"cuda:{d} peak active {fmt_bytes(tl.peak_bytes)} at +{fmt_ns(tl.peak_time_ns - t0)}")
        parts += [f"⚠ {w}" for w in s.warnings]
        return " · ".join(parts)

    def _fill_table(self) -> None:
        dev = self.report.devices.get(self.device)
        allocs = dev.top_at_peak if dev is not None else ()
        self.allocations = allocs
        st = self.snapshot.stacks
        n = len(allocs)
        sizes = np.array([a.size for a in allocs], np.int64)
        where = np.array([a.where or "(no stack)" for a in allocs], object)
        t0 = min((t.span_ns[0] for t in self.snapshot.traces), default=0)
        cols = [
            Column("where (user frame)", where, str, lambda r: self._stack_text(r), align_right=False),
            Column("size", sizes, fmt_bytes),
            Column("address", np.array([a.addr for a in allocs], np.int64), lambda v: hex(int(v))),
            Column("allocated at", np.array([a.alloc_time_ns - t0 for a in allocs], np.int64),
                   lambda v: f"+{fmt_ns(v)}"),
            Column("stack frames", np.array([len(st.stack(a.stack)) for a in allocs], np.int64), str),
        ]
        self.table_model.set_columns(cols)
        self.table.resizeColumnsToContents()
        header = self.table.horizontalHeader()  # the frame gets the spare width, not the frame count
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QtWidgets.QHeaderView.ResizeMode.Stretch)
        self.table.sortByColumn(1, Qt.SortOrder.DescendingOrder)
        if dev is not None and dev.timeline.peak_step >= 0:
            self.peak_label.setText(f"Largest allocations live at the peak ({fmt_bytes(dev.timeline.peak_bytes)} "
                                    f"active on cuda:{self.device}): {n} shown, {fmt_bytes(int(sizes.sum()))}")
        else:
            self.peak_label.setText("No allocator trace: nothing to show at a peak.")
        if n:
            self.table.selectRow(0)

    def _segment_columns(self) -> list[Column]:
        seg = self.snapshot.segments
        devs = np.array(self.snapshot.devices or [0], np.int64)

        def per(values, mask=None):
            m = np.ones(len(seg), bool) if mask is None else mask
            return np.array([int(values[m & (seg.device == d)].sum()) for d in devs], np.int64)

        count = per(np.ones(len(seg), np.int64))
        return [Column("device", devs, lambda v: f"cuda:{v}", align_right=False),
                Column("segments", count, str),
                Column("reserved", per(seg.total_size), fmt_bytes),
                Column("allocated", per(seg.allocated_size), fmt_bytes),
                Column("active", per(seg.active_size), fmt_bytes),
                Column("large pool", per(seg.total_size, seg.pool_large), fmt_bytes),
                Column("small pool", per(seg.total_size, ~seg.pool_large), fmt_bytes)]

    def _stack_text(self, row: int) -> str:
        if not 0 <= row < len(self.allocations):
            return ""
        a = self.allocations[row]
        st = self.snapshot.stacks
        head = f"{fmt_bytes(a.size)} at {hex(a.addr)} — {a.where or '(no stack)'}"
        user = int(st.user_frame[a.stack]) if a.stack >= 0 else -1
        frames = st.stack(a.stack)
        py = [f for f in frames if st.frame_file[f].endswith(".py")]
        mark = lambda f: ("▶ " if f == user else "  ") + st.describe_frame(f)  # noqa: E731
        lines = [head, "", f"Python frames ({len(py)}, innermost first):"] + [mark(f) for f in py]
        lines += ["", f"Full stack ({len(frames)} frames, innermost first):"] + [mark(f) for f in frames]
        return "\n".join(lines)

    # --- handlers -----------------------------------------------------------------------------
    def _on_table_row_changed(self, current: QtCore.QModelIndex, _prev) -> None:
        row = self.proxy.mapToSource(current).row() if current.isValid() else -1
        self.stack_text.setPlainText(self._stack_text(row))
        if 0 <= row < len(self.allocations):
            self.plot.mark_allocation(self.allocations[row].alloc_time_ns)
        self.sig_allocation_selected.emit(row)

    def _on_device_box_changed(self, i: int) -> None:
        self.device = sorted(self.report.devices)[i]
        self._fill_table()
        self._set_blocks()

    def _set_blocks(self) -> None:
        dev = self.report.devices.get(self.device)
        layout = dev.blocks if dev is not None else None
        shown = layout is not None and len(layout) > 0
        self.blocks.setVisible(shown)
        if not shown:
            self.blocks_caption.setText("No allocator trace: no per-allocation view "
                                        "(record with torch.cuda.memory._record_memory_history()).")
            return
        self.blocks.set_layout(layout, self.snapshot.stacks, self.plot.t0_ns, self.plot.unit)
        self.blocks_caption.setText(f"cuda:{self.device} · " + self.blocks.caption)
