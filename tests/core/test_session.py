"""core.session.Session: the Qt-free model the GUI panels subscribe to (tab, analysis, selection events)."""
from __future__ import annotations

import gc
import subprocess
import sys

import numpy as np
import pytest

from core.session import EVENTS, Selection, Session


class _TraceSet:  # stands for core.trace.model.TraceSet: the session keys analyses by identity, weakly
    pass


def test_events_reach_subscribers_in_order_with_their_arguments():
    session, seen = Session(), []
    ts = _TraceSet()
    session.subscribe("tab", lambda t, kind: seen.append(("tab-1", t, kind)))
    session.subscribe("tab", lambda t, kind: seen.append(("tab-2", t, kind)))
    session.subscribe("analysis", lambda t, a: seen.append(("analysis", t, a)))
    session.subscribe("selection", lambda sel: seen.append(("selection", sel)))

    session.set_tab(ts, "trace")
    session.set_analysis(ts, "findings")
    session.select(Selection(2, 10, 20, np.array([3, 4])))
    session.set_tab(None, "snapshot")

    assert [e[0] for e in seen] == ["tab-1", "tab-2", "analysis", "selection", "tab-1", "tab-2"]
    assert seen[0][1:] == (ts, "trace") and seen[-1][1:] == (None, "snapshot")
    assert seen[2][1:] == (ts, "findings")
    assert seen[3][1].model_index == 2 and list(seen[3][1].rows) == [3, 4]
    assert (session.trace_set, session.tab_kind) == (None, "snapshot")
    assert session.selection is seen[3][1]


def test_analyses_are_kept_per_trace_and_dropped_with_it():
    session = Session()
    a, b = _TraceSet(), _TraceSet()
    session.set_analysis(a, "A")
    assert session.analysis_for(a) == "A"
    assert session.analysis_for(b) is None and session.analysis_for(None) is None
    del a
    gc.collect()
    assert len(session.analyses) == 0  # a closed trace does not keep its findings alive


def test_unsubscribe_and_unknown_event():
    session, seen = Session(), []
    unsubscribe = session.subscribe("selection", seen.append)
    session.select(Selection(t0_ns=1, t1_ns=2))
    unsubscribe()
    unsubscribe()  # twice is harmless
    session.select(Selection(t0_ns=3, t1_ns=4))
    assert [s.t0_ns for s in seen] == [1]

    once = []

    def first_only(sel):  # a callback may unsubscribe itself while the event is going out
        once.append(sel)
        stop()
    stop = session.subscribe("selection", first_only)
    session.subscribe("selection", seen.append)
    session.select(Selection(t0_ns=5, t1_ns=6))
    session.select(Selection(t0_ns=7, t1_ns=8))
    assert len(once) == 1 and [s.t0_ns for s in seen] == [1, 5, 7]

    with pytest.raises(ValueError, match="unknown session event 'tabs'"):
        session.subscribe("tabs", print)
    assert set(EVENTS) == {"tab", "analysis", "selection"}


@pytest.mark.parametrize(("selection", "has_range", "has_rows"), [
    (Selection(0, 100, 200, np.array([1])), True, True),
    (Selection(0, 0, 0, np.array([], dtype=np.int64)), False, False),  # a finding without a time range
    (Selection(t0_ns=5, t1_ns=9), True, False),                         # a step clicked in the breakdown
    (Selection(1, None, None, [7]), False, True),
])
def test_selection_says_what_to_show(selection, has_range, has_rows):
    assert (selection.has_range, selection.has_rows) == (has_range, has_rows)


def test_session_imports_no_qt():
    code = "import sys, core.session; assert not any(m.startswith(('PySide6', 'gui')) for m in sys.modules)"
    subprocess.run([sys.executable, "-c", code], check=True)
