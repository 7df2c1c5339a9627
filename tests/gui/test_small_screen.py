"""1366x768 (issue 31): finding titles wrap, the Run dock folds when its run's trace opens, and the
timeline gets the height the plots and tables can give up."""
from __future__ import annotations

from helpers import shared_trace

LAPTOP = (1366, 740)


def test_the_run_dock_folds_when_its_trace_opens(qtbot, main_window):
    from gui.run.dock import show_run_dock
    win = main_window
    win.resize(*LAPTOP)
    win.show()
    qtbot.wait(50)
    panel, dock = win.integrations.run_panel, win.integrations.run_dock
    show_run_dock(win, dock)
    qtbot.wait(50)
    open_px = dock.height()
    assert open_px >= 200 and not panel.is_folded()
    with qtbot.waitSignal(win.sig_trace_loaded, timeout=120_000):
        panel.sig_bundle_ready.emit(str(shared_trace("gpu_issues.pt.trace.json.gz")))
    qtbot.waitUntil(lambda: panel.is_folded() and dock.height() < 100, timeout=10_000)
    assert dock.isVisible() and panel.status.isVisible() and not panel.live.isVisible()
    panel.fold_button.click()  # ▸ Live unfolds it to the height it had
    qtbot.waitUntil(lambda: dock.height() >= open_px - 4, timeout=10_000)
    assert not panel.is_folded()


def test_titles_wrap_and_the_timeline_gets_its_height(qtbot, main_window, open_and_wait):
    win = main_window
    win.resize(*LAPTOP)
    win.show()
    open_and_wait(win, shared_trace("gpu_issues.pt.trace.json.gz"))
    view = win.current_view()
    qtbot.wait(50)
    view.fit_splitter()
    assert view.split.sizes()[0] >= 280  # was ~240 px at 1366x768
    issues = win.integrations.issues
    qtbot.waitUntil(lambda: issues.analysis() is not None, timeout=120_000)
    table = issues.table
    qtbot.wait(50)
    line = table.fontMetrics().lineSpacing()
    assert table.wordWrap() and max(table.rowHeight(r) for r in range(issues.proxy.rowCount())) >= 2 * line
    assert all(table.rowHeight(r) <= 3 * line + 8 for r in range(issues.proxy.rowCount()))
