"""Timeline on gpu_gpt_big (1.24 s): deep zoom still draws, highlights cover every match, navigation
zooms to tiny slices, readable time labels."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import shared_trace
from PySide6 import QtCore, QtGui

from core.trace import query
from core.trace.loader import load
from core.trace.model import Kind, TrackKind


@pytest.fixture(scope="module")
def gpt_set():
    return load(shared_trace("gpu_gpt_big.pt.trace.json.gz"))


@pytest.fixture
def tl(qtbot, gpt_set):
    from gui.theme import load_theme
    from gui.timeline.view import TimelineWidget
    w = TimelineWidget(load_theme(dark=False))
    w.resize(1400, 900)
    qtbot.addWidget(w)
    w.set_models(list(gpt_set.models))
    w.show()
    qtbot.waitExposed(w)
    return w


def _vb_rect(tl) -> QtCore.QRect:
    r = tl.mapFromScene(tl.vb.sceneBoundingRect()).boundingRect()
    return r.adjusted(2, 2, -2, -2)


def _count(img: QtGui.QImage, rect: QtCore.QRect, colors: set[int]) -> int:
    n = 0
    for y in range(rect.top(), rect.bottom(), 3):
        for x in range(rect.left(), rect.right(), 3):
            n += (img.pixel(x, y) & 0xFFFFFF) in colors
    return n


def _slice_colors(tl) -> set[int]:
    return {b.color().rgb() & 0xFFFFFF for b in tl.item._brushes}


def test_deep_zoom_inside_long_slices_still_draws(tl, gpt_set):
    """A 200 ns window 1 s into the trace: the python frames spanning it are ~10^10 px wide."""
    t_ns = 1.0e9
    for r in list(tl.rows):
        if r.collapsed:
            tl.toggle_track(r.model, r.track)
    tl.show_range(t_ns, t_ns + 200)
    m = gpt_set.primary
    s = m.slices
    covering = (s.ts_ns <= t_ns) & (s.ts_ns + s.dur_ns >= t_ns + 200) & (s.dur_ns > 100_000_000)
    assert covering.any(), "the window sits inside long slices"
    img = tl.grab().toImage()
    assert _count(img, _vb_rect(tl), _slice_colors(tl)) > 500


def test_highlight_all_matches_reaches_the_end_and_follows_folding(tl, gpt_set):
    m = gpt_set.primary
    rows = query.search(m, "aten::")
    assert len(rows) > 100_000
    tl.show_range(*tl.item._span)
    tl.highlight({0: rows})
    h = tl.item._hl[0]
    shown = tl.item.rows_of_slices(0, rows) >= 0
    assert len(h.row) == int(shown.sum()) > 100_000  # no cap
    (x0, x1), (y0, y1) = tl.vb.viewRange()
    sx = tl.vb.width() / (x1 - x0)
    from gui.timeline.highlight import visible_outlines
    xa, xb, R = visible_outlines(h, x0, x1, sx, -x0 * sx, 0, len(tl.rows))
    last_px = (m.slices.ts_ns[rows[shown]].max() - x0) * sx
    assert xb.max() >= last_px - 1, "outlines reach the last match"
    assert len(xa) < len(h.row) / 5, "sub-pixel outlines merged"
    # the outline colour is on screen in the last tenth of the view too
    img = tl.grab().toImage()
    rect = _vb_rect(tl)
    tail = QtCore.QRect(rect.left() + int(rect.width() * 0.9), rect.top(), int(rect.width() * 0.1), rect.height())
    assert _count(img, tail, {tl.theme.highlight.rgb() & 0xFFFFFF}) > 5
    # a deep CPU thread starts folded to its first levels: matches deeper than them sit on its last
    # shown row; folding a thread to one row moves them all onto that row
    cpu = next(r for r in tl.rows if r.kind == TrackKind.CPU_THREAD and r.collapsible)
    on_track = m.slices.track[rows] == cpu.track
    cap = tl.theme.depth_cap
    if cpu.collapsed:
        track_rows = [i for i, r in enumerate(tl.rows) if r.track == cpu.track]
        assert len(track_rows) == cap
        depth = np.minimum(m.slices.depth[rows[on_track]], cap - 1)
        assert np.all(tl.item.rows_of_slices(0, rows[on_track]) == np.asarray(track_rows)[depth])
        tl.toggle_track(cpu.model, cpu.track)  # unfold: every level has its row
        assert sum(1 for r in tl.rows if r.track == cpu.track) == int(m.tracks.max_depth[cpu.track]) + 1
    else:
        tl.toggle_track(cpu.model, cpu.track)
        first = next(i for i, r in enumerate(tl.rows) if r.track == cpu.track)
        assert np.all(tl.item.rows_of_slices(0, rows[on_track]) == first)


def test_reveal_zooms_to_a_sub_pixel_kernel_and_keeps_zoom_for_wide_slices(tl, gpt_set):
    m = gpt_set.primary
    s = m.slices
    k = np.flatnonzero((s.kind == Kind.KERNEL) & (s.dur_ns > 2_000) & (s.dur_ns < 8_000))
    row = int(k[len(k) // 2])
    tl.show_range(*tl.item._span)
    tl.select_slice(0, row, reveal=True)
    a, b = tl.view_range()
    px = s.dur_ns[row] * tl.vb.width() / (b - a)
    assert px >= 4, "the kernel is visible, not sub-pixel"
    assert a <= s.ts_ns[row] and s.ts_ns[row] + s.dur_ns[row] <= b
    assert b - a <= 40 * s.dur_ns[row]
    # a slice already wide on screen: the zoom stays, the view pans only if needed
    st = m.steps
    tl.show_range(float(st.ts_ns[1]), float(st.ts_ns[1] + st.dur_ns[1]))
    w0 = np.subtract(*tl.view_range()[::-1])
    in3 = (s.kind == Kind.CPU_OP) & (s.ts_ns > st.ts_ns[3]) & (s.dur_ns > w0 / 50) & (s.dur_ns < w0 / 2)
    wide = int(np.flatnonzero(in3)[0])
    tl.select_slice(0, wide, reveal=True)
    a, b = tl.view_range()
    assert abs((b - a) - w0) < 1e-6 * w0 and a <= s.ts_ns[wide] <= b


def test_time_axis_labels_stay_readable_at_every_zoom(tl, gpt_set):
    import re
    s0, s1 = tl.item._span
    cases = [(s0, s1), (10e6, 18.5e6), (0.5e9, 0.6e9), (1e9, 1e9 + 2e6), (1e9 + 123_456, 1e9 + 123_456 + 200)]
    for a, b in cases:
        tl.show_range(a, b)
        tl.grab()  # paints the axis, which publishes its anchor
        ax = tl.axis
        lo, hi = tl.view_range()
        for spacing, values in ax.tickValues(lo, hi, tl.vb.width()):
            for text in ax.tickStrings(values, 1, spacing):
                digits = re.sub(r"\D", "", text)
                assert len(digits) <= 5, f"{text!r} at a {b - a:.0f} ns view"
                assert text.startswith("+") == bool(tl.anchor_label.text), "offsets exactly when t₀ is shown"
    assert tl.anchor_label.text.startswith("t₀ = 1.000 123 s")
    tl.show_range(s0, s1)
    tl.grab()
    assert tl.anchor_label.text == ""


def test_flow_arrow_and_selection_drawn_at_deep_zoom(tl, gpt_set):
    m = gpt_set.primary
    s = m.slices
    k = np.flatnonzero((s.kind == Kind.KERNEL) & (s.ts_ns > 1.0e9))
    row = next(int(r) for r in k if query.launcher_of(m, int(r)) >= 0)
    src = query.launcher_of(m, row)
    assert s.ts_ns[row] - s.ts_ns[src] > 1_000  # the launch is far off screen at a 200 ns view
    tl.select_slice(0, row, reveal=False)
    t = float(s.ts_ns[row])
    tl.show_range(t - 100, t + 100)
    tl.vb.scroll_to_row(tl.item.row_of_slice(0, row))
    img = tl.grab().toImage()
    rect = _vb_rect(tl)
    assert _count(img, rect, {tl.theme.flow.rgb() & 0xFFFFFF}) > 3
    assert _count(img, rect, {tl.theme.selection.rgb() & 0xFFFFFF}) > 3
