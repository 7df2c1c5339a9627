"""Offscreen pyqtgraph canvas: a white page with a title block, grabbed to PNG at 1x or 2x DPI.

The widget is never shown on screen (WA_DontShowOnScreen): it is laid out at the requested logical
size and its scene is painted into a QImage whose device pixel ratio is the requested scale, so 2x
output has the same layout with twice the pixels (crisp text), not smaller text.
"""
from __future__ import annotations

import html

import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from core.export.figures import FigureSpec, Header
from core.export.style import colour, config


def ensure_app() -> QtWidgets.QApplication:
    app = QtWidgets.QApplication.instance()
    if app is None:
        app = QtWidgets.QApplication([])
    return app


def qcolor(key: str) -> QtGui.QColor:
    """Colour of a style key; "KIND:1"/"KIND:2" are slightly lighter/darker shades of the kind colour."""
    c = QtGui.QColor(colour(key))
    shade = key.partition(":")[2]
    if shade == "1":
        return c.lighter(115)
    if shade == "2":
        return c.darker(115)
    return c


def font(px: int | None = None, bold: bool = False) -> QtGui.QFont:
    f = QtGui.QFont()
    f.setPixelSize(int(px or config()["size"]["font_px"]))
    f.setBold(bold)
    return f


class Canvas:
    """A GraphicsLayoutWidget page: `layout` to add plots to, `header` already in row 0."""

    def __init__(self, spec: FigureSpec, header: Header, height_px: int) -> None:
        ensure_app()
        self.spec = spec
        self.width_px = int(spec.width_px)
        self.height_px = int(spec.height_px or height_px)
        page = config()["page"]
        self.widget = pg.GraphicsLayoutWidget()
        self.widget.setAttribute(QtCore.Qt.WidgetAttribute.WA_DontShowOnScreen, True)
        self.widget.setBackground(page["background"])
        self.widget.resize(self.width_px, self.height_px)
        self.layout = self.widget.ci
        self.layout.setContentsMargins(12, 8, 16, 8)
        size = config()["size"]
        title = (f"<span style='font-size:{size['title_px']}px; font-weight:600; color:{page['text']}'>"
                 f"{html.escape(header.title)}</span><br>"
                 f"<span style='font-size:{size['font_px']}px; color:{page['text']}'>{html.escape(header.subtitle)}</span>")
        self.title = pg.LabelItem(title, justify="left")
        self.layout.addItem(self.title, row=0, col=0, colspan=2)
        self.layout.nextRow()

    def axis_style(self, plot: pg.PlotItem) -> None:
        text = config()["page"]["text"]
        for name in ("left", "bottom", "right"):
            ax = plot.getAxis(name)
            ax.setPen(pg.mkPen(text))
            ax.setTextPen(pg.mkPen(text))
            ax.setStyle(tickFont=font())
            ax.label.setFont(font())
            # values are already in the unit the label names: never rescale them with an SI prefix
            # (pyqtgraph 0.14 applies its auto prefix to a labelled axis even after enableAutoSIPrefix(False))
            ax.enableAutoSIPrefix(False)
            ax.setSIPrefixEnableRanges(((-1.0, -1.0),))

    def to_png(self) -> bytes:
        """Lay out at the logical size and paint at `spec.scale` device pixels per logical pixel."""
        w = self.widget
        w.show()  # not on screen: WA_DontShowOnScreen; needed for layout and resize events
        QtWidgets.QApplication.processEvents()
        w.resize(self.width_px, self.height_px)
        QtWidgets.QApplication.processEvents()
        scale = max(float(self.spec.scale), 0.25)
        img = QtGui.QImage(int(self.width_px * scale), int(self.height_px * scale), QtGui.QImage.Format.Format_RGB32)
        img.setDevicePixelRatio(scale)
        img.fill(QtGui.QColor(config()["page"]["background"]))
        painter = QtGui.QPainter(img)
        painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, True)
        painter.setRenderHint(QtGui.QPainter.RenderHint.TextAntialiasing, True)
        try:
            rect = QtCore.QRect(0, 0, self.width_px, self.height_px)
            w.render(painter, QtCore.QRectF(rect), rect)
        finally:
            painter.end()
            w.hide()
            w.deleteLater()
        buf = QtCore.QBuffer()
        buf.open(QtCore.QIODevice.OpenModeFlag.WriteOnly)
        img.save(buf, "PNG")
        return bytes(buf.data())
