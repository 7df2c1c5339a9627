"""core.session.Session: the Qt-free model the GUI panels subscribe to (tab, analysis, selection,
trace_loaded and run events)."""
from __future__ import annotations

import gc
import subprocess
import sys

import numpy as np
import pytest

from core.session import EVENTS, Run, Selection, Session


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
    assert set(EVENTS) == {"tab", "analysis", "selection", "trace_loaded", "run"}


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


def test_trace_loaded_reaches_its_subscribers():
    session, seen = Session(), []
    a, b = _TraceSet(), _TraceSet()
    session.subscribe("trace_loaded", seen.append)
    session.trace_loaded(a)
    session.trace_loaded(b)
    assert seen == [a, b]
    assert session.trace_set is None  # loading is not switching: the "tab" event says which is current


def test_a_run_keeps_its_cycles_until_its_bundle_replaces_them(tmp_path):
    """The Run dock's run: each saved cycle is announced (to open as a tab) and kept; once the bundle is
    ready, a cycle tab whose load finishes late is one the bundle replaced; the next run starts afresh."""
    session, seen = Session(), []
    session.subscribe("run", lambda run, change: seen.append((change, list(run.cycle_paths), run.running)))
    bundle = tmp_path / "bundle"
    cycle1, cycle2 = bundle / "traces" / "rank0.cycle1.pt.trace.json.gz", bundle / "traces" / "rank0.cycle2.pt.trace.json.gz"
    run = session.run_started(str(bundle))
    assert session.run is run and run.running and run.cycle_paths == [] and run.bundle == str(bundle)
    session.run_cycle_saved(str(cycle1))
    session.run_cycle_saved(bundle / "traces" / ".." / "traces" / cycle2.name)  # the same file, spelled otherwise
    assert run.cycle_paths == [str(cycle1.resolve()), str(cycle2.resolve())]
    assert run.opened_cycle(cycle2) and not run.opened_cycle(bundle / "other.json")
    assert not run.replaced_by_bundle(cycle1)  # still running: a cycle that loads now stays

    session.run_finished(str(bundle), 0)
    assert (run.running, run.exit_code) == (False, 0)
    assert not run.replaced_by_bundle(cycle1)  # finished, but its bundle has not opened (Try it: it never does)
    session.run_bundle_ready(str(bundle))
    assert run.bundle_opened and run.replaced_by_bundle(cycle1) and run.replaced_by_bundle(str(cycle2))
    assert not run.replaced_by_bundle(bundle / "unrelated.pt.trace.json")
    assert [change for change, *_ in seen] == ["started", "cycle", "cycle", "finished", "bundle"]
    assert seen[1][1] == [str(cycle1.resolve())] and seen[2][1][-1] == str(cycle2.resolve())  # newest last
    assert [running for *_, running in seen] == [True, True, True, False, False]

    nxt = session.run_started(str(tmp_path / "next"))
    assert session.run is nxt and nxt is not run and nxt.cycle_paths == [] and not nxt.replaced_by_bundle(cycle1)


def test_run_events_without_a_start_still_make_a_run(tmp_path):
    """A panel driven without its start (a cycle or a bundle reported first) still gets one `Run`."""
    session = Session()
    run = session.run_cycle_saved(tmp_path / "c1.json")
    assert run.bundle is None and run.running and run.opened_cycle(tmp_path / "c1.json")
    run2 = session.run_bundle_ready(str(tmp_path))
    assert run2 is run and run.bundle == str(tmp_path) and run.replaced_by_bundle(tmp_path / "c1.json")
    # a cycle after the run ended belongs to a new run
    assert session.run_cycle_saved(tmp_path / "c2.json") is not run
    fresh = Session()
    finished = fresh.run_finished(str(tmp_path), 3)
    assert isinstance(finished, Run) and (finished.running, finished.exit_code) == (False, 3)


def test_a_remote_start_is_a_run_in_progress_until_it_starts_or_fails(tmp_path):
    """Connecting to a host (seconds) keeps the Run dock busy before the run starts; a failed connect
    frees it; a start refused while a run goes (no connecting run) changes nothing."""
    session, seen = Session(), []
    session.subscribe("run", lambda run, change: seen.append((change, run.running)))
    assert not session.run_in_progress and session.run_not_started() is None and seen == []
    connecting = session.run_connecting()
    assert session.run_in_progress and connecting.connecting and connecting.bundle is None
    assert session.run_not_started() is connecting and not session.run_in_progress and not connecting.connecting
    assert seen == [("connecting", True), ("not_started", False)]

    session.run_connecting()
    run = session.run_started(str(tmp_path / "b"))  # connected: the run replaces the connecting one
    assert session.run_in_progress and not run.connecting and run.bundle == str(tmp_path / "b")
    assert session.run_not_started() is run and run.running  # a refusal while it runs: still running
    runner = object()
    session.run_finished(str(tmp_path / "b"), 0, runner)
    assert not session.run_in_progress and run.runner is runner and run.exit_code == 0
    assert [change for change, _ in seen] == ["connecting", "not_started", "connecting", "started", "finished"]


def test_a_finished_run_reported_without_a_start_knows_its_bundle(tmp_path):
    """A cycle reported first makes a Run without a bundle: its end names it (Try it matches runs by it)."""
    session = Session()
    run = session.run_cycle_saved(tmp_path / "c1.json")
    assert run.bundle is None and session.run_in_progress
    session.run_finished(str(tmp_path), 1)
    assert run.bundle == str(tmp_path) and (run.running, run.exit_code, run.runner) == (False, 1, None)
