"""TimelineWidget driven through its model: rows, navigation, selection, details, search, tables, pixels."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import shared_trace
from PySide6 import QtCore, QtGui

from core.trace import query
from core.trace.loader import load
from core.trace.model import Kind, TrackKind


@pytest.fixture(scope="module")
def issues_set():
    return load(shared_trace("gpu_issues.pt.trace.json.gz"), use_cache=False)


@pytest.fixture
def view(qtbot, issues_set):
    from gui.theme import load_theme
    from gui.trace_view import TraceView
    v = TraceView(issues_set, None, load_theme(dark=False))
    v.resize(1400, 900)
    qtbot.addWidget(v)
    v.show()
    qtbot.waitExposed(v)
    for panel in v.stats_panels():
        qtbot.waitUntil(lambda p=panel: p.ready, timeout=30_000)
    return v


def test_rows_follow_tracks_and_python_rows_start_collapsed(view, issues_set):
    m = issues_set.primary
    tl = view.timeline
    rows = tl.rows
    assert rows[0].kind == TrackKind.STEPS
    py = [r for r in rows if r.kind == TrackKind.PYTHON]
    assert py and all(r.collapsed for r in py)
    n = len(rows)
    r = py[0]
    tl.toggle_track(r.model, r.track)
    assert len(tl.rows) == n + int(m.tracks.max_depth[r.track])
    cpu = next(r for r in tl.rows if r.kind == TrackKind.CPU_THREAD)
    n_depth = int(m.tracks.max_depth[cpu.track]) + 1
    cap = tl.theme.depth_cap
    shown = sum(1 for r in tl.rows if r.track == cpu.track)
    if n_depth > cap + 1:  # a deep stack starts folded to its first levels; a click shows them all
        assert shown == cap and cpu.collapsed and cpu.label.endswith(f"+{n_depth - cap}")
        tl.toggle_track(cpu.model, cpu.track)
        assert sum(1 for r in tl.rows if r.track == cpu.track) == n_depth
        tl.toggle_track(cpu.model, cpu.track)
        assert sum(1 for r in tl.rows if r.track == cpu.track) == cap
    else:
        assert shown == n_depth
        tl.toggle_track(cpu.model, cpu.track)  # collapse a CPU thread to one row
        assert sum(1 for r in tl.rows if r.track == cpu.track) == 1


def test_gpu_streams_come_before_cpu_threads(view):
    kinds = [r.kind for r in view.timeline.rows]
    first_gpu = kinds.index(TrackKind.GPU_STREAM)
    first_cpu = kinds.index(TrackKind.CPU_THREAD)
    assert first_gpu < first_cpu and kinds[0] == TrackKind.STEPS


def test_zoom_and_pan_change_the_view(qtbot, view):
    tl = view.timeline
    a0, b0 = tl.view_range()
    qtbot.keyClick(tl, QtCore.Qt.Key.Key_W)
    a1, b1 = tl.view_range()
    assert b1 - a1 < 0.8 * (b0 - a0)
    qtbot.keyClick(tl, QtCore.Qt.Key.Key_D)
    a2, b2 = tl.view_range()
    assert a2 > a1 and abs((b2 - a2) - (b1 - a1)) < 1e-3 * (b1 - a1)
    qtbot.keyClick(tl, QtCore.Qt.Key.Key_S)
    assert tl.view_range()[1] - tl.view_range()[0] > b2 - a2
    tl.vb.zoom_at(0.5, center_ns=a2)
    assert tl.view_range()[0] <= a2 <= tl.view_range()[1]
    qtbot.keyClick(tl, QtCore.Qt.Key.Key_F)  # nothing selected: the whole trace
    s0, s1 = view.trace_set.span_ns
    assert tl.view_range()[0] <= s0 + 1 and tl.view_range()[1] >= s1 - 1
    a, b = tl.view_range()
    # x-linked: pyqtgraph aligns the two views on screen, so ranges agree to a pixel or two
    assert view.memory.mem_plot.getViewBox().viewRange()[0] == pytest.approx([a, b], abs=0.01 * (b - a))


def test_double_click_step_band_zooms_to_step(view, issues_set):
    st = issues_set.primary.steps
    tl = view.timeline
    tl.show_range(0, issues_set.span_ns[1])
    tl._on_vb_double_clicked(float(st.ts_ns[3] + st.dur_ns[3] / 2), 0.5)
    a, b = tl.view_range()
    assert a <= st.ts_ns[3] < st.ts_ns[3] + st.dur_ns[3] <= b
    assert b - a < 1.1 * st.dur_ns[3]


def test_click_selects_kernel_and_details_show_launch(qtbot, view, issues_set):
    m = issues_set.primary
    tl = view.timeline
    k = int(np.flatnonzero(m.slices.kind == Kind.KERNEL)[200])
    tl.reveal_slice(0, k, zoom=True)
    ri = tl.item.row_of_slice(0, k)
    x = float(m.slices.ts_ns[k] + m.slices.dur_ns[k] / 2)
    scene = tl.vb.mapViewToScene(QtCore.QPointF(x, ri + 0.5))
    pos = tl.mapFromScene(scene)
    tl._on_scene_hover((scene,))  # what the rate-limited SignalProxy delivers
    from PySide6 import QtWidgets
    tip = QtWidgets.QToolTip.text()
    assert "kernel" in tip and "duration" in tip and "grid" in tip
    with qtbot.waitSignal(tl.sig_slice_selected) as blocker:
        qtbot.mouseClick(tl.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=pos)
    assert blocker.args == [0, k]
    html = view.details.toHtml()
    assert "Launched by" in html and "cudaLaunchKernel" in html
    # args the model does not keep are read back from the file for the selected slice
    qtbot.waitUntil(lambda: "(from the file)" in view.details.toHtml(), timeout=10_000)
    html = view.details.toHtml()
    assert "shared memory" in html and "blocks per SM" in html and "warps per SM" in html
    assert tl.item.flows and tl.item.flows[0][2] == k
    src = tl.item.flows[0][1]
    view.details.sig_goto_requested.emit(0, src)  # the "go to" link
    assert tl.item.selected == (0, src)
    assert "GPU work launched" in view.details.toHtml() and "Python stack" in view.details.toHtml()


def test_search_finds_and_steps_through_matches(view, issues_set):
    view.search.edit.setText("cudaStreamSynchronize")
    n = view.search.run()
    assert n == len(query.search(issues_set.primary, "cudaStreamSynchronize")) >= 20
    assert len(view.timeline.item.highlights[0]) == n
    view.search.next()
    view.search.next()
    mi, row = view.timeline.item.selected
    assert issues_set.primary.name(row) == "cudaStreamSynchronize"
    a, b = view.timeline.view_range()
    assert a <= issues_set.primary.slices.ts_ns[row] <= b


def test_kernel_table_selection_highlights_and_goes_to_next(view, issues_set):
    m = issues_set.primary
    panel = view.kernels
    view.tabs.setCurrentWidget(panel)
    panel.select_source_row(0)
    name_id = int(panel.parts[0].state["names"][0])
    hl = view.timeline.item.highlights[0]
    assert len(hl) == int((m.slices.name == name_id).sum()) > 0
    assert np.all(m.slices.name[hl] == name_id)
    first = panel.goto_next()
    second = panel.goto_next()
    assert first != second and view.timeline.item.selected == (0, second)
    assert view.tabs.currentWidget() is panel  # stays on the table
    assert m.slices.ts_ns[second] > m.slices.ts_ns[first]


def test_tables_sort_filter_copy(qtbot, view, issues_set):
    panel = view.kernels
    col = 3  # Total
    panel.table.sortByColumn(col, QtCore.Qt.SortOrder.DescendingOrder)
    vals = [panel.proxy.index(r, col).data(QtCore.Qt.ItemDataRole.UserRole) for r in range(panel.proxy.rowCount())]
    assert vals == sorted(vals, reverse=True)
    panel.filter.setText("Memcpy")
    assert 0 < panel.proxy.rowCount() < panel.table_model.rowCount()
    panel.table.selectRow(0)
    text = panel.table.copy_selection()
    assert text.splitlines()[0].startswith("Kernel\tKind\tCalls") and "Memcpy" in text.splitlines()[1]
    ops = view.ops
    n_by_name = ops.table_model.rowCount()
    ops.group.setCurrentIndex(1)
    qtbot.waitUntil(lambda: ops.ready, timeout=30_000)
    assert ops.table_model.rowCount() > n_by_name
    assert ops.table_model.headerData(1, QtCore.Qt.Orientation.Horizontal) == "Input shapes"
    # the Kernels tab is kernels.csv: same rows, same shares (of kernel time; copies are their own rows)
    from core.export import tables
    csv_rows = tables.kernels(issues_set)
    shares = dict(zip(zip(csv_rows.data[1], csv_rows.data[2]), csv_rows.data[11]))
    kt = panel.parts[0].table
    assert panel.table_model.rowCount() == len(csv_rows)
    names = issues_set.primary.strings.lookup(kt.name)
    kinds = tables.kind_labels(kt.kind)
    assert all(abs(shares[(n, k)] - round(float(p), 3)) < 1e-9 for n, k, p in zip(names, kinds, kt.gpu_pct))
    steps = view.steps
    assert steps.table_model.rowCount() == len(issues_set.primary.steps)
    headers = [steps.table_model.headerData(i, QtCore.Qt.Orientation.Horizontal)
               for i in range(steps.table_model.columnCount())]
    assert {"Communication", "TFLOP/s", "MFU"} <= set(headers)
    assert "MFU" in steps.metrics_label.text() and "launch delay" in steps.metrics_label.text()
    steps.select_source_row(2)
    st = issues_set.primary.steps
    a, b = view.timeline.view_range()
    assert a <= st.ts_ns[2] and b >= st.ts_ns[2] + st.dur_ns[2]


def _count_color(img: QtGui.QImage, rect: QtCore.QRect, color: QtGui.QColor, tol: int = 12) -> int:
    n = 0
    for y in range(rect.top(), rect.bottom(), 2):
        for x in range(rect.left(), rect.right(), 2):
            c = img.pixelColor(x, y)
            if abs(c.red() - color.red()) + abs(c.green() - color.green()) + abs(c.blue() - color.blue()) <= tol:
                n += 1
    return n


def test_pixels_gpu_rows_show_kernel_colours(view, issues_set):
    tl = view.timeline
    theme = tl.theme
    img = tl.grab().toImage()
    gpu_row = next(i for i, r in enumerate(tl.rows) if r.kind == TrackKind.GPU_STREAM)
    cpu_row = next(i for i, r in enumerate(tl.rows) if r.kind == TrackKind.CPU_THREAD)
    kernel = theme.kind_color(Kind.KERNEL)
    shades = [kernel, kernel.lighter(112), kernel.darker(112)]

    def band(row):
        top = tl.mapFromScene(tl.vb.mapViewToScene(QtCore.QPointF(tl.view_range()[0], row + 0.2)))
        bot = tl.mapFromScene(tl.vb.mapViewToScene(QtCore.QPointF(tl.view_range()[1], row + 0.8)))
        return QtCore.QRect(top.x() + 2, top.y(), bot.x() - top.x() - 4, max(2, bot.y() - top.y()))

    in_gpu = sum(_count_color(img, band(gpu_row), c) for c in shades)
    in_cpu = sum(_count_color(img, band(cpu_row), c) for c in shades)
    assert in_gpu > 50, "kernels drawn in their colour on the GPU stream row"
    assert in_cpu == 0, "no kernel colour on a CPU thread row"


def test_forward_op_links_to_its_backward(view, issues_set):
    from core.trace.model import FlowKind
    m = issues_set.primary
    f = m.flows
    i = int(np.flatnonzero(f.kind == FlowKind.FWD_BWD)[0])
    fwd, bwd = int(f.src[i]), int(f.dst[i])
    view.timeline.select_slice(0, fwd)
    assert (0, fwd, bwd) in view.timeline.item.flows
    assert "Backward" in view.details.toHtml() and m.name(bwd) in view.details.toHtml()


def test_counter_rows_draw_memory(view, issues_set):
    from gui.timeline.rows import COUNTER
    tl = view.timeline
    rows = [i for i, r in enumerate(tl.rows) if r.track == COUNTER]
    labels = [tl.rows[i].label for i in rows]
    assert any(lbl.startswith("GPU 0 memory") for lbl in labels)
    # gpu_issues.nvml.csv sits next to it, but none of its samples lies inside the profiled window:
    # no NVML row (it would be empty)
    assert not any(lbl.startswith("NVML gpu0 util") for lbl in labels)
    mem_row = rows[labels.index(next(lbl for lbl in labels if lbl.startswith("GPU 0 memory")))]
    tl.vb.scroll_to_row(mem_row)
    img = tl.grab().toImage()
    top = tl.mapFromScene(tl.vb.mapViewToScene(QtCore.QPointF(tl.view_range()[0], mem_row + 0.1)))
    bot = tl.mapFromScene(tl.vb.mapViewToScene(QtCore.QPointF(tl.view_range()[1], mem_row + 0.95)))
    blue = QtGui.QColor("#4a7fd4")
    assert _count_color(img, QtCore.QRect(top.x() + 2, top.y(), bot.x() - top.x() - 4, bot.y() - top.y()), blue) > 50
    assert tl.item.slice_at(mem_row, tl.view_range()[0] + 1, 1e9) is None  # counters are not slices
    mid = tl.vb.mapViewToScene(QtCore.QPointF(sum(tl.view_range()) / 2, mem_row + 0.5))
    tip = tl._counter_tip(mid)
    assert tip.startswith("GPU 0 memory") and "MiB" in tip


def test_context_menu_finds_all_with_the_name(view, issues_set):
    m = issues_set.primary
    k = int(np.flatnonzero(m.slices.kind == Kind.KERNEL)[5])
    menu = view.timeline.context_menu(0, k)
    find = next(a for a in menu.actions() if a.text().startswith("Find all"))
    find.trigger()
    assert view.search.edit.text() == m.name(k)
    assert len(view.timeline.item.highlights[0]) == len(query.search(m, m.name(k)))
