"""Perfetto-like navigation on a pyqtgraph ViewBox: wheel zooms time at the cursor, shift+wheel
scrolls rows, drag pans (time and rows); rows keep a fixed pixel height."""
from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtCore

MIN_RANGE_NS = 200.0  # deepest zoom: 200 ns across the view


class NavViewBox(pg.ViewBox):
    sig_double_clicked = QtCore.Signal(float, float)  # (t_ns, row y)

    def __init__(self, row_px: int) -> None:
        super().__init__(enableMenu=False, invertY=True, defaultPadding=0.0)
        self.row_px = row_px
        self.n_rows = 1
        self.t_limits = (0.0, 1.0)
        self.setMouseEnabled(x=True, y=False)
        self.sigResized.connect(self._on_self_resized)

    # --- limits / rows ------------------------------------------------------------------------
    def set_extent(self, t0_ns: float, t1_ns: float, n_rows: int) -> None:
        pad = max(1.0, (t1_ns - t0_ns) * 0.05)
        self.t_limits = (t0_ns - pad, t1_ns + pad)
        self.n_rows = max(1, n_rows)
        self.setLimits(xMin=self.t_limits[0], xMax=self.t_limits[1], minXRange=MIN_RANGE_NS)
        self._apply_rows(self.viewRange()[1][0])

    def visible_rows(self) -> float:
        return max(1.0, self.height() / self.row_px)

    def _apply_rows(self, top: float) -> None:
        vis = self.visible_rows()
        top = max(0.0, min(top, max(0.0, self.n_rows - vis)))
        self.setYRange(top, top + vis, padding=0)

    def _on_self_resized(self) -> None:
        self._apply_rows(self.viewRange()[1][0])

    def scroll_rows(self, delta_rows: float) -> None:
        self._apply_rows(self.viewRange()[1][0] + delta_rows)

    def scroll_to_row(self, row: int) -> None:
        top, bottom = self.viewRange()[1]
        if row < top or row + 1 > bottom:
            self._apply_rows(row - self.visible_rows() / 3)

    # --- time navigation ------------------------------------------------------------------------
    def zoom_at(self, factor: float, center_ns: float | None = None) -> None:
        """factor < 1 zooms in."""
        x0, x1 = self.viewRange()[0]
        c = (x0 + x1) / 2 if center_ns is None else center_ns
        w = max(MIN_RANGE_NS, (x1 - x0) * factor)
        frac = (c - x0) / max(1e-9, x1 - x0)
        self.show_time(c - frac * w, c - frac * w + w)

    def pan_by(self, frac: float) -> None:
        x0, x1 = self.viewRange()[0]
        d = (x1 - x0) * frac
        self.show_time(x0 + d, x1 + d)

    def show_time(self, t0_ns: float, t1_ns: float) -> None:
        lo, hi = self.t_limits
        w = min(max(MIN_RANGE_NS, t1_ns - t0_ns), hi - lo)
        t0 = min(max(lo, t0_ns), hi - w)
        self.setXRange(t0, t0 + w, padding=0)

    # --- mouse ---------------------------------------------------------------------------------
    def wheelEvent(self, ev, axis=None) -> None:
        delta = ev.delta() if hasattr(ev, "delta") else ev.angleDelta().y()
        mods = ev.modifiers()
        if mods & QtCore.Qt.KeyboardModifier.ShiftModifier:
            self.scroll_rows(-delta / 120 * 3)
        else:
            center = self.mapSceneToView(ev.scenePos()).x()
            self.zoom_at(0.8 ** (delta / 120), center)
        ev.accept()

    def mouseDragEvent(self, ev, axis=None) -> None:
        if ev.button() not in (QtCore.Qt.MouseButton.LeftButton, QtCore.Qt.MouseButton.MiddleButton):
            ev.ignore()
            return
        ev.accept()
        last = self.mapSceneToView(ev.lastScenePos())
        now = self.mapSceneToView(ev.scenePos())
        x0, x1 = self.viewRange()[0]
        d = last.x() - now.x()
        self.show_time(x0 + d, x1 + d)
        self.scroll_rows(last.y() - now.y())

    def mouseDoubleClickEvent(self, ev) -> None:
        pt = self.mapSceneToView(ev.scenePos())
        self.sig_double_clicked.emit(pt.x(), pt.y())
        ev.accept()
