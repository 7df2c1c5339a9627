"""Compare tab: File > Compare with…, parallel loads, linked step-aligned timelines, delta tables."""
from __future__ import annotations

import csv

from helpers import REPO
from PySide6 import QtCore, QtGui

PAIRS = REPO / "tests" / "data" / "device" / "pairs"


def _compare(qtbot, win, a, b):
    with qtbot.waitSignal(win.integrations.compare.sig_compare_shown, timeout=120_000) as blocker:
        win.compare_paths(str(a), str(b))
    return blocker.args[0]


def test_compare_tab_shows_the_change(qtbot, main_window, tmp_path):
    view = _compare(qtbot, main_window, PAIRS / "copy_pageable", PAIRS / "copy_pinned")
    assert main_window.tabs.currentWidget() is view and main_window.progress.isHidden()
    text = view.header.text()
    assert "faster" in text and "significant" in text and text.count("gpu-bound") == 2
    # kernel deltas: the pageable copy is gone, the pinned one new, both at the top (sorted by |Δ|)
    proxy = view.kernels.proxy
    top = {proxy.index(r, 0).data(): proxy.index(r, 1).data() for r in range(2)}
    assert top == {"Memcpy HtoD (Pageable -> Device)": "− gone", "Memcpy HtoD (Pinned -> Device)": "+ new"}
    view.kernels.filter.setText("pinned")
    assert proxy.rowCount() == 1
    out = view.kernels.export_csv(tmp_path / "k.csv")
    with open(out, encoding="utf-8") as fh:
        assert len(list(csv.DictReader(fh))) == len(view.diff.kernels)
    assert "1 fixed" in view.tabs.tabText(view.tabs.indexOf(view.findings))


def test_timelines_are_step_aligned_and_linked(qtbot, main_window):
    view = _compare(qtbot, main_window, PAIRS / "gemm_bf16", PAIRS / "item_gpubound")
    a, b = view.side_a, view.side_b
    qtbot.wait(50)
    a.timeline.show_range(a.anchor_ns + 1_000, a.anchor_ns + 501_000)
    qtbot.waitUntil(lambda: abs(b.timeline.view_range()[0] - (b.anchor_ns + 1_000)) < 5_000, timeout=5_000)
    b_range = b.timeline.view_range()
    assert abs((b_range[1] - b_range[0]) - 500_000) < 10_000
    # choosing another step on B re-aligns it with A's step
    b.step_box.setCurrentIndex(b.step_box.count() - 1)
    qtbot.waitUntil(lambda: abs(b.timeline.view_range()[0] - a.timeline.view_range()[0] - (b.anchor_ns - a.anchor_ns))
                    < 5_000, timeout=5_000)


def test_a_trace_compared_with_itself_has_zero_deltas(qtbot, main_window):
    view = _compare(qtbot, main_window, PAIRS / "gemm_bf16", PAIRS / "gemm_bf16")
    assert "±" in view.header.text()
    assert all(r.delta_ns == 0 for r in view.diff.kernels)


def test_bad_input_is_one_dialog(qtbot, main_window, tmp_path, monkeypatch):
    from PySide6 import QtWidgets
    shown = []
    monkeypatch.setattr(QtWidgets.QMessageBox, "critical", lambda *a, **k: shown.append(a[2]))
    bad = tmp_path / "bad.json"
    bad.write_text("not json")
    main_window.compare_paths(str(PAIRS / "gemm_bf16"), str(bad))
    qtbot.waitUntil(lambda: bool(shown), timeout=30_000)
    assert len(shown) == 1 and "bad.json" in shown[0] and "Traceback" not in shown[0]
    qtbot.waitUntil(lambda: main_window.progress.isHidden(), timeout=5_000)


def test_cancel_stops_both_loads(qtbot, main_window):
    job = main_window.compare_paths(str(PAIRS / "loader_nw0"), str(PAIRS / "launchbound"))
    main_window.cancel_loads()
    qtbot.wait(300)
    assert main_window.progress.isHidden()
    assert not any(type(main_window.tabs.widget(i)).__name__ == "CompareView" for i in range(main_window.tabs.count()))
    assert job not in main_window.jobs


def test_shift_drop_compares_with_the_current_tab(qtbot, main_window, open_and_wait):
    open_and_wait(main_window, PAIRS / "copy_pageable")
    mime = QtCore.QMimeData()
    mime.setUrls([QtCore.QUrl.fromLocalFile(str(PAIRS / "copy_pinned"))])
    drop = QtGui.QDropEvent(QtCore.QPointF(10, 10), QtCore.Qt.DropAction.CopyAction, mime,
                            QtCore.Qt.MouseButton.LeftButton, QtCore.Qt.KeyboardModifier.ShiftModifier)
    with qtbot.waitSignal(main_window.integrations.compare.sig_compare_shown, timeout=120_000) as blocker:
        main_window.dropEvent(drop)
    assert blocker.args[0].diff.findings["fixed"][0]["rule"] == "pageable_memcpy"


def test_file_menu_compares_the_current_tab_with_a_chosen_run(qtbot, main_window, open_and_wait, monkeypatch):
    """File > Compare with Folder… (run bundles are folders) and File > Compare with… (a file)."""
    from PySide6 import QtWidgets
    open_and_wait(main_window, PAIRS / "copy_pageable")
    compare = main_window.integrations.compare
    menu = [a.text() for a in main_window.file_menu.actions()]
    assert "Co&mpare with…" in menu and "Compare with &Folder…" in menu
    asked = []
    monkeypatch.setattr(QtWidgets.QFileDialog, "getExistingDirectory",
                        lambda *a, **k: asked.append(a[1]) or str(PAIRS / "copy_pinned"))
    with qtbot.waitSignal(compare.sig_compare_shown, timeout=120_000) as blocker:
        compare.action_folder.trigger()
    assert asked == ["Compare copy_pageable with (B)"]
    view = blocker.args[0]
    assert view.diff.a.trace.endswith("copy_pageable") and view.diff.b.trace.endswith("copy_pinned")
    assert view.diff.findings["fixed"][0]["rule"] == "pageable_memcpy"
    trace = next((PAIRS / "copy_pinned" / "traces").glob("*.pt.trace.json*"))
    monkeypatch.setattr(QtWidgets.QFileDialog, "getOpenFileName", lambda *a, **k: (str(trace), ""))
    main_window.tabs.setCurrentIndex(0)  # the copy_pageable tab again
    with qtbot.waitSignal(compare.sig_compare_shown, timeout=120_000) as blocker:
        compare.action.trigger()
    assert blocker.args[0].diff.b.trace == str(trace)


def test_two_recent_entries_compare_with_the_older_as_baseline(qtbot, main_window):
    page = main_window.start_page
    # newest first, as actions.recent_files() keeps them
    page.set_recent([str(PAIRS / "copy_pinned"), str(PAIRS / "mlp_fp32"), str(PAIRS / "copy_pageable")])
    assert not page.compare_btn.isEnabled()
    page.recent.item(0).setSelected(True)
    assert not page.compare_btn.isEnabled()  # one entry: nothing to compare
    page.recent.item(2).setSelected(True)
    assert page.compare_btn.isEnabled()
    assert page.selected_pair() == (str(PAIRS / "copy_pageable"), str(PAIRS / "copy_pinned"))
    page.recent.item(1).setSelected(True)
    assert not page.compare_btn.isEnabled()  # three: which two?
    page.recent.item(1).setSelected(False)
    with qtbot.waitSignal(main_window.integrations.compare.sig_compare_shown, timeout=120_000) as blocker:
        qtbot.mouseClick(page.compare_btn, QtCore.Qt.MouseButton.LeftButton)
    d = blocker.args[0].diff
    assert d.a.trace.endswith("copy_pageable") and d.step.significant is True and d.step.delta_ns < 0


def test_both_runs_load_in_parallel_with_progress(qtbot, main_window, monkeypatch):
    """compare_paths starts both loads at once (neither waits for the other), and the status bar shows the
    compare's progress, A's and B's load stages then the analysis, until the tab is there."""
    from gui import workers
    started = []
    real_start = workers.GeneratorJob.start
    monkeypatch.setattr(workers.GeneratorJob, "start", lambda self: (started.append(self.path), real_start(self)))
    stages = []
    with qtbot.waitSignal(main_window.integrations.compare.sig_compare_shown, timeout=120_000):
        job = main_window.compare_paths(str(PAIRS / "loader_nw0"), str(PAIRS / "copy_pinned"))
        assert started == [str(PAIRS / "loader_nw0"), str(PAIRS / "copy_pinned")]  # both before any result
        assert job.loaded == [None, None] and not main_window.progress.isHidden()
        job.sig_progress_changed.connect(lambda stage, f: stages.append((stage, f)))
    assert {s[:2] for s, _ in stages} >= {"A:", "B:"} and "comparing" in [s for s, _ in stages]
    assert all(0.0 <= f <= 1.0 for _, f in stages) and stages[-1][1] >= 0.9
    qtbot.waitUntil(lambda: main_window.progress.isHidden(), timeout=5_000)


def test_big_loads_cache_writes_start_once_the_comparison_is_done(qtbot, main_window, monkeypatch):
    from core.trace import cache
    monkeypatch.setattr(cache, "ASYNC_MIN_BYTES", 0)  # these small runs count as big: queued writes
    released: list = []
    real_release = cache.release_behind
    monkeypatch.setattr(cache, "release_behind", lambda: released.append(real_release()) or released[-1])
    _compare(qtbot, main_window, PAIRS / "gemm_bf16", PAIRS / "item_gpubound")
    qtbot.waitUntil(lambda: bool(released), timeout=30_000)
    assert sum(released) >= 2  # both runs' files were queued, then released together
    assert cache.flush(60)
    assert cache.release_behind() == 0


def test_the_header_says_when_steps_are_compared_unprofiled(qtbot, main_window, tmp_path):
    """A DataLoader-paced pair (tests/data/device/pairs2): the header notes the unprofiled comparison."""
    pairs2 = REPO / "tests" / "data" / "device" / "pairs2"
    view = _compare(qtbot, main_window, pairs2 / "loader_starved_a", pairs2 / "loader_starved_b")
    assert view.diff.step_basis == "unprofiled"
    assert "unprofiled time" in view.header.text()
    assert view.grab().save(str(tmp_path / "compare.png")) is not None
