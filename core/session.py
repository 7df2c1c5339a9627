"""Session: what the window is looking at, as plain data the panels subscribe to (no Qt).

The window owns one `Session` and reports to it; panels never read each other's attributes:

    session.set_tab(trace_set, kind)          # the current tab changed ("trace", "compare", "snapshot", None)
    session.set_analysis(trace_set, analysis) # a trace's findings are computed (kept per trace, weakly)
    session.select(Selection(...))            # a finding, a time range or a rank was chosen

and each emits one event to the callbacks subscribed to it, in the order they subscribed:

    "tab"       -> callback(trace_set | None, kind | None)
    "analysis"  -> callback(trace_set, analysis)
    "selection" -> callback(Selection)

`subscribe(event, callback)` returns a function that unsubscribes. A callback's exception propagates to
the caller of the method that emitted (as a Qt slot's would be reported): nothing is swallowed.
"""
from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

EVENTS = ("tab", "analysis", "selection")


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


class Session:
    """The current tab's trace set, each trace's analysis and the last selection, with change events."""

    def __init__(self) -> None:
        self.trace_set = None  # the current tab's TraceSet (None: start page, a compare or snapshot tab)
        self.tab_kind: str | None = None
        self.selection: Selection | None = None
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
