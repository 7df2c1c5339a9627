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
from gui.timeline.highlight import Highlight, clip_px, clip_segment, highlight_of, row_luts, visible_outlines
from gui.timeline.rows import COUNTER, GROUP, HEADER, CounterRow, Row, track_row_index


class TimelineItem(pg.GraphicsObject):
    def __init__(self, theme: Theme) -> None:
        super().__init__()
        self.theme = theme
        self._brushes = theme.slice_brushes()
        self.models: list[TraceModel] = []
        self.indexes: list[query.SliceIndex] = []
        self.rows: list[Row] = []
        self._row_at: dict[tuple[int, int, int], int] = {}
        self._row_lut: dict[int, np.ndarray] = {}  # model -> (track, depth) -> row, -1 = not shown
        self._span = (0.0, 1.0)
        self._rects = internals.PrimitiveArray(QtCore.QRectF, 4)
        self.selected: tuple[int, int] | None = None  # (model, slice row)
        self.highlights: dict[int, np.ndarray] = {}  # model -> slice rows (time ordered)
        self._clip = (-2.0, 2.0)  # device x range drawn this paint (view +- 2 px)
        self._hl: list[Highlight] = []  # per model: rows, start/end ns, timeline row, running max end
        self.flows: list[tuple[int, int, int]] = []  # (model, src row, dst row) arrows to draw
        self.step_bands: dict[int, list[tuple[int, int]]] = {}  # model -> (ts_ns, end_ns) alternating background
        self._model_rows: dict[int, tuple[int, int]] = {}  # model -> its rows [first, last + 1)
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
        self._span = (float(span_ns[0]), float(max(span_ns[1], span_ns[0] + 1)))
        self.highlights = {}
        self.set_rows(rows)

    def set_rows(self, rows: list[Row]) -> None:
        """New row layout (fold / unfold, rank filter): re-map highlighted slices to rows once here."""
        self.prepareGeometryChange()
        self.rows = rows
        self._row_at = track_row_index(rows)
        self._row_lut = row_luts(self.models, rows)
        self._model_rows = {}
        for i, r in enumerate(rows):
            a, _ = self._model_rows.get(r.model, (i, i))
            self._model_rows[r.model] = (a, i + 1)
        self.set_highlights(self.highlights)

    def row_of_slice(self, model: int, row: int) -> int:
        return int(self.rows_of_slices(model, np.asarray([row], np.int64))[0])

    def rows_of_slices(self, model: int, rows: np.ndarray) -> np.ndarray:
        """Timeline row of each slice (its depth's row, or its track's first row when folded); -1 = hidden."""
        lut = self._row_lut.get(model)
        if lut is None or not len(rows):
            return np.full(len(rows), -1, np.int64)
        s = self.models[model].slices
        d = np.minimum(s.depth[rows].astype(np.int64), lut.shape[1] - 1)
        return lut[s.track[rows].astype(np.int64), d]

    def set_highlights(self, highlights: dict[int, np.ndarray]) -> None:
        """Outline these slices (model -> rows sorted by start); rows and extents computed once here."""
        self.highlights = highlights
        self._hl = [highlight_of(mi, rows, self.models[mi].slices, self.rows_of_slices(mi, rows))
                    for mi, rows in highlights.items() if len(rows)]
        self.update()

    def boundingRect(self) -> QtCore.QRectF:
        """The trace's span cut to the visible x range: Qt maps this rect to device pixels to decide
        whether to paint, and a full 1 s span at a 100 ns zoom overflows that (the item vanished)."""
        t0, t1 = self._span
        pad = (t1 - t0) * 0.05
        t0, t1 = t0 - pad, t1 + pad
        vb = self.getViewBox()
        if vb is not None:
            v0, v1 = vb.viewRange()[0]
            margin = (v1 - v0) * 0.05
            t0, t1 = max(t0, v0 - margin), min(t1, v1 + margin)
            t1 = max(t1, t0 + 1.0)
        return QtCore.QRectF(t0, 0, t1 - t0, max(1, len(self.rows)))

    def viewRangeChanged(self) -> None:
        self.prepareGeometryChange()

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
        # every x is clipped to the view (+2 px): Qt's raster engine drops a whole drawRects call whose
        # coordinates pass ~2^31 px, which a 1 s slice reaches at deep zoom
        lo_px, hi_px = origin_px - 2.0, x1 * sx + dx + 2.0
        self._clip = (lo_px, hi_px)
        self._paint_bands(p, x0, x1, sx, dx, sy, dy, r0, r1)
        starts, ends, firsts, counts, row_ids, lens = [], [], [], [], [], []
        pad = 1.0 if abs(sy) >= 8 else 0.0
        for ri in range(r0, r1):
            row = self.rows[ri]
            if row.track < 0:
                if row.track in (HEADER, GROUP):
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
            clip_px(X0, X1, lo_px, hi_px)
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
        """Every other ProfilerStep of each rank as a band behind that rank's rows."""
        p.setPen(QtCore.Qt.PenStyle.NoPen)
        p.setBrush(self.theme.step_band)
        for mi, bands in self.step_bands.items():
            a_row, b_row = self._model_rows.get(mi, (0, 0))
            a_row, b_row = max(a_row, r0), min(b_row, r1)
            if b_row <= a_row:
                continue
            top, height = a_row * sy + dy, (b_row - a_row) * sy
            for i, (a, b) in enumerate(bands):
                if i % 2 or b < x0 or a > x1:
                    continue
                xa, xb = np.clip(np.array([a * sx + dx, b * sx + dx]), *self._clip)
                p.drawRect(QtCore.QRectF(xa, top, xb - xa, height))

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
        lo, hi = self._clip
        p.setBrush(QtCore.Qt.BrushStyle.NoBrush)
        p.setPen(QtGui.QPen(self.theme.highlight, 2))
        for h in self._hl:
            xa, xb, ys = visible_outlines(h, x0, x1, sx, dx, r0, r1)
            if len(xa):
                clip_px(xa, xb, lo, hi)
                self._rects.resize(len(xa))
                mem = self._rects.ndarray()
                mem[:, 0], mem[:, 1], mem[:, 2], mem[:, 3] = xa, ys * sy + dy, xb - xa, sy
                p.drawRects(*self._rects.drawargs())
        for mi, src, dst in self.flows:
            self._paint_flow(p, mi, src, dst, sx, dx, sy, dy)
        if self.selected is not None:
            mi, row = self.selected
            ri = self.row_of_slice(mi, row)
            if ri >= 0:
                s = self.models[mi].slices
                xa = np.array([s.ts_ns[row] * sx + dx - 1])
                xb = np.array([xa[0] + max(3.0, s.dur_ns[row] * sx + 2)])
                clip_px(xa, xb, lo, hi)
                p.setPen(QtGui.QPen(self.theme.selection, 2))
                p.setBrush(QtCore.Qt.BrushStyle.NoBrush)
                p.drawRect(QtCore.QRectF(float(xa[0]), ri * sy + dy, float(xb[0] - xa[0]), sy))

    def _paint_flow(self, p, mi, src, dst, sx, dx, sy, dy) -> None:
        s = self.models[mi].slices
        ra, rb = self.row_of_slice(mi, src), self.row_of_slice(mi, dst)
        if ra < 0 or rb < 0:
            return
        seg = clip_segment(float(s.ts_ns[src]) * sx + dx, (ra + 0.5) * sy + dy,
                           float(s.ts_ns[dst]) * sx + dx, (rb + 0.5) * sy + dy, *self._clip)
        if seg is None:
            return
        a, b = QtCore.QPointF(seg[0], seg[1]), QtCore.QPointF(seg[2], seg[3])
        p.setPen(QtGui.QPen(self.theme.flow, 1.5))
        p.drawLine(a, b)
        ang = math.atan2(b.y() - a.y(), b.x() - a.x())
        head = [b, QtCore.QPointF(b.x() - 9 * math.cos(ang - 0.4), b.y() - 9 * math.sin(ang - 0.4)),
                QtCore.QPointF(b.x() - 9 * math.cos(ang + 0.4), b.y() - 9 * math.sin(ang + 0.4))]
        p.setBrush(self.theme.flow)
        p.drawPolygon(QtGui.QPolygonF(head))
