"""`ptprof report` of a multi-rank run, one rank at a time.

`report_view` runs the analysis (map / reduce), then every rank's parts (core/ranks/rank_parts.py: its share of
every table and figure, computed in its worker) on the run's executor, and returns a RunView that
core.export.writer writes as it writes a loaded set: the same files, with memory O(workers x rank) instead of
every rank held.
"""
from __future__ import annotations

from core.ranks.executor import Executor


def report_view(path, use_cache: bool = True, width_px: int = 1600, pngs: bool = True, spec=None,
                executor: Executor | None = None):
    """(RunView with every rank's report parts, the run's RunAnalysis). The caller closes the view.

    The timeline's window is the primary rank's (its busiest or asked-for step): that rank's parts are computed
    first, then every rank's parts and timeline piece in one pass. Only a window that needs the whole run's span
    (no ProfilerSteps on the primary rank) takes a second pass for the pieces."""
    from core.export import timeline_data
    from core.export.figures import FigureSpec
    from core.ranks.executor import make_executor
    from core.ranks.run import analyze_run
    from core.ranks.views import RunView
    spec = spec or FigureSpec(width_px=width_px)
    ex = executor if executor is not None else make_executor()
    try:
        run = analyze_run(path, ex, use_cache=use_cache)
        bases = [s.base_unix_ns for s in run.summaries if s.base_unix_ns]
        base = min(bases) if bases else 0
        multi = len(run.summaries) > 1
        opts = {"base": base, "width_px": width_px, "multi": multi}
        want: dict = {"report": opts}
        window = _primary_window(path, run, ex, use_cache, opts, spec) if pngs else None
        if window is not None:
            want["timeline"] = dict(window, base=base, multi=multi)
        view = RunView(path, ex, use_cache, want=want)
        view._own = executor is None
        view.health = run.health
        if pngs and window is None:
            v0, v1, px_ns, _ = timeline_data.window_of(view, spec)
            view.fetch({"timeline": {"base": base, "v0": v0, "v1": v1, "px_ns": px_ns, "multi": len(view.models) > 1}})
    except BaseException:
        if executor is None:
            ex.close()
        raise
    return view, run


class _NeedsSpan(Exception):
    pass


class _PrimaryOnly:
    """What timeline_data.window_of reads of a run, from its primary rank's view alone."""

    def __init__(self, primary) -> None:
        self.primary = primary

    def report_parts(self, key: str) -> list:
        return [self.primary.parts["report"][key]]

    @property
    def span_ns(self):
        raise _NeedsSpan  # the whole run's span: every rank is needed


def _primary_window(path, run, ex, use_cache: bool, opts: dict, spec) -> dict | None:
    """{v0, v1, px_ns} of the timeline from the primary rank (the first in (rank, path) order), or None."""
    from dataclasses import replace

    import numpy as np

    from core.export import timeline_data
    from core.ranks.run import tasks_of
    from core.ranks.views import _rank_view
    from core.trace import io
    if not run.summaries:
        return None
    first = run.summaries[0].path
    task = next((t for t in tasks_of(io.discover(path), None, use_cache) if t.path == first), None)
    if task is None:
        return None
    prim = ex.call(_rank_view, task, {"report": opts})
    delta = prim.own_base_unix_ns - opts["base"] if prim.own_base_unix_ns and opts["base"] else 0
    if delta:  # its steps on the run's base, as RunView shifts them
        prim.steps = replace(prim.steps, ts_ns=prim.steps.ts_ns + np.int64(delta))
    try:
        v0, v1, px_ns, _ = timeline_data.window_of(_PrimaryOnly(prim), spec)
    except _NeedsSpan:
        return None
    return {"v0": v0, "v1": v1, "px_ns": px_ns}
