"""PNG of what is on screen: any widget, or a pyqtgraph scene/plot at a chosen size and DPI.

For figures with a title block, legend and a chosen window (the report's look), use
`gui.report.renderer.QtRenderer` with core.export figure data instead; this module is the
"exactly what I see" export for the timeline view, the memory plot and the live GPU panel.
"""
from __future__ import annotations

from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets


def _png_bytes(img: QtGui.QImage | QtGui.QPixmap) -> bytes:
    buf = QtCore.QBuffer()
    buf.open(QtCore.QIODevice.OpenModeFlag.WriteOnly)
    img.save(buf, "PNG")
    return bytes(buf.data())


def widget_png(widget: QtWidgets.QWidget, scale: float = 1.0, size: QtCore.QSize | None = None) -> bytes:
    """Paint `widget` (as laid out now, or temporarily resized to `size`) at `scale` device px per px."""
    old = widget.size()
    if size is not None and size != old:
        widget.resize(size)
        QtWidgets.QApplication.processEvents()
    try:
        w, h = widget.width(), widget.height()
        img = QtGui.QImage(max(1, int(w * scale)), max(1, int(h * scale)), QtGui.QImage.Format.Format_ARGB32)
        img.setDevicePixelRatio(scale)
        img.fill(widget.palette().color(QtGui.QPalette.ColorRole.Window))
        painter = QtGui.QPainter(img)
        painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, True)
        painter.setRenderHint(QtGui.QPainter.RenderHint.TextAntialiasing, True)
        try:
            widget.render(painter, QtCore.QPoint(0, 0))
        finally:
            painter.end()
    finally:
        if size is not None and size != old:
            widget.resize(old)
    return _png_bytes(img)


def scene_png(item, width_px: int | None = None, scale: float = 1.0) -> bytes:
    """A pyqtgraph item (PlotItem, GraphicsLayout, ...) via pyqtgraph's ImageExporter.

    `width_px` sets the output width in device pixels (height follows the aspect ratio); `scale`
    multiplies it, for 2x DPI output of the on-screen size when `width_px` is None.
    """
    import pyqtgraph.exporters as pgx

    exporter = pgx.ImageExporter(item)
    params = exporter.parameters()
    base = width_px or int(item.boundingRect().width()) or 1
    params["width"] = max(1, int(base * scale))
    img = exporter.export(toBytes=True)
    return _png_bytes(img)


def save_png(data: bytes, path: str | Path) -> Path:
    path = Path(path)
    if path.suffix.lower() != ".png":
        path = path.with_suffix(".png")
    path.write_bytes(data)
    return path
