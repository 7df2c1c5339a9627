"""Time axis (µs / ms / s ticks) and the row label column with collapse toggles."""
from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from core.units import NS_PER_MS, NS_PER_S, NS_PER_US
from gui.theme import Theme
from gui.timeline.rows import GROUP, HEADER, Row


def time_unit(span_ns: float) -> tuple[float, str]:
    if span_ns >= 2 * NS_PER_S:
        return NS_PER_S, "s"
    if span_ns >= 2 * NS_PER_MS:
        return NS_PER_MS, "ms"
    if span_ns >= 2 * NS_PER_US:
        return NS_PER_US, "µs"
    return 1, "ns"


ANCHOR_AFTER = 1e4  # labels switch to anchor + offsets once a tick value needs 5+ digits in its unit


def time_anchor(t0_ns: float, t1_ns: float) -> tuple[float, float]:
    """(anchor ns, anchor step ns) for the view [t0, t1]: the start rounded down to the smallest power
    of ten of ns at least as long as the view, so that offsets stay below twice the view width."""
    width = max(1.0, t1_ns - t0_ns)
    step = 10.0 ** math.ceil(math.log10(width))
    return math.floor(t0_ns / step) * step, step


def fmt_anchor(anchor_ns: float, step_ns: float) -> str:
    """An anchor in seconds with the decimals its step needs, grouped by three: "1.000 000 s"."""
    decimals = 3 * math.ceil(max(0, 9 - int(round(math.log10(step_ns)))) / 3)  # whole ms / µs / ns
    text = f"{anchor_ns / NS_PER_S:.{decimals}f}"
    whole, _, frac = text.partition(".")
    if not frac:
        return f"{whole} s"
    return f"{whole}.{' '.join(frac[i:i + 3] for i in range(0, len(frac), 3))} s"


class TimeAxis(pg.AxisItem):
    """Axis of a view whose x is nanoseconds; labels in the unit fitting the tick spacing. Deep in a
    long trace, where "1000000100 ns" would be unreadable, ticks read as offsets ("+100 ns") from an
    anchor time published through sig_anchor_changed ("" when labels are absolute)."""

    sig_anchor_changed = QtCore.Signal(str)

    def __init__(self, *args, anchored: bool = False, **kwargs) -> None:
        """anchored=False (no place shows the anchor): deep-zoom labels are absolute in the unit of
        the value with the decimals the spacing needs ("1.000000100 s")."""
        super().__init__(*args, **kwargs)
        self.anchored = anchored
        self.anchor_text = ""
        self._major_ns: float | None = None  # spacing of the coarsest tick level of this draw

    def tickValues(self, minVal, maxVal, size):
        levels = super().tickValues(minVal, maxVal, size)
        self._major_ns = levels[0][0] if levels else None
        return levels

    def tickStrings(self, values, scale, spacing):
        """Every tick level of one draw uses the unit and mode the coarsest level picks."""
        major = self._major_ns or spacing
        div, unit = time_unit(major * 2)
        decimals = 0
        step = spacing / div
        while step < 1 and decimals < 6:
            step *= 10
            decimals += 1
        lo, hi = (min(self.range), max(self.range)) if self.range else (min(values, default=0), max(values, default=0))
        anchor_ns, anchor_step = time_anchor(lo, hi)
        if max(abs(lo), abs(hi)) / div < ANCHOR_AFTER or anchor_ns == 0:
            self._set_anchor("")
            return [f"{v / div:.{decimals}f} {unit}" for v in values]
        if not self.anchored:
            big, big_unit = time_unit(2 * max(abs(lo), abs(hi)))  # 1.0 s, not 1000.0 ms
            places = decimals + max(0, round(math.log10(big / div)))
            return [f"{v / big:.{places}f} {big_unit}" for v in values]
        self._set_anchor(fmt_anchor(anchor_ns, anchor_step))
        return [f"+{(v - anchor_ns) / div:.{decimals}f} {unit}" for v in values]

    def _set_anchor(self, text: str) -> None:
        if text != self.anchor_text:
            self.anchor_text = text
            self.sig_anchor_changed.emit(text)


def fit_label(text: str, font: QtGui.QFont | None, px: int, fm: QtGui.QFontMetrics | None = None) -> str:
    """`text` elided in the middle to `px`, measured in the font it is drawn in (`fm` when given, else
    `font`'s): a bold rank header elided by the regular font's widths was cut without an ellipsis
    ("rank 10 · rank10.pt.trace.json.g")."""
    metrics = QtGui.QFontMetrics(font) if font is not None else fm
    return metrics.elidedText(text, QtCore.Qt.TextElideMode.ElideMiddle, px)


class RowLabels(QtWidgets.QGraphicsWidget):
    """Left column: one label per track (on its first row), ▸/▾ toggles collapsible tracks."""

    sig_track_toggled = QtCore.Signal(int, int, int)  # (model, track, track kind)

    def __init__(self, view_box: pg.ViewBox, theme: Theme) -> None:
        super().__init__()
        self.vb = view_box
        self.theme = theme
        self.rows: list[Row] = []
        self.setMinimumWidth(theme.label_px)
        self.setMaximumWidth(theme.label_px)
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Fixed, QtWidgets.QSizePolicy.Policy.Expanding)
        self.setAcceptHoverEvents(True)
        view_box.sigYRangeChanged.connect(self._on_vb_changed)
        view_box.sigResized.connect(self._on_vb_changed)

    def _on_vb_changed(self, *_) -> None:
        self.update()

    def set_rows(self, rows: list[Row]) -> None:
        self.rows = rows
        self.update()

    def _y_map(self) -> tuple[float, float]:
        """Returns (px per row, px of row 0) in this widget's coordinates."""
        y0, y1 = self.vb.viewRange()[1]
        h = self.vb.height() or 1
        top_in_me = self.mapFromItem(self.vb, QtCore.QPointF(0, 0)).y()
        k = h / max(1e-9, (y1 - y0))
        return k, top_in_me - y0 * k

    def row_at(self, y_px: float) -> int:
        k, off = self._y_map()
        return int((y_px - off) // k)

    def paint(self, p: QtGui.QPainter, opt, widget=None) -> None:
        rect = self.boundingRect()
        p.fillRect(rect, self.theme.label_bg)
        if not self.rows:
            return
        k, off = self._y_map()
        vb_top = self.mapFromItem(self.vb, QtCore.QPointF(0, 0)).y()
        p.setClipRect(QtCore.QRectF(0, vb_top, rect.width(), self.vb.height()))
        first = max(0, int(-off // k))
        last = min(len(self.rows), int((rect.height() - off) // k) + 2)
        font = p.font()
        font.setPixelSize(max(9, min(12, int(k) - 5)))
        fm = QtGui.QFontMetrics(font)
        p.setPen(QtGui.QPen(self.theme.grid))
        for i in range(first, last):
            r = self.rows[i]
            if not r.first:
                continue
            y = off + i * k
            p.drawLine(QtCore.QPointF(0, y), QtCore.QPointF(rect.width(), y))
        for i in range(first, last):
            r = self.rows[i]
            if not r.first:
                continue
            y = off + i * k
            bold = r.track == HEADER
            if bold or r.track == GROUP:
                p.fillRect(QtCore.QRectF(0, y, rect.width(), k), self.theme.row_alt)
            font.setBold(bold)
            p.setFont(font)
            p.setPen(self.theme.text)
            text = r.label
            if r.collapsible:
                text = ("▸ " if r.collapsed else "▾ ") + text
            indent = 4 if bold else 10
            elided = fit_label(text, font if bold else None, int(rect.width() - indent - 4), fm)
            p.drawText(QtCore.QRectF(indent, y, rect.width() - indent, k),
                       int(QtCore.Qt.AlignmentFlag.AlignVCenter | QtCore.Qt.AlignmentFlag.AlignLeft), elided)

    def hoverMoveEvent(self, ev) -> None:
        i = self.row_at(ev.pos().y())
        r = self.rows[i] if 0 <= i < len(self.rows) else None
        tip = r.label if r is not None else ""
        if r is not None and r.collapsible:
            tip += "\nclick: " + ("unfold" if r.collapsed else "fold") + (
                " (+N: levels folded away)" if r.collapsed and "  +" in r.label else "")
        self.setToolTip(tip)

    def mousePressEvent(self, ev) -> None:
        i = self.row_at(ev.pos().y())
        if 0 <= i < len(self.rows):
            r = self.rows[i]
            if r.collapsible:
                self.sig_track_toggled.emit(r.model, r.track, r.kind)
                ev.accept()
                return
        ev.ignore()
