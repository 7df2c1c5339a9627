"""gui/gc_guard.py: while the app runs, cyclic garbage is collected only from the UI thread's event loop."""
from __future__ import annotations

import gc
import threading
import weakref

from PySide6 import QtCore, QtWidgets

from gui import gc_guard


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_the_window_turns_automatic_collection_off_and_the_timer_collects(qtbot, main_window):
    guard = QtWidgets.QApplication.instance().findChild(gc_guard.UiThreadGC)
    assert guard is not None and not gc.isenabled()
    assert gc_guard.install() is guard  # one per application
    before = list(guard.collections)
    refs = []
    for _ in range(3 * guard.threshold[0]):  # past the first threshold: cyclic garbage only a collection frees
        c = _Cycle()
        refs.append(weakref.ref(c))
        del c
    assert all(r() is not None for r in refs[:10])  # nothing collected at allocation time
    qtbot.waitUntil(lambda: all(r() is None for r in refs), timeout=5_000)  # the UI thread's timer did
    assert sum(guard.collections) > sum(before)


def test_no_collection_runs_in_a_worker_thread(qtbot, main_window):
    """Garbage made in a worker thread is freed by the UI thread, where Qt wrappers may be destroyed."""
    seen: list[str] = []

    class Tracked:
        def __init__(self) -> None:
            self.me = self

        def __del__(self) -> None:
            seen.append(threading.current_thread().name)

    def work() -> None:
        for _ in range(20_000):  # many times the gen-0 threshold: automatic GC would run in this thread
            Tracked()

    t = threading.Thread(target=work, name="worker")
    t.start()
    t.join()
    qtbot.waitUntil(lambda: len(seen) == 20_000, timeout=10_000)
    assert set(seen) == {threading.main_thread().name}


def test_stop_gives_automatic_collection_back(qtbot):
    app = QtWidgets.QApplication.instance()
    was = gc.isenabled()
    guard = gc_guard.UiThreadGC(app)
    assert not gc.isenabled() and guard.timer.isActive()
    guard.stop()
    assert gc.isenabled() == was and not guard.timer.isActive()
    assert guard not in app.findChildren(gc_guard.UiThreadGC)


def test_full_collections_are_spaced_by_their_cost(qtbot, monkeypatch):
    guard = gc_guard.UiThreadGC(QtCore.QCoreApplication.instance())
    try:
        guard.timer.stop()
        t0, t1, t2 = guard.threshold
        calls = []
        monkeypatch.setattr(gc_guard.gc, "collect", lambda gen=2: calls.append(gen) or 0)
        monkeypatch.setattr(gc_guard.gc, "get_count", lambda: (t0 + 1, t1 + 1, t2 + 1))
        guard.check()
        guard.check()  # right after a full one: only generation 1
        assert calls == [2, 1]
        monkeypatch.setattr(gc_guard.gc, "get_count", lambda: (0, 0, 0))
        guard.check()
        assert calls == [2, 1]  # nothing over the thresholds: nothing collected
    finally:
        monkeypatch.undo()
        guard.stop()
