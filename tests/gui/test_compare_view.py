"""Compare tab: File > Compare with…, parallel loads, linked step-aligned timelines, delta tables."""
from __future__ import annotations

import csv

from PySide6 import QtCore, QtGui

from helpers import REPO

PAIRS = REPO / "tests" / "data" / "device" / "pairs"


def _compare(qtbot, win, a, b):
    with qtbot.waitSignal(win.integrations.compare.sig_compare_shown, timeout=120_000) as blocker:
        win.compare_paths(str(a), str(b))
    return blocker.args[0]


def test_compare_tab_shows_the_change(qtbot, main_window, tmp_path):
    view = _compare(qtbot, main_window, PAIRS / "copy_pageable", PAIRS / "copy_pinned")
    assert main_window.tabs.currentWidget() is view and main_window.progress.isHidden()
    text = view.header.text()
    assert "faster" in text and "significant" in text
    # kernel deltas: the pageable copy is gone, the pinned one new, both at the top (sorted by |Δ|)
    proxy = view.kernels.proxy
    top = {proxy.index(r, 0).data(): proxy.index(r, 1).data() for r in range(2)}
    assert top == {"Memcpy HtoD (Pageable -> Device)": "− gone", "Memcpy HtoD (Pinned -> Device)": "＋ new"}
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
