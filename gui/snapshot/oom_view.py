"""OomView: the tab a run bundle that died of OOM opens on (issue 32).

Top: what failed (the request, the device, the user's line) and one bar of the device's memory at that
moment: allocated by kind, reserved but unallocated, free, used outside PyTorch, with the request drawn
to the same scale under it. Then fragmentation (spare reserved memory, the largest free block against the
request) and the suggestions core/analysis/oom.py made. Bottom: the allocations live at the failure
grouped by where they were made (top 20, the user's frames first; the stack of the selected row on the
right) and, above them, the per-allocation block view of the snapshot zoomed to its last stretch.
"""
from __future__ import annotations

import html

import numpy as np
from PySide6 import QtCore, QtGui, QtWidgets

from core.analysis.oom import OomReport
from core.analysis.oom_view import OomView as OomData
from core.units import fmt_bytes
from gui.snapshot.blocks import BlocksPlot
from gui.snapshot.plot import SnapshotPlot
from gui.stats.table_model import Column, ColumnTableModel, FilterProxy, StatsTableView
from gui.theme import Theme

Qt = QtCore.Qt
KIND_COLORS = {"activations": "#4e79a7", "backward": "#76b7b2", "optimizer state": "#f28e2b",
               "parameters": "#59a14f", "other": "#9c755f"}
ZOOM_TAIL = 0.35  # the block view shows the last 35 % of the trace, up to the failure


class MemoryBar(QtWidgets.QWidget):
    """The device's memory at the failure, one bar; the request under it at the same scale."""

    def __init__(self, report: OomReport, theme: Theme, parent=None) -> None:
        super().__init__(parent)
        self.r, self.theme = report, theme
        self.setMinimumHeight(74)
        self.parts = self._parts()
        self.setToolTip("<br>".join(f"{html.escape(name)}: {fmt_bytes(b)}" for name, b, _ in self.parts))

    def _parts(self) -> list[tuple[str, int, QtGui.QColor]]:
        r = self.r
        parts = []
        kinds = dict(r.kinds)
        allocated = r.allocated_bytes or sum(kinds.values())
        seen = sum(kinds.values())
        for name, b in sorted(kinds.items(), key=lambda kv: -kv[1]):
            parts.append((f"allocated: {name}", b, QtGui.QColor(KIND_COLORS.get(name, "#9c755f"))))
        if allocated > seen:
            parts.append(("allocated (not in the snapshot)", allocated - seen, QtGui.QColor("#bab0ac")))
        spare = r.unallocated_reserved_bytes or 0
        if spare:
            parts.append(("reserved, unallocated", spare, QtGui.QColor("#edc948")))
        if r.total_bytes and r.reserved_bytes is not None:
            free = r.free_bytes or 0
            outside = max(r.total_bytes - r.reserved_bytes - free, 0)
            if outside:
                parts.append(("outside PyTorch's allocator", outside, QtGui.QColor("#8c8c8c")))
            if free:
                parts.append(("free", free, self.theme.background.darker(125) if not self.theme.dark
                              else self.theme.background.lighter(260)))  # 160: the page colour, unseen
        return parts

    def paintEvent(self, _ev) -> None:  # noqa: N802 (Qt API)
        p = QtGui.QPainter(self)
        p.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, False)
        w = max(self.width() - 2, 10)
        total = max(sum(b for _, b, _ in self.parts), self.r.request_bytes, 1)
        scale = w / total
        x = 1.0
        font = p.font()
        for name, b, color in self.parts:
            bw = b * scale
            p.fillRect(QtCore.QRectF(x, 4, bw, 28), color)
            text = segment_text(name, b, bw - 8, p.fontMetrics().horizontalAdvance)
            if text:
                p.setPen(QtGui.QColor("#ffffff") if color.lightness() < 140 else QtGui.QColor("#000000"))
                p.drawText(QtCore.QRectF(x + 4, 4, bw - 8, 28), Qt.AlignmentFlag.AlignVCenter, text)
            x += bw
        req = self.r.request_bytes * scale
        p.fillRect(QtCore.QRectF(1, 40, max(req, 2), 22), QtGui.QColor("#e15759"))
        p.setPen(self.theme.text)
        p.setFont(font)
        p.drawText(QtCore.QRectF(req + 8, 40, w - req, 22), Qt.AlignmentFlag.AlignVCenter,
                   f"the failing request: {fmt_bytes(self.r.request_bytes)}")
        p.end()


def segment_text(name: str, nbytes: int, room_px: float, width_of) -> str:
    """A bar segment's label that fits its width: "parameters 256.06 MiB", else the size alone, else nothing
    (at 1366x768 "parameters 256.0" was cut mid-number and "free 193.75 MiB" left out)."""
    for text in (f"{name.replace('allocated: ', '')} {fmt_bytes(nbytes)}", fmt_bytes(nbytes)):
        if width_of(text) <= room_px:
            return text
    return ""


class OomView(QtWidgets.QWidget):
    sig_open_traces_requested = QtCore.Signal(str)  # the bundle, to open its traces in a trace tab

    def __init__(self, data: OomData, theme: Theme, parent=None) -> None:
        super().__init__(parent)
        self.data, self.r, self.theme = data, data.report, theme
        self.path = data.path
        r = self.r
        self.headline = QtWidgets.QLabel(self._headline_html(), textInteractionFlags=Qt.TextInteractionFlag.TextSelectableByMouse)
        self.headline.setWordWrap(True)
        self.bar = MemoryBar(r, theme)
        self.legend = QtWidgets.QLabel(self._legend_html())
        self.legend.setWordWrap(True)
        self.fragmentation = QtWidgets.QLabel(self._fragmentation_text(),
                                              textInteractionFlags=Qt.TextInteractionFlag.TextSelectableByMouse)
        self.fragmentation.setWordWrap(True)
        self.suggestions = QtWidgets.QLabel(self._suggestions_html(),
                                            textInteractionFlags=Qt.TextInteractionFlag.TextSelectableByMouse)
        self.suggestions.setWordWrap(True)
        self.open_traces = QtWidgets.QPushButton(f"Open the run's traces ({len(data.traces)})")
        self.open_traces.setVisible(bool(data.traces))
        self.open_traces.clicked.connect(lambda: self.sig_open_traces_requested.emit(self.path))
        self.table = StatsTableView()
        self.table_model = ColumnTableModel()
        self.proxy = FilterProxy()
        self.proxy.setSourceModel(self.table_model)
        self.table.setModel(self.proxy)
        self.table.selectionModel().currentRowChanged.connect(self._on_table_row_changed)
        self.stack_text = QtWidgets.QPlainTextEdit(readOnly=True)
        self.stack_text.setLineWrapMode(QtWidgets.QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.stack_text.setFont(QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont))
        self.stack_text.setPlaceholderText("Select a row to see where those allocations were made.")
        self.blocks = BlocksPlot(theme)
        self.blocks_caption = QtWidgets.QLabel()
        self._set_blocks()
        self._fill_table()
        self._layout()

    # --- layout -------------------------------------------------------------------------------
    def _layout(self) -> None:
        head = QtWidgets.QHBoxLayout()
        head.addWidget(self.headline, 1)
        head.addWidget(self.open_traces, 0, Qt.AlignmentFlag.AlignTop)
        top = QtWidgets.QWidget()
        tl = QtWidgets.QVBoxLayout(top)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.addLayout(head)
        tl.addWidget(self.bar)
        tl.addWidget(self.legend)
        tl.addWidget(self.fragmentation)
        tl.addWidget(self.suggestions)
        groups = QtWidgets.QWidget()
        gl = QtWidgets.QVBoxLayout(groups)
        gl.setContentsMargins(0, 0, 0, 0)
        gl.addWidget(QtWidgets.QLabel(f"Live at the failure, by where it was allocated (top {len(self.r.groups)}; "
                                      f"{fmt_bytes(self.r.live_bytes)} in all)"))
        gl.addWidget(self.table, 1)
        bottom = QtWidgets.QSplitter(Qt.Orientation.Horizontal)
        bottom.addWidget(groups)
        bottom.addWidget(self.stack_text)
        bottom.setSizes([1000, 600])
        plots = QtWidgets.QWidget()
        pl = QtWidgets.QVBoxLayout(plots)
        pl.setContentsMargins(0, 0, 0, 0)
        pl.addWidget(self.blocks_caption)
        pl.addWidget(self.blocks, 1)
        split = QtWidgets.QSplitter(Qt.Orientation.Vertical)
        split.addWidget(plots)
        split.addWidget(bottom)
        split.setSizes([330, 330])
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(8, 6, 8, 6)
        lay.addWidget(top)
        lay.addWidget(split, 1)

    # --- content ------------------------------------------------------------------------------
    def _headline_html(self) -> str:
        r = self.r
        figures = [f"<b>{fmt_bytes(r.request_bytes)}</b> asked for"]
        for label, v in (("free", r.free_bytes), ("reserved", r.reserved_bytes), ("allocated", r.allocated_bytes),
                         ("cap (set_per_process_memory_fraction)" if r.capped else "capacity", r.total_bytes)):
            if v is not None:
                figures.append(f"{fmt_bytes(v)} {label}")
        where = f"<br>at <code>{html.escape(r.where)}</code>" if r.where else ""
        others = f" · {self.data.others} more rank(s) ran out of memory" if self.data.others else ""
        first = html.escape(r.message.split(". Tried")[0].split("\n")[0][:200]) if r.message else ""
        return (f"<span style='font-size:15px'><b>Out of memory</b> on cuda:{r.device} (rank {r.rank}): "
                f"{' · '.join(figures)}</span>{where}<br><span style='color:gray'>{first}{others}</span>")

    def _legend_html(self) -> str:
        items = [f"<span style='color:{c.name()}'>■</span> {html.escape(name)} {fmt_bytes(b)}"
                 for name, b, c in self.bar.parts]
        return " &nbsp; ".join(items) + " &nbsp; <span style='color:#e15759'>■</span> the request"

    def _fragmentation_text(self) -> str:
        r = self.r
        spare = r.unallocated_reserved_bytes
        if spare is None:
            return "Fragmentation: unknown (no reserved / allocated figures)."
        largest = fmt_bytes(r.largest_free_block_bytes) if r.largest_free_block_bytes else "none"
        verdict = ("a fragmentation OOM: the spare reserved memory would hold the request, no single free block does"
                   if r.fragmented else "not a fragmentation OOM: the spare reserved memory is smaller than the request"
                   if spare < r.request_bytes else "enough spare reserved memory and a free block for it")
        return (f"Fragmentation: {fmt_bytes(spare)} reserved but unallocated; largest free block {largest} vs "
                f"the {fmt_bytes(r.request_bytes)} request: {verdict}.")

    def _suggestions_html(self) -> str:
        items = "".join(f"<li>{html.escape(s)}</li>" for s in self.r.suggestions)
        return f"<b>What to do</b><ul style='margin-top:2px'>{items}</ul>"

    def _fill_table(self) -> None:
        g = self.r.groups
        live = max(self.r.live_bytes, 1)
        sizes = np.array([x.bytes for x in g], np.int64)
        self.table_model.set_columns([
            Column("where (user frame)", np.array([x.where for x in g], object), str, lambda i: self._stack(i),
                   align_right=False),
            Column("live", sizes, fmt_bytes),
            Column("% of live", sizes * 100.0 / live, lambda v: f"{v:.1f} %"),
            Column("allocations", np.array([x.count for x in g], np.int64), str),
            Column("kind", np.array([x.kind for x in g], object), str, align_right=False),
        ])
        self.table.resizeColumnsToContents()
        header = self.table.horizontalHeader()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QtWidgets.QHeaderView.ResizeMode.Stretch)
        self.table.sortByColumn(1, Qt.SortOrder.DescendingOrder)
        if len(g):
            self.table.selectRow(0)

    def _stack(self, row: int) -> str:
        if not 0 <= row < len(self.r.groups):
            return ""
        x = self.r.groups[row]
        lines = [f"{fmt_bytes(x.bytes)} in {x.count} allocation(s) — {x.kind}", x.where, ""]
        lines += ["Stack (the user's frames first, then the library's):"] + [f"  {f}" for f in x.frames] if x.frames \
            else ["No stack recorded (record with --memory-history)."]
        growth = next((gr for gr in self.r.growth if gr.where == x.where), None)
        if growth is not None:
            lines += ["", "Live bytes at each step's end (it grows):"] + \
                     [f"  step {k + 1}: {fmt_bytes(b)}" for k, b in enumerate(growth.per_step_bytes)]
        return "\n".join(lines)

    def _set_blocks(self) -> None:
        snap = self.data.snapshot
        dev = snap.devices.get(self.r.device) if snap is not None else None
        layout = dev.blocks if dev is not None else None
        if layout is None or not len(layout):
            self.blocks.setVisible(False)
            self.blocks_caption.setText("No allocator history in the snapshot at the failure: no block view "
                                        "(record with --memory-history / 'Record allocator history').")
            return
        helper = SnapshotPlot(self.theme)  # for the time origin and the unit the snapshot tab would use
        helper.set_report(snap)
        self.blocks.set_layout(layout, snap.snapshot.stacks, helper.t0_ns, helper.unit)
        helper.deleteLater()
        span = float(max(layout.end_ns - helper.t0_ns, 1))
        self.blocks.getPlotItem().setXRange(span * (1 - ZOOM_TAIL), span, padding=0.01)
        self.blocks_caption.setText(f"cuda:{self.r.device} · the last {ZOOM_TAIL:.0%} of the allocator history up "
                                    f"to the failure · {self.blocks.caption}")

    # --- handlers -----------------------------------------------------------------------------
    def _on_table_row_changed(self, current: QtCore.QModelIndex, _prev) -> None:
        row = self.proxy.mapToSource(current).row() if current.isValid() else -1
        self.stack_text.setPlainText(self._stack(row))
