"""Session: what the window is looking at, as plain data the panels subscribe to (no Qt).

The window owns one `Session` and reports to it; panels never read each other's attributes:

    session.set_tab(trace_set, kind)          # the current tab changed ("trace", "compare", "snapshot", None)
    session.set_analysis(trace_set, analysis) # a trace's findings are computed (kept per trace, weakly)
    session.select(Selection(...))            # a finding, a time range or a rank was chosen
    session.trace_loaded(trace_set)           # a trace opened in a tab and its view is filled
    session.run_started(bundle) / run_cycle_saved(path) / run_finished(bundle, code, runner)
    session.run_bundle_ready(bundle)          # the script run the Run dock follows (one `Run` at a time)
    session.run_connecting() / run_not_started()  # before it: a remote run's start or reattach (seconds)

and each emits one event to the callbacks subscribed to it, in the order they subscribed:

    "tab"          -> callback(trace_set | None, kind | None)
    "analysis"     -> callback(trace_set, analysis)
    "selection"    -> callback(Selection)
    "trace_loaded" -> callback(trace_set)
    "run"          -> callback(Run, change)   change: "connecting" | "not_started" | "started" | "cycle"
                                              | "finished" | "bundle"

`subscribe(event, callback)` returns a function that unsubscribes. A callback's exception propagates to
the caller of the method that emitted (as a Qt slot's would be reported): nothing is swallowed.
"""
from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EVENTS = ("tab", "analysis", "selection", "trace_loaded", "run")
RUN_CHANGES = ("connecting", "not_started", "started", "cycle", "finished", "bundle")


@dataclass(frozen=True)
class Selection:
    """What the user chose: a finding's evidence (`model_index` + `rows`), a time range, or both.

    `model_index` is the rank / cycle model (`TraceSet.models[i]`) the rows belong to; `t0_ns`/`t1_ns` the
    window to show (None: keep the current view's range); `rows` the event rows to highlight (None: none)."""
    model_index: int | None = None
    t0_ns: int | None = None
    t1_ns: int | None = None
    rows: Any = None

    @property
    def has_range(self) -> bool:
        return self.t0_ns is not None and self.t1_ns is not None and self.t1_ns > self.t0_ns

    @property
    def has_rows(self) -> bool:
        return self.model_index is not None and self.rows is not None and len(self.rows) > 0


def _resolved(path) -> str:
    return str(Path(path).resolve())


@dataclass
class Run:
    """The script run the Run dock follows: its bundle folder, whether the dock is busy with it (`running`:
    connecting to its host, or running), and the cycle traces opened as tabs while it ran (`cycle_paths`,
    resolved, in order), which its bundle replaces once open.

    `bundle` is None while a remote run connects and for cycles reported without a start (a panel driven
    directly, as tests do). `runner`: the finished run's `core.runner.session.RunSession` (or the remote
    one): how it ended (exit code, a stop asked, the switches' fate: `core.tryfix.session.outcome`)."""
    bundle: str | None
    running: bool = True
    exit_code: int | None = None
    cycle_paths: list[str] = field(default_factory=list)
    bundle_opened: bool = False  # the finished bundle went to a tab (`Session.run_bundle_ready`)
    connecting: bool = False  # a remote start or reattach in progress: busy, though nothing runs yet
    runner: Any = None

    def opened_cycle(self, path) -> bool:
        """`path` is one of this run's cycle traces, opened as a tab while the script ran."""
        return _resolved(path) in self.cycle_paths

    def replaced_by_bundle(self, path) -> bool:
        """A tab of `path` that loaded now is a cycle the opened bundle already holds (its load finished
        after the bundle's tab opened): close it."""
        return not self.running and self.bundle_opened and self.opened_cycle(path)


class Session:
    """The current tab's trace set, each trace's analysis and the last selection, with change events."""

    def __init__(self) -> None:
        self.trace_set = None  # the current tab's TraceSet (None: start page, a compare or snapshot tab)
        self.tab_kind: str | None = None
        self.selection: Selection | None = None
        self.run: Run | None = None  # the last script run the Run dock started (None: no run yet)
        self.analyses: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # TraceSet -> Analysis
        self._subscribers: dict[str, list[Callable[..., None]]] = {event: [] for event in EVENTS}

    def subscribe(self, event: str, callback: Callable[..., None]) -> Callable[[], None]:
        """Call `callback` on each `event` (one of EVENTS); returns the unsubscribe function."""
        if event not in self._subscribers:
            raise ValueError(f"unknown session event {event!r} (one of {', '.join(EVENTS)})")
        callbacks = self._subscribers[event]
        callbacks.append(callback)

        def unsubscribe() -> None:
            if callback in callbacks:
                callbacks.remove(callback)
        return unsubscribe

    def _emit(self, event: str, *args) -> None:
        for callback in list(self._subscribers[event]):  # a callback may unsubscribe itself
            callback(*args)

    # --- what the window reports ---------------------------------------------------------------
    def set_tab(self, trace_set, kind: str | None) -> None:
        """The current tab is `trace_set` (a trace tab) or none of a `kind` ("compare", "snapshot", None for
        the start page). Emitted on every switch: subscribers compare with what they show."""
        self.trace_set = trace_set
        self.tab_kind = kind
        self._emit("tab", trace_set, kind)

    def set_analysis(self, trace_set, analysis) -> None:
        """`trace_set`'s findings are done: kept (weakly: a closed trace drops them) and announced."""
        self.analyses[trace_set] = analysis
        self._emit("analysis", trace_set, analysis)

    def analysis_for(self, trace_set):
        """The analysis computed for `trace_set`, or None if it has not finished yet."""
        return self.analyses.get(trace_set) if trace_set is not None else None

    def select(self, selection: Selection) -> None:
        self.selection = selection
        self._emit("selection", selection)

    def trace_loaded(self, trace_set) -> None:
        """`trace_set` opened in a tab of its own and its view is filled (MainWindow's sig_trace_loaded)."""
        self._emit("trace_loaded", trace_set)

    # --- the script run (the Run dock) ------------------------------------------------------------
    @property
    def run_in_progress(self) -> bool:
        """The Run dock is busy (a run connects to its host or runs): it cannot start another one."""
        return self.run is not None and self.run.running

    def run_connecting(self) -> Run:
        """A remote run is being started or reattached (connecting, uploading: seconds): the dock is busy
        before the run starts; `run_started` or `run_not_started` follows."""
        self.run = Run(None, connecting=True)
        self._emit("run", self.run, "connecting")
        return self.run

    def run_not_started(self) -> Run | None:
        """The connecting run did not start (the Run dock says why): the dock is free again. Nothing
        changes (and nothing is emitted) when no run is connecting."""
        if self.run is None or not self.run.connecting:
            return self.run
        self.run.connecting = False
        self.run.running = False
        self._emit("run", self.run, "not_started")
        return self.run

    def run_started(self, bundle: str) -> Run:
        """A run started, writing `bundle`: it replaces the previous run (its cycles are forgotten)."""
        self.run = Run(str(bundle))
        self._emit("run", self.run, "started")
        return self.run

    def run_cycle_saved(self, path) -> Run:
        """A cycle's trace is complete on disk while the script goes on: kept as one of the run's cycles
        (the newest is `run.cycle_paths[-1]`) and announced, to be opened as a tab."""
        if self.run is None or not self.run.running:
            self.run = Run(None)
        self.run.cycle_paths.append(_resolved(path))
        self._emit("run", self.run, "cycle")
        return self.run

    def run_finished(self, bundle: str, exit_code: int, runner=None) -> Run:
        """The run writing `bundle` ended (any exit code: stopped and failed runs too); `runner`: its
        RunSession, kept as `run.runner` (how it ended)."""
        if self.run is None:
            self.run = Run(str(bundle))
        if self.run.bundle is None:
            self.run.bundle = str(bundle)
        self.run.running = False
        self.run.connecting = False
        self.run.exit_code = int(exit_code)
        self.run.runner = runner
        self._emit("run", self.run, "finished")
        return self.run

    def run_bundle_ready(self, bundle: str) -> Run:
        """The finished run's bundle holds traces and opens in a tab, replacing the cycle tabs."""
        if self.run is None:
            self.run = Run(str(bundle))
        self.run.bundle = str(bundle)
        self.run.running = False  # a bundle is ready only once its script ended
        self.run.bundle_opened = True
        self._emit("run", self.run, "bundle")
        return self.run
