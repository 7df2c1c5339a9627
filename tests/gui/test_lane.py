"""The after-open lane (gui/lane.py): one job at a time, most visible first, held until the new view has
painted; queued jobs can be dropped or moved up."""
from __future__ import annotations

import threading
import time

import pytest
from PySide6 import QtWidgets
from superqt.utils import create_worker

from gui import lane

pytestmark = pytest.mark.timeout(120)


def _job(log: list, name: str, seconds: float = 0.0):
    def body():
        with _RUNNING_LOCK:
            _RUNNING[0] += 1
            _RUNNING[1] = max(_RUNNING[1], _RUNNING[0])
        time.sleep(seconds)
        log.append(name)
        with _RUNNING_LOCK:
            _RUNNING[0] -= 1
    return create_worker(body, _start_thread=False)


_RUNNING = [0, 0]  # now, most at once
_RUNNING_LOCK = threading.Lock()


@pytest.fixture
def held_view(qtbot):
    """A shown widget the lane waits on (until its next paint); returns (widget, log of finished jobs)."""
    w = QtWidgets.QLabel("view")
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    lane.hold_until_painted(w, timeout_ms=5000)
    return w, []


def test_held_jobs_run_one_at_a_time_most_visible_first(qtbot, held_view):
    w, log = held_view
    _RUNNING[:] = [0, 0]
    for name, prio in (("hidden", lane.HIDDEN), ("issues", lane.ISSUES), ("health", lane.HEALTH),
                       ("visible", lane.VISIBLE), ("last", lane.HIDDEN - 10)):
        lane.start(_job(log, name, 0.02), prio)
    assert log == [] and not lane.idle()  # nothing starts before the view's first paint
    w.update()
    qtbot.waitUntil(lambda: len(log) == 5, timeout=20_000)
    assert log == ["health", "visible", "issues", "hidden", "last"]
    assert _RUNNING[1] == 1  # never two jobs side by side
    qtbot.waitUntil(lane.idle, timeout=5000)


def test_a_view_that_is_not_shown_holds_nothing(qtbot):
    w = QtWidgets.QLabel("never shown")
    qtbot.addWidget(w)
    log: list = []
    lane.hold_until_painted(w, timeout_ms=60_000)
    lane.start(_job(log, "a"), lane.HEALTH)
    qtbot.waitUntil(lambda: log == ["a"], timeout=5000)  # long before the 60 s fallback


def test_a_dropped_job_never_runs_and_a_promoted_one_goes_first(qtbot, held_view):
    w, log = held_view
    dropped, late, early = _job(log, "dropped"), _job(log, "ops"), _job(log, "kernels")
    lane.start(dropped, lane.VISIBLE)
    lane.start(early, lane.VISIBLE)
    lane.start(late, lane.HIDDEN)
    assert lane.drop(dropped)
    assert lane.promote(late, lane.HEALTH)  # its tab was opened while it waited
    w.update()
    qtbot.waitUntil(lambda: len(log) == 2, timeout=10_000)
    assert log == ["ops", "kernels"]
    qtbot.waitUntil(lane.idle, timeout=5000)
    assert not lane.drop(late)  # ran: nothing to take back


def test_the_shown_table_is_computed_before_the_hidden_ones(qtbot):
    from helpers import shared_trace

    from core.trace.loader import load
    from gui.theme import load_theme
    from gui.trace_view import TraceView

    ts = load(shared_trace("gpu_issues.pt.trace.json.gz"), use_cache=False)
    view = TraceView(ts, None, load_theme(dark=False))
    qtbot.addWidget(view)
    order: list = []
    for p in view.stats_panels():
        p.sig_table_ready.connect(lambda p=p: order.append(p))
    view.resize(1200, 800)
    view.show()
    qtbot.waitUntil(lambda: len(order) == 3, timeout=60_000)
    assert order[0] is view.tabs.currentWidget()  # Kernels on a GPU trace: the tab the user sees


def test_a_closed_views_queued_tables_are_dropped(qtbot):
    from helpers import shared_trace

    from core.trace.loader import load
    from gui.theme import load_theme
    from gui.trace_view import TraceView

    gate = threading.Event()
    lane.start(create_worker(gate.wait, 30, _start_thread=False), lane.HEALTH + 10)  # keeps the lane busy
    ts = load(shared_trace("gpu_clean.pt.trace.json.gz"), use_cache=False)
    view = TraceView(ts, None, load_theme(dark=False))
    queued = [p._queued[0] for p in view.stats_panels()]
    assert all(any(it[2] is w for it in lane._QUEUE) for w in queued)
    view.deleteLater()
    qtbot.waitUntil(lambda: not any(it[2] is w for it in lane._QUEUE for w in queued), timeout=5000)
    gate.set()
    qtbot.waitUntil(lane.idle, timeout=10_000)


def test_when_idle_waits_for_the_queued_jobs_and_fires_once(qtbot, held_view):
    _w, log = held_view
    lane.start(_job(log, "a", 0.05), lane.VISIBLE)
    lane.start(_job(log, "b", 0.05), lane.HIDDEN)
    fired: list = []
    lane.when_idle(lambda: fired.append(list(log)), timeout_ms=20000)
    qtbot.waitUntil(lambda: bool(fired), timeout=10000)
    assert fired == [["a", "b"]]  # after every job, not at once
    qtbot.wait(lane.IDLE_SETTLE_MS + 200)
    lane.start(_job(log, "c"), lane.VISIBLE)  # a later job's end does not fire it again
    qtbot.waitUntil(lambda: "c" in log, timeout=5000)
    qtbot.wait(lane.IDLE_SETTLE_MS + 200)
    assert len(fired) == 1


def test_when_idle_fires_at_its_timeout_while_the_lane_stays_busy(qtbot):
    release = lane.hold(timeout_ms=60000)  # the lane held: never idle
    try:
        fired: list = []
        lane.when_idle(lambda: fired.append(True), timeout_ms=800)
        qtbot.waitUntil(lambda: bool(fired), timeout=5000)
        qtbot.wait(lane.IDLE_SETTLE_MS + 200)
        assert fired == [True]
    finally:
        release()
