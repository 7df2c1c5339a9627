"""The after-open lane: one background thread for the work a trace tab starts once it is shown - the
health check, the Kernels/Ops/Steps tables and the Issues analysis - one job at a time, most visible
first.

Why one thread: these jobs are Python + numpy under the GIL. Run side by side (they were: every worker
started at once in Qt's global pool, two at a time on two cores, plus the cache write), the UI thread
got about a third of the GIL, so 100 ms of its own work at open became a 300 ms freeze, and a
1.1 GB trace froze the window for 0.45-0.8 s (a 10 GB one for up to 1 s). One lane thread leaves the
UI thread every other GIL turn; the jobs finish in about the same total time (they never ran in
parallel anyway), the visible ones first.

Priorities (higher runs first): what the user sees at once before what hides in a tab; a hidden table
whose tab is opened is moved up (`promote`). Jobs are superqt workers (QRunnables). The queue is ours:
one job at a time goes to a one-thread QThreadPool when the previous one has finished (Qt's own
priorities are not kept when a job lands on an idle pool thread: it is queued at priority 0 and a later,
lower job overtook it). `hold_until_painted` keeps new jobs waiting until a just-opened view has painted.
`_pump` runs on the UI thread (start/drop/promote and the workers' `finished` signal)."""
from __future__ import annotations

import itertools
import time

import shiboken6
from PySide6 import QtCore

HEALTH, VISIBLE, ISSUES, HIDDEN = 30, 20, 10, 0
BREATH_MS = 30  # between two jobs: the UI thread applies and paints the last result alone ...
BREATH_AFTER_S = 0.05  # ... after a job this long (a small trace's jobs follow each other at once)
_STARTED: dict = {}  # id(worker) -> time.monotonic() it started

_POOL: QtCore.QThreadPool | None = None
_QUEUE: list = []  # [priority, seq, worker] waiting; the highest priority (then the oldest) runs next
_SEQ = itertools.count()
_RUNNING: list = []  # the one job in the pool (kept referenced until it has finished)
_HOLDS: set = set()  # open holds (hold_until_painted): nothing new starts while any is open


def pool() -> QtCore.QThreadPool:
    global _POOL
    if _POOL is None:
        _POOL = QtCore.QThreadPool()
        _POOL.setObjectName("ptprof-after-open-lane")
        _POOL.setMaxThreadCount(1)
    return _POOL


def start(worker, priority: int) -> None:
    """Queue a superqt worker (created with `_start_thread=False`) on the lane."""
    worker.setAutoDelete(False)  # ours, not the pool's
    _QUEUE.append([priority, next(_SEQ), worker])
    _pump()


def _pump() -> None:
    if _RUNNING or _HOLDS or not _QUEUE:
        if _WHEN_IDLE and not _RUNNING and not _HOLDS:
            QtCore.QTimer.singleShot(IDLE_SETTLE_MS, _fire_idle)  # still idle then: the work is done
        return
    item = max(_QUEUE, key=lambda it: (it[0], -it[1]))
    _QUEUE.remove(item)
    worker = item[2]
    _RUNNING.append(worker)
    _STARTED[id(worker)] = time.monotonic()
    worker.finished.connect(lambda w=worker: _on_finished(w))
    pool().start(worker)


def _on_finished(worker) -> None:
    if worker in _RUNNING:
        _RUNNING.remove(worker)
    # the job's result was just applied on the UI thread (its `returned` came first): after a long job
    # (a big result), let the window paint it before the next job takes the GIL back (a table filled
    # and painted beside the next job froze the window 110-170 ms on a 1 GB trace)
    took_s = time.monotonic() - _STARTED.pop(id(worker), time.monotonic())
    if took_s >= BREATH_AFTER_S:
        QtCore.QTimer.singleShot(BREATH_MS, _pump)
    else:
        _pump()


def drop(worker) -> bool:
    """Take a still-queued worker off the lane (its widget wants a newer result); False when it runs or ran."""
    for item in _QUEUE:
        if item[2] is worker:
            _QUEUE.remove(item)
            return True
    return False


def promote(worker, priority: int) -> bool:
    """Move a still-queued worker up; False when it already runs or ran."""
    for item in _QUEUE:
        if item[2] is worker:
            item[0] = max(item[0], priority)
            return True
    return False


def hold(timeout_ms: int = 2000):
    """Keep the lane's jobs waiting until the returned function is called (idempotent), at most
    `timeout_ms` (a hold whose owner was destroyed before releasing it must not stop the lane)."""
    token = object()
    _HOLDS.add(token)

    def release() -> None:
        if token in _HOLDS:
            _HOLDS.discard(token)
            _pump()

    QtCore.QTimer.singleShot(timeout_ms, release)
    return release


class _PaintWatch(QtCore.QObject):
    def __init__(self, target: QtCore.QObject, then) -> None:
        super().__init__(target)
        self._then = then

    def eventFilter(self, obj, ev) -> bool:  # noqa: N802 (Qt API)
        if ev.type() == QtCore.QEvent.Type.Paint:
            # a timer, not a 0 ms call: after this paint has finished and the window has answered once
            QtCore.QTimer.singleShot(1, self._then)
        return False


def after_first_paint(widget, fn, timeout_ms: int = 1000) -> None:
    """Call `fn` once: after `widget` (its viewport, for a scroll area / graphics view) has painted,
    at once when it is not shown (nothing would paint it, e.g. a view built for an export), at the
    latest after `timeout_ms`."""
    target = widget.viewport() if hasattr(widget, "viewport") else widget
    done: list = []
    watch: list = []

    def once() -> None:
        if done:
            return
        done.append(True)
        if watch and shiboken6.isValid(target) and shiboken6.isValid(watch[0]):
            target.removeEventFilter(watch[0])
        fn()

    watch.append(_PaintWatch(target, once))
    target.installEventFilter(watch[0])
    QtCore.QTimer.singleShot(0, lambda: None if shiboken6.isValid(widget) and widget.isVisible() else once())
    QtCore.QTimer.singleShot(timeout_ms, once)


def hold_until_painted(widget, timeout_ms: int = 1000) -> None:
    """Keep the lane's jobs waiting until `widget` has painted once (a just-opened trace's first frame
    gets the GIL to itself: the open froze the window 0.35 s longer while the health check and the Issues
    analysis started beside it), at most `timeout_ms`; at once when the widget is not shown. A job
    already running goes on."""
    after_first_paint(widget, hold(timeout_ms + 1000), timeout_ms)


_WHEN_IDLE: list = []  # callbacks waiting for the lane to be idle (no job, no hold)
IDLE_SETTLE_MS = 500  # an open queues its jobs over a few turns: look only after these


def when_idle(fn, timeout_ms: int = 15000) -> None:
    """Call `fn` once on the UI thread when the lane has no job running or queued and no hold open (the
    window's after-open work is done), at the latest after `timeout_ms`."""
    done: list = []

    def once() -> None:
        if not done:
            done.append(True)
            if entry in _WHEN_IDLE:
                _WHEN_IDLE.remove(entry)
            fn()

    entry = once
    _WHEN_IDLE.append(entry)
    QtCore.QTimer.singleShot(IDLE_SETTLE_MS, _fire_idle)
    QtCore.QTimer.singleShot(timeout_ms, once)


def _fire_idle() -> None:
    if _RUNNING or _QUEUE or _HOLDS:
        return
    for fn in list(_WHEN_IDLE):
        fn()


def idle() -> bool:
    return not _RUNNING and not _QUEUE


def wait(msecs: int = -1) -> bool:
    """Wait for the running job (tests, app exit); queued ones are dropped."""
    _QUEUE.clear()
    return _POOL is None or _POOL.waitForDone(msecs)

