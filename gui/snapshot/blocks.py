"""BlocksPlot: memory_viz's per-allocation view - live allocations as stacked blocks over time (one
colour per allocating stack), the allocations not drawn one by one as a grey band up to the active
memory curve. Hover: size, lifetime and stack of the block under the cursor.

Drawing is batched like the timeline's: the layout (core.snapshot.blocks, computed once) becomes one
painter path per colour, so a paint is a handful of fillPath calls whatever the number of blocks;
never one QGraphicsItem per allocation."""
from __future__ import annotations

import html

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from core.snapshot.blocks import BlockLayout
from core.snapshot.model import StackTable
from core.units import fmt_bytes, fmt_ns
from gui.snapshot.plot import memory_time_plot
from gui.theme import Theme
from gui.timeline.axes import TimeAxis

PALETTE = ("#4a7fd4", "#2e9e4f", "#e8a33d", "#d65c8a", "#9b6bd3", "#6fa8a0", "#c97b30", "#5c9ee6", "#8fbf4a",
           "#e07a5f")
STACK_LINES = 8  # frames of the allocating stack in the hover text


class BlocksItem(pg.GraphicsObject):
    """Every block of a BlockLayout, filled per colour from prebuilt paths (data coordinates)."""

    def __init__(self, theme: Theme) -> None:
        super().__init__()
        self.theme = theme
        self.paths: list[tuple[QtGui.QBrush, QtGui.QPainterPath]] = []
        self.rest: QtGui.QPainterPath | None = None
        self.hovered = QtGui.QPainterPath()
        self._rect = QtCore.QRectF()

    def set_layout(self, layout: BlockLayout, t0_ns: int, unit_bytes: float) -> None:
        self.prepareGeometryChange()
        color_of = np.maximum(layout.stack.astype(np.int64), 0) * 2654435761 % len(PALETTE)  # by stack
        polys = [layout.polygon(i) for i in range(len(layout))]
        self.paths = []
        for c in range(len(PALETTE)):
            mine = [polys[i] for i in np.flatnonzero(color_of == c).tolist()]
            if not mine:
                continue
            color = QtGui.QColor(PALETTE[c])
            color.setAlpha(215)
            self.paths.append((QtGui.QBrush(color), _path(mine, t0_ns, unit_bytes)))
        self.rest = None
        if len(layout.rest_t_ns):
            end = max(int(layout.end_ns), int(layout.rest_t_ns[-1]))
            xs = np.repeat(np.append(layout.rest_t_ns, end), 2)[1:-1]
            lo, hi = np.repeat(layout.rest_lo_bytes, 2), np.repeat(layout.rest_hi_bytes, 2)
            self.rest = _path([(np.concatenate((xs, xs[::-1])), np.concatenate((lo, hi[::-1])))], t0_ns, unit_bytes)
        top = float(layout.rest_hi_bytes.max(initial=0)) / unit_bytes
        span = float(max(layout.end_ns - t0_ns, 1))
        self._rect = QtCore.QRectF(0, 0, span, max(top, 1e-9))
        self.update()

    def set_hovered(self, path: QtGui.QPainterPath) -> None:
        self.hovered = path
        self.update()

    def boundingRect(self) -> QtCore.QRectF:  # noqa: N802 (Qt API)
        return self._rect

    def paint(self, p: QtGui.QPainter, *_args) -> None:
        if self.rest is not None:
            band = QtGui.QColor(self.theme.grid)
            band.setAlpha(170)
            p.fillPath(self.rest, band)
        p.setPen(QtCore.Qt.PenStyle.NoPen)  # a hairline edge washed out thin blocks; colours tell them apart
        for brush, path in self.paths:
            p.setBrush(brush)
            p.drawPath(path)
        if not self.hovered.isEmpty():
            p.setPen(QtGui.QPen(self.theme.selection, 0))
            p.setBrush(QtCore.Qt.BrushStyle.NoBrush)
            p.drawPath(self.hovered)


def _path(polys, t0_ns: int, unit_bytes: float) -> QtGui.QPainterPath:
    """One path of closed polygons ((t_ns, y_bytes) each), built in one arrayToQPath call."""
    xs = np.concatenate([x for x, _ in polys]).astype(np.float64) - float(t0_ns)
    ys = np.concatenate([y for _, y in polys]).astype(np.float64) / unit_bytes
    connect = np.ones(len(xs), bool)
    ends = np.cumsum([len(x) for x, _ in polys]) - 1
    connect[ends] = False
    path = pg.arrayToQPath(xs, ys, connect=connect)
    path.setFillRule(QtCore.Qt.FillRule.WindingFill)
    return path


class BlocksPlot(pg.PlotWidget):
    sig_block_hovered = QtCore.Signal(int)  # block index, -1 = none

    def __init__(self, theme: Theme, parent=None) -> None:
        super().__init__(parent, axisItems={"bottom": TimeAxis("bottom")})
        self.theme = theme
        p = memory_time_plot(self, theme)
        p.hideButtons()
        self.item = BlocksItem(theme)
        p.addItem(self.item)
        self.layout_: BlockLayout | None = None
        self.stacks: StackTable | None = None
        self.t0_ns = 0
        self.unit = (1024 ** 3, "GiB")
        self.hovered = -1
        self.caption = ""
        self._hover = pg.SignalProxy(self.scene().sigMouseMoved, rateLimit=30, slot=self._on_scene_hover)

    def set_layout(self, layout: BlockLayout, stacks: StackTable, t0_ns: int, unit: tuple[float, str]) -> None:
        self.layout_, self.stacks, self.t0_ns, self.unit = layout, stacks, t0_ns, unit
        self.item.set_layout(layout, t0_ns, unit[0])
        hidden = f" · {layout.n_hidden:,} smaller in the grey band" if layout.n_hidden else ""
        self.getPlotItem().setLabel("left", f"allocations ({unit[1]})", color=self.theme.text.name())
        self.setToolTip("")
        self.caption = f"{len(layout):,} allocations as blocks (hover: size and stack){hidden}"
        top = float(layout.rest_hi_bytes.max(initial=0)) / unit[0]
        self.getPlotItem().setYRange(0, max(top, 1e-9) * 1.05, padding=0)
        self.getPlotItem().setXRange(0, float(max(layout.end_ns - t0_ns, 1)), padding=0.01)

    def block_text(self, i: int) -> str:
        L, st = self.layout_, self.stacks
        if L is None or not 0 <= i < len(L):
            return ""
        life = fmt_ns(int(L.t1_ns[i] - L.t0_ns[i])) + ("" if L.freed[i] else "+ (live at the end)")
        lines = [f"<b>{fmt_bytes(int(L.size[i]))}</b> allocated at +{fmt_ns(int(L.t0_ns[i] - self.t0_ns))}, "
                 f"lives {life}"]
        s = int(L.stack[i])
        if st is not None and s >= 0:
            where = st.where(s)
            if where:
                lines.append(f"where: {html.escape(where)}")
            py = [f for f in st.stack(s) if st.frame_file[f].endswith(".py")] or st.stack(s)
            lines += [html.escape(st.describe_frame(f)) for f in py[:STACK_LINES]]
        else:
            lines.append("<i>no stack recorded</i>")
        return "<br>".join(lines)

    def _on_scene_hover(self, args) -> None:
        L = self.layout_
        if L is None:
            return
        vb = self.getPlotItem().vb
        pos = args[0]
        i = -1
        if vb.sceneBoundingRect().contains(pos):
            pt = vb.mapSceneToView(pos)
            i = L.block_at(pt.x() + self.t0_ns, pt.y() * self.unit[0])
        if i != self.hovered:
            self.hovered = i
            self.item.set_hovered(_path([L.polygon(i)], self.t0_ns, self.unit[0]) if i >= 0 else QtGui.QPainterPath())
            self.sig_block_hovered.emit(i)
        if i >= 0:
            QtWidgets.QToolTip.showText(QtGui.QCursor.pos(), self.block_text(i), self)
        else:
            QtWidgets.QToolTip.hideText()
