"""TimelineItem: one GraphicsObject that draws every slice of every row.

Per paint it culls rows to the visible y range, asks core.trace.query for each row's spans in the
visible time range (cached merged levels when a row holds more slices than pixels), merges
sub-pixel runs in numpy, and draws with one `drawRects` call per colour from a numpy-filled
QRectF array (pyqtgraph's PrimitiveArray, as BarGraphItem does). Names are drawn inside slices
that are wide enough. Coordinates: x = ns on the trace set's time base, y = row index.
"""
from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from pyqtgraph.Qt import internals
from PySide6 import QtCore, QtGui

from core.trace import query
from core.trace.model import TraceModel
from gui.theme import SHADES, Theme
from gui.timeline.rows import COUNTER, HEADER, CounterRow, Row, track_row_index


class TimelineItem(pg.GraphicsObject):
    def __init__(self, theme: Theme) -> None:
        super().__init__()
        self.theme = theme
        self._brushes = theme.slice_brushes()
        self.models: list[TraceModel] = []
        self.indexes: list[query.SliceIndex] = []
        self.rows: list[Row] = []
        self._row_at: dict[tuple[int, int, int], int] = {}
        self._span = (0.0, 1.0)
        self._rects = internals.PrimitiveArray(QtCore.QRectF, 4)
        self.selected: tuple[int, int] | None = None  # (model, slice row)
        self.highlights: dict[int, np.ndarray] = {}  # model -> slice rows (time ordered)
        self.flows: list[tuple[int, int, int]] = []  # (model, src row, dst row) arrows to draw
        self.step_bands: list[tuple[int, int]] = []  # (ts_ns, end_ns) alternating background
        self.counters: list[CounterRow] = []
        self.last_paint_s = 0.0
        self.last_rects = 0
        self._text_px = 0  # font pixel size the width cache was measured with
        self._widths: dict[tuple[int, int], float] = {}
        self._fm = None
        self._text_h = 0.0
        self._statics: dict[tuple[int, int, int], QtGui.QStaticText] = {}
        self.setFlag(self.GraphicsItemFlag.ItemUsesExtendedStyleOption)

    # --- data -------------------------------------------------------------------------------
    def set_data(self, models: list[TraceModel], indexes: list[query.SliceIndex], rows: list[Row],
                 span_ns: tuple[int, int]) -> None:
        self.prepareGeometryChange()
        self.models, self.indexes, self.rows = models, indexes, rows
        self._row_at = track_row_index(rows)
        self._span = (float(span_ns[0]), float(max(span_ns[1], span_ns[0] + 1)))
        self.update()

    def set_rows(self, rows: list[Row]) -> None:
        self.prepareGeometryChange()
        self.rows = rows
        self._row_at = track_row_index(rows)
        self.update()

    def row_of_slice(self, model: int, row: int) -> int:
        s = self.models[model].slices
        key = (model, int(s.track[row]), int(s.depth[row]))
        hit = self._row_at.get(key)
        if hit is None:
            hit = self._row_at.get((model, key[1], 0), -1)
        return hit

    def boundingRect(self) -> QtCore.QRectF:
        t0, t1 = self._span
        pad = (t1 - t0) * 0.05
        return QtCore.QRectF(t0 - pad, 0, t1 - t0 + 2 * pad, max(1, len(self.rows)))

    # --- hit testing ------------------------------------------------------------------------
    def slice_at(self, row_idx: int, t_ns: float, tol_ns: float) -> tuple[int, int] | None:
        if not 0 <= row_idx < len(self.rows):
            return None
        r = self.rows[row_idx]
        if r.track < 0:
            return None
        hit = self.indexes[r.model].at(r.track, r.depth, t_ns, tol_ns)
        return (r.model, hit) if hit >= 0 else None

    # --- painting ---------------------------------------------------------------------------
    def paint(self, p: QtGui.QPainter, opt, widget=None) -> None:
        import time
        t_start = time.perf_counter()
        vb = self.getViewBox()
        if vb is None or not self.rows:
            return
        (x0, x1), (y0, y1) = vb.viewRange()
        tr = p.transform()
        sx, dx, sy, dy = tr.m11(), tr.dx(), tr.m22(), tr.dy()
        if sx <= 0:
            return
        ns_per_px = 1.0 / sx
        p.save()
        p.resetTransform()
        p.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, False)
        r0 = max(0, int(math.floor(min(y0, y1))))
        r1 = min(len(self.rows), int(math.ceil(max(y0, y1))) + 1)
        origin_px = x0 * sx + dx  # device x of view start
        self._paint_bands(p, x0, x1, sx, dx, sy, dy, r0, r1)
        starts, ends, firsts, counts, row_ids, lens = [], [], [], [], [], []
        pad = 1.0 if abs(sy) >= 8 else 0.0
        for ri in range(r0, r1):
            row = self.rows[ri]
            if row.track < 0:
                if row.track == HEADER:
                    p.fillRect(QtCore.QRectF(origin_px, ri * sy + dy, (x1 - x0) * sx, sy), self.theme.row_alt)
                elif row.track == COUNTER:
                    self._paint_counter(p, self.counters[row.depth], x0, x1, sx, dx, ri * sy + dy, sy)
                continue
            sp = self.indexes[row.model].spans(row.track, row.depth, x0, x1, ns_per_px)
            k = len(sp.start_ns)
            if k:
                starts.append(sp.start_ns)
                ends.append(sp.end_ns)
                firsts.append(sp.first)
                counts.append(sp.count)
                row_ids.append(ri)
                lens.append(k)
        n = 0
        texts = []
        if starts:
            lens_a = np.asarray(lens, np.int64)
            R = np.repeat(np.asarray(row_ids, np.int64), lens_a)
            group_start = np.zeros(len(R), bool)
            group_start[np.cumsum(lens_a) - lens_a] = True
            allsp = query.Spans(np.concatenate(starts), np.concatenate(ends), np.concatenate(firsts),
                                np.concatenate(counts))
            X0, X1, rep = query.pixel_spans(allsp, x0, ns_per_px, group_start=group_start)
            X0 += origin_px
            X1 += origin_px
            F, N = (allsp.first, allsp.count) if rep is None else (allsp.first[rep], allsp.count[rep])
            if rep is not None:
                R = R[rep]
            C = self._colors(F, R)
            wide = (X1 - X0) >= 3.0
            X1[wide] -= 1.0  # 1 px gap between neighbours
            top = R * sy + dy + pad
            h = sy - 2 * pad
            order = np.argsort(C, kind="stable")
            Cs = C[order]
            bounds = np.flatnonzero(np.concatenate(([True], Cs[1:] != Cs[:-1], [True])))
            p.setPen(QtCore.Qt.PenStyle.NoPen)
            for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
                idx = order[a:b]
                self._draw_rects(p, X0[idx], top[idx], X1[idx] - X0[idx], h,
                                 self._brushes[int(Cs[a]) % len(self._brushes)])
            n = len(X0)
            if abs(sy) >= 12:
                big = np.flatnonzero(((X1 - X0) >= self.theme.min_text_px) & (N == 1))[: self.theme.max_texts]
                if len(big):
                    texts = (R[big], X0[big], X1[big], F[big], N[big])
        self._paint_texts(p, texts, sy, dy)
        self._paint_overlays(p, x0, x1, sx, dx, sy, dy, r0, r1, ns_per_px)
        p.restore()
        self.last_rects = n
        self.last_paint_s = time.perf_counter() - t_start

    def _paint_counter(self, p, c: CounterRow, x0, x1, sx, dx, top, h) -> None:
        """Each sample holds until the next; one bar per pixel column with the column's highest value."""
        ts = c.ts_ns
        a = max(0, int(ts.searchsorted(query.ns_floor(x0), side="right")) - 1)
        b = int(ts.searchsorted(query.ns_ceil(x1), side="right"))
        if b <= a or c.max_value <= 0:
            return
        t_next = np.concatenate((ts[a + 1:b], [ts[b] if b < len(ts) else x1]))
        px0 = np.maximum(ts[a:b], x0) * sx + dx
        px1 = np.minimum(t_next, x1) * sx + dx
        col = np.floor(px0).astype(np.int64)
        starts = np.flatnonzero(np.concatenate(([True], col[1:] != col[:-1])))
        lasts = np.concatenate((starts[1:] - 1, [len(col) - 1]))
        v = np.maximum.reduceat(c.value[a:b], starts)
        left = px0[starts]
        width = np.maximum(px1[lasts] - left, 1.0)
        hh = np.clip(v / c.max_value, 0.0, 1.0) * (h - 2)
        p.setPen(QtCore.Qt.PenStyle.NoPen)
        self._draw_rects(p, left, top + h - 1 - hh, width, hh, QtGui.QBrush(QtGui.QColor(c.color)))

    def _colors(self, first: np.ndarray, row_ids: np.ndarray) -> np.ndarray:
        """Brush index per span: kind * SHADES + name shade, looked up in each row's model."""
        if len(self.models) == 1:
            s = self.models[0].slices
            return s.kind[first].astype(np.int32) * SHADES + s.name[first] % SHADES
        model_of_row = np.array([r.model for r in self.rows], np.int32)[row_ids]
        out = np.zeros(len(first), np.int32)
        for mi, m in enumerate(self.models):
            sel = model_of_row == mi
            if sel.any():
                f = first[sel]
                out[sel] = m.slices.kind[f].astype(np.int32) * SHADES + m.slices.name[f] % SHADES
        return out

    def _draw_rects(self, p, x, y, w, h, brush) -> None:
        n = len(x)
        self._rects.resize(n)
        mem = self._rects.ndarray()
        mem[:, 0] = x
        mem[:, 1] = y
        mem[:, 2] = w
        mem[:, 3] = h
        p.setBrush(brush)
        p.drawRects(*self._rects.drawargs())

    def _paint_bands(self, p, x0, x1, sx, dx, sy, dy, r0, r1) -> None:
        if not self.step_bands:
            return
        p.setPen(QtCore.Qt.PenStyle.NoPen)
        p.setBrush(self.theme.step_band)
        top = r0 * sy + dy
        height = (r1 - r0) * sy
        for i, (a, b) in enumerate(self.step_bands):
            if i % 2 or b < x0 or a > x1:
                continue
            p.drawRect(QtCore.QRectF(a * sx + dx, top, (b - a) * sx, height))

    def _paint_texts(self, p, texts, sy, dy) -> None:
        """Names inside wide slices: widths cached per name, eliding is a string cut, and each
        (name, length) is a cached QStaticText (3-4x faster to draw than drawText)."""
        if not len(texts):
            return
        p.setPen(self.theme.text_on_slice)
        font = p.font()
        px = max(8, min(12, int(abs(sy)) - 6))
        font.setPixelSize(px)
        p.setFont(font)
        if self._text_px != px or len(self._statics) > 20_000:
            self._text_px, self._widths, self._statics = px, {}, {}
            fm = QtGui.QFontMetricsF(font)
            self._fm, self._text_h = fm, fm.height()
        fm, widths, statics = self._fm, self._widths, self._statics
        R, X0, X1, F, _ = texts
        point = QtCore.QPointF
        y_off = dy + (sy - self._text_h) / 2
        for ri, xa, xb, row in zip(R.tolist(), X0.tolist(), X1.tolist(), F.tolist()):
            mi = self.rows[ri].model
            m = self.models[mi]
            sid = int(m.slices.name[row])
            w_name = widths.get((mi, sid))
            if w_name is None:
                w_name = widths[(mi, sid)] = fm.horizontalAdvance(m.strings[sid])
            room = xb - xa - 6
            keep = -1
            if w_name > room:
                keep = int(len(m.strings[sid]) * room / w_name) - 1
                if keep < 2:
                    continue
            st = statics.get((mi, sid, keep))
            if st is None:
                name = m.strings[sid]
                st = QtGui.QStaticText(name if keep < 0 else name[:keep] + "…")
                st.setTextFormat(QtCore.Qt.TextFormat.PlainText)
                st.prepare(QtGui.QTransform(), font)
                statics[(mi, sid, keep)] = st
            p.drawStaticText(point(xa + 3, ri * sy + y_off), st)

    def _paint_overlays(self, p, x0, x1, sx, dx, sy, dy, r0, r1, ns_per_px) -> None:
        pen = QtGui.QPen(self.theme.highlight, 2)
        p.setBrush(QtCore.Qt.BrushStyle.NoBrush)
        p.setPen(pen)
        for mi, rows in self.highlights.items():
            s = self.models[mi].slices
            ts = s.ts_ns[rows]
            a = int(ts.searchsorted(query.ns_floor(x0 - s.max_dur_ns.max(initial=0)), side="left"))
            b = int(ts.searchsorted(query.ns_ceil(x1), side="right"))
            vis = rows[a:b]
            vis = vis[(s.ts_ns[vis] + s.dur_ns[vis]) >= x0][:20000]
            if not len(vis):
                continue
            ys = np.array([self.row_of_slice(mi, int(r)) for r in vis[:5000]], np.int64)
            vis = vis[:5000]
            keep = (ys >= r0) & (ys < r1)
            if not keep.any():
                continue
            vis, ys = vis[keep], ys[keep]
            xa = s.ts_ns[vis] * sx + dx
            w = np.maximum(s.dur_ns[vis] * sx, 2.0)
            n = len(vis)
            self._rects.resize(n)
            mem = self._rects.ndarray()
            mem[:, 0], mem[:, 1], mem[:, 2], mem[:, 3] = xa, ys * sy + dy, w, sy
            p.drawRects(*self._rects.drawargs())
        for mi, src, dst in self.flows:
            self._paint_flow(p, mi, src, dst, sx, dx, sy, dy)
        if self.selected is not None:
            mi, row = self.selected
            ri = self.row_of_slice(mi, row)
            if ri >= 0:
                s = self.models[mi].slices
                p.setPen(QtGui.QPen(self.theme.selection, 2))
                p.setBrush(QtCore.Qt.BrushStyle.NoBrush)
                p.drawRect(QtCore.QRectF(s.ts_ns[row] * sx + dx - 1, ri * sy + dy,
                                         max(3.0, s.dur_ns[row] * sx + 2), sy))

    def _paint_flow(self, p, mi, src, dst, sx, dx, sy, dy) -> None:
        s = self.models[mi].slices
        ra, rb = self.row_of_slice(mi, src), self.row_of_slice(mi, dst)
        if ra < 0 or rb < 0:
            return
        a = QtCore.QPointF(s.ts_ns[src] * sx + dx, (ra + 0.5) * sy + dy)
        b = QtCore.QPointF(s.ts_ns[dst] * sx + dx, (rb + 0.5) * sy + dy)
        p.setPen(QtGui.QPen(self.theme.flow, 1.5))
        p.drawLine(a, b)
        ang = math.atan2(b.y() - a.y(), b.x() - a.x())
        head = [b, QtCore.QPointF(b.x() - 9 * math.cos(ang - 0.4), b.y() - 9 * math.sin(ang - 0.4)),
                QtCore.QPointF(b.x() - 9 * math.cos(ang + 0.4), b.y() - 9 * math.sin(ang + 0.4))]
        p.setBrush(self.theme.flow)
        p.drawPolygon(QtGui.QPolygonF(head))
