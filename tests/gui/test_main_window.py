"""Open every shared trace through the main window (worker + progress), check what the user sees."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import shared_trace
from PySide6 import QtCore, QtWidgets

from core.trace.model import Kind, TrackKind

TRACES = ["gpu_issues.pt.trace.json.gz", "gpu_clean.pt.trace.json.gz", "gpu_dataloader.pt.trace.json.gz",
          "gpu_memory.pt.trace.json.gz", "gpu_compile_small.pt.trace.json.gz", "gpu_minimal_opts.pt.trace.json.gz",
          "cpu_train.pt.trace.json.gz", "cpu_compile.pt.trace.json.gz", "gpu_ddp2"]


@pytest.mark.parametrize("name", TRACES)
def test_open_shared_trace(qtbot, main_window, open_and_wait, name):
    path = shared_trace(name)
    ts = open_and_wait(main_window, path)
    view = main_window.current_view()
    from gui.timeline.rows import GROUP
    for g in [r for r in view.timeline.rows if r.track == GROUP]:  # sparse side streams: one click away
        view.timeline.toggle_track(g.model, GROUP)
    rows = view.timeline.rows
    m = ts.primary
    gpu_tracks = {t for t in range(len(m.tracks)) if m.tracks.kind[t] == TrackKind.GPU_STREAM
                  and m.slices.track_offsets[t + 1] > m.slices.track_offsets[t]}
    shown_gpu = {r.track for r in rows if r.model == 0 and r.kind == TrackKind.GPU_STREAM}
    assert shown_gpu == gpu_tracks
    for panel in view.stats_panels():
        qtbot.waitUntil(lambda p=panel: p.ready, timeout=60_000)
    # the tables and the timeline read sparse arg columns without building them (core/trace/sparse.py)
    assert all(mm.slices.materialized() == [] for mm in ts.models)
    if name.startswith("gpu_"):
        assert gpu_tracks, "GPU traces have stream rows"
        assert view.kernels.table_model.rowCount() > 0
    # a GPU stream shows one row per lane
    for t in gpu_tracks:
        assert sum(1 for r in rows if r.model == 0 and r.track == t) == int(m.tracks.max_depth[t]) + 1
    assert view.steps.table_model.rowCount() == sum(max(1, len(mm.steps)) for mm in ts.models)  # all ranks
    assert view.ops.table_model.rowCount() > 0
    assert len(ts.models) == view.rank_filter.count() - (1 if len(ts.models) > 1 else 0)
    t0, t1 = view.timeline.view_range()
    if len(m.steps) > 1:  # default zoom: the second step
        assert t0 <= m.steps.ts_ns[1] and t1 >= m.steps.ts_ns[1] + m.steps.dur_ns[1]
        assert t1 - t0 < 1.1 * m.steps.dur_ns[1]
    assert main_window.progress.isHidden()


def test_multi_rank_filter(qtbot, main_window, open_and_wait):
    ts = open_and_wait(main_window, shared_trace("gpu_ddp2"))
    assert len(ts.models) == 2
    view = main_window.current_view()
    assert {r.model for r in view.timeline.rows} == {0, 1}
    view.rank_filter.setCurrentIndex(2)  # only the second rank
    assert {r.model for r in view.timeline.rows} == {1}
    assert view.kernels.model is ts.models[1]
    qtbot.waitUntil(lambda: view.kernels.ready, timeout=30_000)
    assert view.kernels.table_model.rowCount() > 0
    from core.analysis.memory import memory_series
    assert [k for k in view.memory.curves if "allocated" in k] == \
        [f"{d.label} allocated" for d in memory_series(ts.models[1])]
    view.rank_filter.setCurrentIndex(0)
    assert {r.model for r in view.timeline.rows} == {0, 1}
    # all ranks: every rank's rows in the tables (Rank column first), and both GPUs' memory
    from core.analysis.stats import kernel_table
    for panel in view.stats_panels():
        qtbot.waitUntil(lambda p=panel: p.ready, timeout=30_000)
    kt = view.kernels.table_model
    assert kt.headerData(0, QtCore.Qt.Orientation.Horizontal) == "Rank"
    per_rank = [len(kernel_table(m, kinds=(Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET)).name) for m in ts.models]
    assert kt.rowCount() == sum(per_rank) and sorted(set(kt.columns[0].values.tolist())) == [0, 1]
    assert view.steps.table_model.rowCount() == sum(len(m.steps) for m in ts.models)
    # a rank-1 row highlights rank 1's slices and "Next" walks them
    last = kt.rowCount() - 1
    view.kernels.select_source_row(last)
    part, row = view.kernels.part_of(last)
    assert part.model_index == 1 and set(view.timeline.item.highlights) == {1}
    mi, slice_row = view.timeline.item.highlights and (1, view.kernels.goto_next())
    assert ts.models[1].slices.name[slice_row] == part.state["names"][row]
    assert view.kernels.table_model.columns[1].tooltip(last)  # full kernel name of that rank's row
    name = view.kernels.table_model.columns[1].values[last]
    view.kernels.filter.setText(name)  # the filter matches names, not the Rank column
    assert 1 <= view.kernels.proxy.rowCount() <= 2
    assert [k for k in view.memory.curves if "allocated" in k] == \
        [f"rank {m.rank} {d.label} allocated" for m in ts.models for d in memory_series(m)]
    view.timeline.toggle_track(0, -1)  # fold rank 0 to its header row
    assert [r for r in view.timeline.rows if r.model == 0] == [view.timeline.rows[0]]
    assert view.timeline.rows[0].collapsed


def test_bad_file_shows_one_dialog_without_traceback(qtbot, main_window, open_and_wait, tmp_path, monkeypatch):
    bad = tmp_path / "broken.pt.trace.json"
    bad.write_text("this is not a trace")
    shown = []
    monkeypatch.setattr(QtWidgets.QMessageBox, "critical", lambda *a, **k: shown.append(a))
    with qtbot.waitSignal(main_window.sig_load_failed, timeout=30_000) as blocker:
        main_window.open_path(str(bad))
    assert len(shown) == 1
    text = shown[0][2]
    assert "broken.pt.trace.json" in text and "Traceback" not in text and "\n" not in text
    assert blocker.args[1] in text
    assert main_window.tabs.count() == 0 and main_window.progress.isHidden()


def test_cancel_leaves_no_tab(qtbot, main_window, open_and_wait):
    path = shared_trace("gpu_dataloader.pt.trace.json.gz")
    job = main_window.open_path(str(path))
    assert main_window.progress.isVisible()
    main_window.cancel_loads()
    qtbot.waitUntil(lambda: job.worker.abort_requested, timeout=5000)
    qtbot.wait(300)
    assert main_window.progress.isHidden()


def test_recent_files_and_warnings_indicator(qtbot, main_window, open_and_wait):
    path = shared_trace("gpu_clean.pt.trace.json.gz")
    open_and_wait(main_window, path)
    assert main_window.recent_menu.actions()
    assert str(path.parent.resolve()) in main_window.recent_menu.actions()[0].text()
    assert main_window.start_page.recent.count() == 1
    assert "kernels" in main_window.summary.text()


def test_wiring_api(qtbot, main_window, open_and_wait):
    from PySide6 import QtCore, QtGui
    dock = main_window.add_dock(QtWidgets.QLabel("x"), "Extra", QtCore.Qt.DockWidgetArea.BottomDockWidgetArea)
    assert dock.toggleViewAction() in main_window.view_menu.actions()
    act = QtGui.QAction("Export PNG…", main_window)
    main_window.add_menu_action("File", act, before=main_window.action_close)
    assert act in main_window.file_menu.actions()
    main_window.set_issues_widget(QtWidgets.QLabel("issues"))
    assert main_window.issues_dock.isVisible()
    ts = open_and_wait(main_window, shared_trace("gpu_issues.pt.trace.json.gz"))
    view = main_window.current_view()
    s = ts.primary.steps
    view.show_range(float(s.ts_ns[2]), float(s.ts_ns[2] + s.dur_ns[2]))
    t0, t1 = view.timeline.view_range()
    assert abs(t0 - s.ts_ns[2]) < 1e3 and abs(t1 - (s.ts_ns[2] + s.dur_ns[2])) < 1e3
    view.highlight_slices(0, np.array([5, 6, 7]))
    assert set(view.timeline.item.highlights[0].tolist()) == {5, 6, 7}
    i = view.add_tab(QtWidgets.QLabel("hta"), "HTA", replace_hta=True)
    assert view.tabs.tabText(i) == "HTA" and view.tabs.indexOf(view.hta_placeholder) == -1


def test_drop_files_opens_them(qtbot, main_window):
    from PySide6 import QtCore, QtGui
    mime = QtCore.QMimeData()
    mime.setUrls([QtCore.QUrl.fromLocalFile(str(shared_trace("gpu_clean.pt.trace.json.gz"))),
                  QtCore.QUrl.fromLocalFile(str(shared_trace("cpu_train.pt.trace.json.gz")))])
    enter = QtGui.QDragEnterEvent(QtCore.QPoint(10, 10), QtCore.Qt.DropAction.CopyAction, mime,
                                  QtCore.Qt.MouseButton.LeftButton, QtCore.Qt.KeyboardModifier.NoModifier)
    main_window.dragEnterEvent(enter)
    assert enter.isAccepted()
    drop = QtGui.QDropEvent(QtCore.QPointF(10, 10), QtCore.Qt.DropAction.CopyAction, mime,
                            QtCore.Qt.MouseButton.LeftButton, QtCore.Qt.KeyboardModifier.NoModifier)
    main_window.dropEvent(drop)
    qtbot.waitUntil(lambda: main_window.tabs.count() == 2, timeout=60_000)  # one tab per trace
    names = {main_window.tabs.tabText(i) for i in range(2)}
    assert names == {"gpu_clean.pt.trace.json.gz", "cpu_train.pt.trace.json.gz"}


def test_process_loader_opens_and_reports_errors(qtbot, main_window, open_and_wait, tmp_path, monkeypatch):
    """Big inputs load in a child process (the parser holds the GIL); same results, same one-line errors."""
    from core.trace.loader import load
    path = shared_trace("gpu_issues.pt.trace.json.gz")
    with qtbot.waitSignal(main_window.sig_trace_loaded, timeout=120_000) as blocker:
        job = main_window.open_path(str(path), in_process=True)
    assert job.in_process
    ts = blocker.args[0]
    direct = load(path, use_cache=False)
    assert len(ts.primary.slices) == len(direct.primary.slices)
    assert main_window.current_view().timeline.indexes[0].count(0, 0, 0, 1e18) >= 0
    bad = tmp_path / "empty.pt.trace.json"
    bad.write_text("")
    shown = []
    monkeypatch.setattr(QtWidgets.QMessageBox, "critical", lambda *a, **k: shown.append(a))
    with qtbot.waitSignal(main_window.sig_load_failed, timeout=60_000):
        main_window.open_path(str(bad), in_process=True)
    assert len(shown) == 1 and "empty" in shown[0][2]


def test_process_loader_hands_the_model_over_through_the_cache(qtbot, monkeypatch, tmp_path):
    """With the cache on, the child writes the entry and the window opens it memory-mapped (no pickled
    model); with the cache off the model itself comes over the pipe. Same columns either way."""
    import numpy as np

    from core.trace.loader import load
    from gui.workers import LoadJob
    path = shared_trace("gpu_issues.pt.trace.json.gz")
    direct = load(path, use_cache=False)
    for cache_on in (True, False):
        if not cache_on:
            blocker = tmp_path / "not-a-folder"
            blocker.write_text("")
            monkeypatch.setenv("PTPROF_CACHE_DIR", str(blocker / "cache"))  # unusable: the cache is off
        got = []
        job = LoadJob(path, in_process=True)
        job.sig_job_loaded.connect(lambda ts, idx: got.append((ts, idx)))  # noqa: B023 - called in this iteration
        with qtbot.waitSignal(job.sig_job_loaded, timeout=120_000):
            job.start()
        ts, indexes = got[0]
        # From the cache the columns are read-only views of the entry (memmapped, or bytes-backed when
        # small); over the pipe they are fresh writeable arrays.
        assert ts.cache_hit == cache_on
        assert (not ts.primary.slices.ts_ns.flags.writeable) == cache_on
        for col, arr in direct.primary.slices.columns().items():
            assert np.array_equal(getattr(ts.primary.slices, col), arr, equal_nan=arr.dtype.kind == "f"), col
        assert len(indexes) == 1 and len(indexes[0].order) == len(direct.primary.slices)


def test_process_loader_keeps_the_timeline_index_with_the_entry(qtbot, monkeypatch, tmp_path):
    """The loader child writes the entry with the model's timeline index; the window maps that index (no
    sort in this process), on the first open and on a reopen; equal to one built here."""
    import numpy as np

    from core.trace import index_store, query
    from core.trace.loader import load
    from gui.workers import LoadJob
    monkeypatch.setenv("PTPROF_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PTPROF_INDEX_MIN_SLICES", "0")  # the child reads it too
    path = shared_trace("gpu_issues.pt.trace.json.gz")
    fresh = query.SliceIndex(load(path, use_cache=False).primary)
    for _ in range(2):  # first open (the child parses), then a reopen (all from the cache)
        got = []
        job = LoadJob(path, in_process=True)
        job.sig_job_loaded.connect(lambda ts, idx: got.append((ts, idx)))  # noqa: B023 - called in this iteration
        with qtbot.waitSignal(job.sig_job_loaded, timeout=120_000):
            job.start()
        ts, (index,) = got[0]
        assert ts.cache_hit and index.stored
        for name, arr in fresh.arrays().items():
            assert np.array_equal(index.arrays()[name], arr), name
        assert index_store.has_index(tmp_path / "cache" / next(
            d.name for d in (tmp_path / "cache").iterdir() if not d.name.startswith(".")))


def test_process_loader_cancel_stops_the_child(qtbot, main_window):
    job = main_window.open_path(str(shared_trace("gpu_dataloader.pt.trace.json.gz")), in_process=True)
    qtbot.waitUntil(lambda: job.process.proc.is_alive(), timeout=30_000)
    main_window.cancel_loads()
    qtbot.waitUntil(lambda: not job.process.proc.is_alive(), timeout=10_000)
    qtbot.wait(200)
    assert main_window.tabs.count() == 0 and main_window.progress.isHidden()


def test_truncated_trace_opens_with_warnings_indicator(qtbot, main_window, open_and_wait, tmp_path, monkeypatch):
    import gzip
    raw = gzip.decompress(shared_trace("gpu_clean.pt.trace.json.gz").read_bytes())
    cut = tmp_path / "crashed.pt.trace.json"
    cut.write_bytes(raw[: len(raw) * 2 // 3])  # a run that died mid-write
    shown = []
    monkeypatch.setattr(QtWidgets.QMessageBox, "warning", lambda *a, **k: shown.append(a))
    ts = open_and_wait(main_window, cut)
    assert ts.all_warnings and len(ts.primary.slices) > 0
    assert main_window.warn_btn.isVisible() and "warning" in main_window.warn_btn.text()
    main_window.warn_btn.click()
    assert len(shown) == 1 and "truncated" in shown[0][2]


def test_big_inputs_load_in_a_thread_with_the_scanner_else_in_a_process(monkeypatch):
    from core.trace import columns
    from gui import load_process
    from gui.load_process import use_process
    big = str(shared_trace("gpu_compile_small.pt.trace.json.gz"))  # 1.4 MB: "big" below 1 MB
    monkeypatch.delenv("PTPROF_LOAD_IN_THREAD", raising=False)
    monkeypatch.delenv("PTPROF_LOAD_IN_PROCESS", raising=False)
    monkeypatch.setattr(columns, "_DISABLED", True)  # msgspec path: holds the GIL
    assert not use_process(big)  # 26 MB of JSON, under PROCESS_MIN_BYTES (64 MB): a thread
    monkeypatch.setattr(load_process, "PROCESS_MIN_BYTES", 1 << 20)
    assert use_process(big)
    if columns._scan is not None:
        monkeypatch.setattr(columns, "_DISABLED", False)  # scanner: GIL released, a thread is enough
        assert not use_process(big)
        monkeypatch.setattr(load_process, "SCANNED_PROCESS_MIN_BYTES", 1 << 20)  # multi-GB inputs: a child
        assert use_process(big)
        monkeypatch.setattr(load_process, "SCANNED_PROCESS_MIN_BYTES", 2 << 30)
        monkeypatch.setenv("PTPROF_LOAD_IN_PROCESS", "1")
        assert use_process(big)


def test_the_thread_or_child_choice_counts_inflated_bytes(tmp_path):
    """1.65 GB of .gz (17.5 GB of JSON) loaded in the window's own process: the choice reads the gzip trailer."""
    from gui.load_process import GZ_RATIO_FLOOR, XZ_RATIO_FLOOR, input_bytes
    gz = shared_trace("gpu_compile_small.pt.trace.json.gz")
    assert input_bytes(gz) > 15 * gz.stat().st_size  # its trailer: 26 MB from 1.4 MB
    run = tmp_path / "run"
    run.mkdir()
    (run / "rank0.pt.trace.json.gz").write_bytes(gz.read_bytes())
    (run / "rank1.pt.trace.json.xz").write_bytes(b"\xfd7zXZ\x00" + bytes(1000))
    (run / "rank2.pt.trace.json").write_bytes(b"{}" * 500)
    assert input_bytes(run) == input_bytes(gz) + XZ_RATIO_FLOOR * 1006 + 1000
    assert GZ_RATIO_FLOOR >= 8


def test_all_ranks_memory_plot_shows_every_rank(qtbot, tmp_path):
    """Two ranks with [memory] events: "all ranks" plots both GPUs' curves and peaks, labelled by rank."""
    import shutil

    from helpers import SAMPLE

    from core.trace.loader import load
    from gui.memory.panel import MemoryPanel
    from gui.theme import load_theme
    for r in (0, 1):
        shutil.copy(SAMPLE, tmp_path / f"rank{r}.pt.trace.json.gz")
    ts = load(tmp_path, use_cache=False)
    panel = MemoryPanel(load_theme(dark=False))
    qtbot.addWidget(panel)
    panel.set_trace(ts, None)
    assert [k for k in panel.curves if "allocated" in k] == ["rank 0 GPU 0 allocated", "rank 1 GPU 0 allocated"]
    assert len(panel.peaks) == 2 and panel.summary.toPlainText().count("peak") == 2
    panel.set_trace(ts, 1)
    assert [k for k in panel.curves if "allocated" in k] == ["GPU 0 allocated"]


@pytest.mark.parametrize("name,tab", [("gpu_issues.pt.trace.json.gz", "Kernels"), ("cpu_train.pt.trace.json.gz", "Ops")])
def test_the_bottom_pane_opens_on_a_table_not_an_empty_details(qtbot, main_window, open_and_wait, name, tab):
    """Until a slice is clicked the bottom pane shows the top kernels (ops on a CPU run); a click shows
    Details."""
    open_and_wait(main_window, shared_trace(name))
    view = main_window.current_view()
    assert view.tabs.tabText(view.tabs.currentIndex()) == tab
    view.timeline.sig_slice_selected.emit(0, 0)
    assert view.tabs.currentWidget() is view.details
    # device-time columns are hidden where every row would read 0 ns (a CPU run), shown otherwise
    qtbot.waitUntil(lambda: view.ops.ready, timeout=60_000)
    titles = [c.title for c in view.ops.table_model.columns]
    hidden = {t for i, t in enumerate(titles) if view.ops.table.isColumnHidden(i)}
    assert hidden == ({"Device", "Device self"} if tab == "Ops" else set())


def test_disabled_widgets_look_disabled_in_both_themes(qtbot):
    from PySide6 import QtGui

    from gui.theme import dark_palette
    R, G = QtGui.QPalette.ColorRole, QtGui.QPalette.ColorGroup
    light = QtWidgets.QStyleFactory.create("Fusion").standardPalette()
    for pal in (dark_palette(), light):
        for role in (R.ButtonText, R.WindowText, R.Text):
            assert pal.color(G.Disabled, role) != pal.color(G.Active, role)


def test_a_big_models_cache_write_waits_for_the_after_open_work(qtbot, main_window, open_and_wait, tmp_path, monkeypatch):
    """A model over cache.ASYNC_MIN_BYTES parsed in the window's load thread is written once the lane
    (tables, health, Issues) is idle - not beside the indexes and the open."""
    import shutil

    from core.trace import cache
    from core.trace.loader import load
    from gui import lane
    monkeypatch.setattr(cache, "ASYNC_MIN_BYTES", 0)  # this small trace counts as big
    started: list = []
    real_release = cache.release_behind
    monkeypatch.setattr(cache, "release_behind", lambda: started.append(lane.idle()) or real_release())
    path = tmp_path / "t.pt.trace.json.gz"
    shutil.copy(shared_trace("gpu_issues.pt.trace.json.gz"), path)
    open_and_wait(main_window, path)  # 1 MB: loads in the window's thread
    assert not cache.has_entry(path)  # open, but not written yet
    qtbot.waitUntil(lambda: bool(started), timeout=30_000)
    assert started == [True]  # released when the lane had nothing left
    assert cache.flush(60) and cache.has_entry(path)
    assert load(path).cache_hit


def test_running_count_in_blocks_equals_cumsum(monkeypatch):
    from core.trace import build
    monkeypatch.setattr(build, "CUMSUM_BLOCK", 7)
    rng = np.random.default_rng(3)
    for n in (1, 6, 7, 8, 14, 15, 1000):
        flags = rng.random(n) < 0.3
        flags[0] = True
        got = build._running_count(flags)  # noqa: SLF001
        assert got.dtype == np.int32 and np.array_equal(got, np.cumsum(flags, dtype=np.int32)), n
