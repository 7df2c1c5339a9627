"""QtRenderer: core.export.figures.Renderer implemented with Qt + pyqtgraph, offscreen.

Painting touches QWidgets, so it must happen on the GUI thread. `render()` called from the GUI thread
paints directly (the CLI); called from a worker thread it hands the figure to the GUI thread through a
blocking queued signal and returns the PNG when that thread has painted it (the GUI's export worker:
numpy preparation and file writing stay in the worker, only the ~50 ms paint runs on the GUI thread).
"""
from __future__ import annotations

from PySide6 import QtCore

from core.export.figures import BarFigure, Figure, LineFigure, NoteFigure, TimelineFigure
from gui.report import plots_png, timeline_png
from gui.report.canvas import ensure_app


def paint(figure: Figure) -> bytes:
    if isinstance(figure, TimelineFigure):
        return timeline_png.paint(figure)
    if isinstance(figure, LineFigure):
        return plots_png.paint_lines(figure)
    if isinstance(figure, BarFigure):
        return plots_png.paint_bars(figure)
    if isinstance(figure, NoteFigure):
        return plots_png.paint_note(figure.header, figure.spec, figure.text)
    raise TypeError(f"cannot render {type(figure).__name__}")


class _Painter(QtCore.QObject):
    """Lives on the GUI thread; worker threads reach it through a BlockingQueuedConnection."""

    sig_paint_requested = QtCore.Signal(object)  # [figure, result holder]: paint on the GUI thread

    def __init__(self) -> None:
        super().__init__()
        self.sig_paint_requested.connect(self._on_self_paint_requested, QtCore.Qt.ConnectionType.BlockingQueuedConnection)

    def _on_self_paint_requested(self, job: list) -> None:
        try:
            job[1] = paint(job[0])
        except Exception as exc:  # noqa: BLE001 - re-raised in the calling thread
            job[2] = exc


class QtRenderer:
    """Construct on the GUI thread (after QApplication exists, or let it create one for the CLI)."""

    def __init__(self) -> None:
        app = ensure_app()
        self._painter = _Painter()
        self._painter.moveToThread(app.thread())

    def render(self, figure: Figure) -> bytes:
        if QtCore.QThread.currentThread() is self._painter.thread():
            return paint(figure)
        job = [figure, None, None]
        self._painter.sig_paint_requested.emit(job)
        if job[2] is not None:
            raise job[2]
        return job[1]


def create() -> QtRenderer:
    """Factory looked up by name from core (core.export.figures.load_renderer): keeps core Qt-free."""
    return QtRenderer()
