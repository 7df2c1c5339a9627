"""Python's cyclic garbage collector, run only from the UI thread's event loop while the app runs.

An automatic collection starts at whatever allocation crosses a threshold, in whatever thread, and
destroys every unreachable Qt wrapper it finds there. Inside a Qt call that holds one of Qt's
signal-slot mutexes that can deadlock: the test suite hung in `QObject::disconnect` (pytest-qt
disconnecting a finished wait), whose override lookup allocated, started a collection, freed the QMenu
of a window closed earlier, and its QAction's destructor waited for the mutex the disconnect held
(Qt shares a pool of mutexes between objects). From a worker thread it can also destroy a widget off
the UI thread. So while a `UiThreadGC` is installed automatic collection is off and a timer on the UI
thread collects instead, by generation when the allocation counts pass the usual thresholds (what
pyqtgraph's GarbageCollector does), with full collections spaced by how long the last one took.
Reference counting frees everything that is not in a cycle at once, as before.
"""
from __future__ import annotations

import gc
import time

from PySide6 import QtCore, QtWidgets

INTERVAL_MS = 200
FULL_SPACING = 50.0  # at least this many times its own duration between two full collections
FULL_MIN_GAP_S = 1.0


class UiThreadGC(QtCore.QObject):
    """Turns automatic collection off and collects from a UI-thread timer until `stop()`."""

    def __init__(self, parent: QtCore.QObject | None = None, interval_ms: int = INTERVAL_MS) -> None:
        super().__init__(parent)
        self.threshold = gc.get_threshold()
        self._was_enabled = gc.isenabled()
        self._next_full = 0.0
        self.collections = [0, 0, 0]
        self.timer = QtCore.QTimer(self)
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self.check)
        gc.disable()
        self.timer.start()

    def check(self) -> None:
        """One tick: collect the oldest generation whose count passed its threshold (if any)."""
        t0, t1, t2 = self.threshold
        c0, c1, c2 = gc.get_count()
        if t0 <= 0 or c0 <= t0:
            return
        gen = 0
        if c1 > t1:
            gen = 1
            now = time.monotonic()
            if c2 > t2 and now >= self._next_full:
                gen = 2
        start = time.monotonic()
        gc.collect(gen)
        if gen == 2:
            took = time.monotonic() - start
            self._next_full = start + max(FULL_MIN_GAP_S, FULL_SPACING * took)
        self.collections[gen] += 1

    def stop(self) -> None:
        """Timer off, one last collection here, automatic collection back as it was (the next `install`
        makes a new guard)."""
        self.timer.stop()
        self.setParent(None)
        gc.collect()
        if self._was_enabled:
            gc.enable()


def install(app: QtWidgets.QApplication | None = None) -> UiThreadGC | None:
    """The application's collector guard (made once, owned by the QApplication); None without one.
    Must be called on the UI thread."""
    app = app or QtWidgets.QApplication.instance()
    if app is None:
        return None
    guard = app.findChild(UiThreadGC)
    if guard is None:
        guard = UiThreadGC(app)
    return guard
