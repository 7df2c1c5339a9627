"""Opening a CUDA memory snapshot pickle in the main window: a SnapshotView tab with the active-memory
plot, the peak marked, the largest allocations at the peak and their stacks; bad pickles get a dialog."""
from __future__ import annotations

import pickle

import numpy as np
from helpers import shared_trace
from PySide6 import QtWidgets

from core.snapshot import active_timeline, load_snapshot

NAME = "gpu_memory.snapshot.pickle"


def _open(qtbot, win, path):
    with qtbot.waitSignal(win.sig_snapshot_loaded, timeout=60_000) as blocker:
        win.open_path(str(path))
    return blocker.args[0]


def test_snapshot_opens_in_a_tab(qtbot, main_window):
    from gui.snapshot.view import SnapshotView
    path = shared_trace(NAME)
    report = _open(qtbot, main_window, path)
    view = main_window.tabs.currentWidget()
    assert isinstance(view, SnapshotView) and view.report is report
    assert main_window.tabs.tabText(main_window.tabs.currentIndex()) == NAME
    assert main_window.current_view() is None and main_window.views() == []
    assert NAME in main_window.windowTitle()
    assert main_window.integrations.issues.status.text().startswith("Memory snapshot tab")  # not "No trace loaded"
    # the plot holds the whole stepped series of cuda:0, peak included
    snap = load_snapshot(path)
    tl = active_timeline(snap, 0)
    x, y = view.plot.curves[0].getOriginalDataset()
    assert len(y) == len(tl) + 2  # baseline before, hold to the end after
    div = view.plot.unit[0]
    assert np.isclose(np.max(y) * div, tl.peak_bytes)
    assert np.all(np.diff(x) >= 0)
    assert view.plot.peak_items, "peak is marked"
    # table: the largest allocations at the peak, biggest first, with a user frame or op
    model = view.table.model()
    assert model.rowCount() >= 10
    sizes = [view.table_model.columns[1].values[model.mapToSource(model.index(r, 0)).row()]
             for r in range(model.rowCount())]
    assert sizes == sorted(sizes, reverse=True)
    assert "gpu_workloads.py" in model.index(0, 0).data()
    # selecting a row shows its full stack
    view.table.selectRow(2)
    text = view.stack_text.toPlainText()
    assert text.count("\n") > 5 and "▶" in text and "Python frames" in text
    alloc = view.allocations[view.proxy.mapToSource(model.index(2, 0)).row()]
    assert view.plot.alloc_line.isVisible()
    assert view.plot.alloc_line.value() == alloc.alloc_time_ns - view.plot.t0_ns
    # segment totals agree with the snapshot
    assert view.segments_model.rowCount() == 1
    assert view.segments_model.columns[2].values[0] == snap.reserved_bytes(0)
    assert "peak active" in view.summary.text()


def test_malicious_snapshot_shows_a_dialog(qtbot, main_window, tmp_path, monkeypatch):
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            import os
            return (os.system, (f"touch {marker}",))

    bad = tmp_path / "evil.pickle"
    bad.write_bytes(pickle.dumps({"segments": [Evil()]}))
    shown = []
    monkeypatch.setattr(QtWidgets.QMessageBox, "critical", lambda *a: shown.append(a[2]))
    with qtbot.waitSignal(main_window.sig_load_failed, timeout=30_000) as blocker:
        main_window.open_path(str(bad))
    assert "refused" in blocker.args[1]
    assert shown and "evil.pickle" in shown[0]
    assert not marker.exists()
    assert main_window.tabs.count() == 0


def test_open_dialog_filter_offers_pickles():
    from gui import actions
    assert "*.pickle" in actions.TRACE_FILTER


def test_snapshot_tab_shows_allocations_as_blocks_and_hides_the_issues_dock(qtbot, main_window):
    import pyqtgraph as pg

    from gui.snapshot.blocks import BlocksItem
    path = shared_trace(NAME)
    _open(qtbot, main_window, path)
    view = main_window.tabs.currentWidget()
    assert not main_window.issues_dock.isVisible()  # it would only say that findings do not apply
    blocks = view.blocks
    assert blocks.isVisible() and len(blocks.layout_) > 1000
    items = [i for i in blocks.getPlotItem().items if isinstance(i, pg.GraphicsObject)]
    assert sum(isinstance(i, BlocksItem) for i in items) == 1  # batched: one item for every block
    assert len(blocks.item.paths) <= 10  # one painter path per colour
    # the per-allocation view shares the active-memory plot's time axis
    assert blocks.getPlotItem().vb.linkedView(pg.ViewBox.XAxis) is view.plot.getPlotItem().vb
    layout = blocks.layout_
    st = view.snapshot.stacks
    with_py = [int(k) for k in np.argsort(-layout.size) if layout.stack[k] >= 0 and st.user_frame[layout.stack[k]] >= 0]
    i = with_py[0]
    text = blocks.block_text(i)
    assert "MiB" in text or "GiB" in text
    assert "gpu_workloads.py" in text  # the allocating stack
    # hovering a block outlines it
    t_mid = (int(layout.t0_ns[i]) + int(layout.t1_ns[i])) // 2
    y = layout.bottom_at(i, t_mid) + layout.size[i] / 2
    from PySide6 import QtCore
    vb = blocks.getPlotItem().vb
    scene_pt = vb.mapViewToScene(QtCore.QPointF(t_mid - blocks.t0_ns, y / blocks.unit[0]))
    blocks._on_scene_hover((scene_pt,))
    assert blocks.hovered == i and not blocks.item.hovered.isEmpty()
    # the stack pane wraps instead of clipping at its right edge
    assert view.stack_text.lineWrapMode() == QtWidgets.QPlainTextEdit.LineWrapMode.WidgetWidth


def test_snapshot_plot_fits_the_data_and_its_labels(qtbot, main_window):
    """x runs from the first to the last traced event (auto-range counted the pixel-sized labels and the
    x-link stretched it ~20 % past the end), y leaves room above the reserved line for its label."""
    _open(qtbot, main_window, shared_trace(NAME))
    view = main_window.tabs.currentWidget()
    qtbot.wait(50)
    (x0, x1), (_y0, y1) = view.plot.getPlotItem().vb.viewRange()
    t_end = view.plot.t_end_ns
    assert x0 <= 0 and t_end <= x1 <= 1.05 * t_end, (x1, t_end)
    assert np.allclose(view.blocks.getPlotItem().vb.viewRange()[0], [x0, x1])  # the blocks plot follows
    reserved = view.snapshot.reserved_bytes(0) / view.plot.unit[0]
    assert y1 >= 1.1 * reserved
