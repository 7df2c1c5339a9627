"""A multi-rank run as `report` and `diff` read it, without holding its ranks: a `RunView`.

Each rank is loaded by a worker of the run's executor (the process pool, or Dask), reduced to its `RankParts`
(the rank's meta, steps, counts and the per-rank numbers a diff or a report needs: core.analysis.diff_facts,
core/ranks/rank_parts.py) and dropped, so memory is O(workers x rank) as for `analyze` (core/ranks/run.py).
The view answers what those commands ask of a TraceSet (path, ranks, primary, bundle, models' meta, span,
warnings) from the parts; the output is the same as from the loaded set (tests/core/ranks/test_views.py).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from core.ranks.executor import Executor, make_executor
from core.ranks.mapper import MapTask
from core.trace import io
from core.trace.model import EventCounts, SetQueries, TraceParseError


@dataclass(slots=True)
class ModelView:
    """One rank as the view shows it: what report / diff read of a TraceModel besides its columns."""

    rank: int
    path: str
    meta: Any  # TraceMeta (on the run's base once the view shifted it)
    devices: list[int]
    steps: Any  # StepTable (ts on the run's base)
    warnings: tuple[str, ...]
    counts: EventCounts
    span: tuple[int, int] | None  # (first start, last end) on the rank's own clock; None without slices
    own_base_unix_ns: int = 0
    parts: dict = field(default_factory=dict)  # "diff": ModelFacts, "report": rank_parts.rank_report's dict, ...
    delta: int = 0  # run clock - own clock (ns): the view moves its parts by it (they are cut on the own clock)

    @property
    def span_ns(self) -> tuple[int, int]:
        return self.span if self.span is not None else (0, 0)


def _rank_view(task: MapTask, want: dict) -> ModelView:
    """Worker side: load one rank (cache as `analyze`), keep its view and the parts `want` asks for."""
    from core.ranks.mapper import _drop, _load_one
    ts, _hit, _s = _load_one(task)
    view = view_of(ts, want)
    del ts
    _drop()
    return view


def view_of(ts, want: dict) -> ModelView:
    """The view of the one-rank set `ts` with the parts `want` asks for, every part on the rank's own clock:
    "timeline" = {v0, v1, px_ns, multi, ref_base}: the window on the clock of base ref_base (the run's, or the
    primary rank's); {spec, multi}: the window this rank chooses as the run's primary (onepass.report_pass).
    parts["timeline_at"] = (v0, v1, px_ns, multi) of the piece cut, on the own clock."""
    m = ts.models[0]
    own = int(m.meta.base_unix_ns)
    parts: dict = {}
    if "diff" in want:
        from core.analysis.diff_facts import model_facts
        parts["diff"] = model_facts(m, bool(want["diff"].get("by_shape")))
    if "unprofiled" in want:
        from core.analysis.diff_facts import unprofiled_facts
        parts["unprofiled"] = unprofiled_facts(m, want["unprofiled"].get("inflation"))
    if "report" in want:
        from core.ranks.rank_parts import rank_report
        parts["report"] = rank_report(ts, dict(want["report"], base=own))
    view = ModelView(int(m.rank), str(m.path), m.meta, list(m.devices), m.steps, tuple(m.warnings), m.counts,
                     m.span_ns if len(m.slices) else None, own, parts)
    if "timeline" in want:
        from core.ranks.rank_parts import rank_timeline
        at = _own_window(view, want["timeline"])
        if at is not None:
            parts["timeline"] = rank_timeline(ts, {"base": own, "v0": at[0], "v1": at[1], "px_ns": at[2],
                                                   "multi": at[3]})
            parts["timeline_at"] = at
    return view


def _own_window(view: ModelView, opts: dict) -> tuple | None:
    """(v0, v1, px_ns, multi) of this rank's piece on its own clock, or None (the primary's window needs the
    whole run: no ProfilerStep, or a window given on the run's clock)."""
    if "spec" in opts:
        from core.export import timeline_data
        spec = opts["spec"]
        if spec.t0_ns is not None and spec.t1_ns is not None:
            return None
        try:
            window = timeline_data.window_of(_AsPrimary(view), spec)  # (v0, v1, px_ns, text)
        except _NeedsRun:
            return None
        return int(window[0]), int(window[1]), window[2], bool(opts["multi"])
    ref, own = int(opts["ref_base"]), view.own_base_unix_ns
    shift = ref - own if ref and own else 0
    return int(opts["v0"]) + shift, int(opts["v1"]) + shift, opts["px_ns"], bool(opts["multi"])


class _NeedsRun(Exception):
    pass


class _AsPrimary:
    """What timeline_data.window_of reads of a run, from one rank's view (its own clock) as the primary."""

    def __init__(self, view: ModelView) -> None:
        self.primary = view

    def report_parts(self, key: str) -> list:
        return [self.primary.parts["report"][key]]

    @property
    def span_ns(self):
        raise _NeedsRun  # the whole run's span: every rank is needed


def _view_safe(args):
    task, want = args
    try:
        return _rank_view(task, want)
    except TraceParseError as exc:
        return ("error", str(exc.path), exc.reason)
    except MemoryError:
        return ("error", task.path, "out of memory while loading this trace")


class RunView(SetQueries):
    """A multi-rank run's ranks as views, in the loaded set's order (rank, path), on its time base."""

    def __init__(self, path, executor: Executor | None = None, use_cache: bool = True,
                 want: dict | None = None, progress: Callable[[float, str], None] | None = None,
                 mapped: tuple[list[ModelView], list[tuple]] | None = None, given: dict | None = None) -> None:
        """`mapped`: (views, failures) a caller's pass over the ranks already made (core/ranks/onepass.py);
        `given`: the RankSummaries that pass made (run_findings reduces them instead of mapping again)."""
        from core.ranks.run import tasks_of
        self.path = str(path)
        self.use_cache = use_cache
        self._found = io.discover(path)
        self._tasks = tasks_of(self._found, None, use_cache)
        self._executor = executor
        self._own = executor is None
        self._by_shape: bool | None = bool(want["diff"].get("by_shape")) if want and "diff" in want else None
        self._given = given or {}
        views, failed = mapped if mapped is not None else self._map(want or {}, progress)
        if not views:
            first = failed[0]
            raise TraceParseError(self._found.root, f"none of the {len(self._tasks)} trace files could be read "
                                                    f"({Path(first[1]).name}: {first[2]})")
        bases = [v.own_base_unix_ns for v in views]
        self.base_unix_ns = min(bases)
        for v in views:  # as core.trace.loader.assemble: the earliest model start is the run's 0
            delta = v.own_base_unix_ns - self.base_unix_ns if v.own_base_unix_ns and self.base_unix_ns else 0
            v.delta = delta
            v.parts = shift_parts(v.parts, delta)
            if delta:
                v.meta = replace(v.meta, base_unix_ns=v.meta.base_unix_ns - delta)
                v.steps = replace(v.steps, ts_ns=v.steps.ts_ns + np.int64(delta))
                if v.span is not None:
                    v.span = (v.span[0] + delta, v.span[1] + delta)
        views.sort(key=lambda v: (v.rank, v.path))
        self.models: tuple[ModelView, ...] = tuple(views)
        self._paths = [t.path for t in self._tasks]
        warnings = [f"{_rel(self._found.root, p)}: not loaded ({reason})" for _e, p, reason in failed]
        ranks = [v.rank for v in views]
        if len(views) > 1 and len(set(ranks)) != len(ranks) and self._found.kind != "bundle" \
                and not all(io.cycle_of_name(Path(v.path).name) is not None for v in views):
            warnings.append("several traces share one rank (TensorBoard workers/spans): shown side by side")
        self.warnings = tuple(warnings)
        from core.trace import extras as ex
        extras = ex.load_extras(self._found, self.base_unix_ns)
        self.bundle = extras.get("bundle")
        self.nvml = extras.get("nvml")
        self.nvml_strings = extras.get("nvml_strings")
        self.compile_info = extras.get("compile_info")
        self.cache_hit = False
        self.load_s = 0.0
        self.health: list[dict] | None = None  # the run's health checks (RunAnalysis.health), set by its maker

    # --- what a TraceSet answers ------------------------------------------------------------------------
    @property
    def span_ns(self) -> tuple[int, int]:
        spans = [m.span for m in self.models if m.span is not None]
        if not spans:
            return (0, 0)
        return min(s[0] for s in spans), max(s[1] for s in spans)

    # --- the parts -------------------------------------------------------------------------------------------
    def executor(self) -> Executor:
        if self._executor is None:
            self._executor = make_executor()
        return self._executor

    def close(self) -> None:
        if self._own and self._executor is not None:
            self._executor.close()
            self._executor = None

    def _map(self, want: dict, progress=None, paths=None) -> tuple[list[ModelView], list[tuple]]:
        from core.ranks.budget import estimate_peak
        ex = self.executor()
        views: list[ModelView] = []
        failed: list[tuple] = []
        tasks = [t for t in self._tasks if paths is None or t.path in paths]
        n = len(tasks)
        for k, (_i, res) in enumerate(ex.map_unordered(_view_safe, [(t, want) for t in tasks],
                                                      lambda a: estimate_peak(a[0].path))):
            if isinstance(res, ModelView):
                views.append(res)
            else:
                failed.append(res)
            if progress is not None:
                progress((k + 1) / max(n, 1), f"{k + 1} of {n} ranks read")
        return views, failed

    def fetch(self, want: dict, models=None) -> None:
        """Compute more parts of every rank, or of `models` (another pass over them: warm cache). A "timeline"
        window is on the run's clock."""
        if "timeline" in want:
            want = dict(want, timeline=dict(want["timeline"], ref_base=self.base_unix_ns))
        views, _failed = self._map(want, paths={m.path for m in models} if models is not None else None)
        got = {(v.rank, v.path): v.parts for v in views}
        for m in self.models:
            m.parts.update(shift_parts(got.get((m.rank, m.path), {}), m.delta))

    def diff_facts(self, by_shape: bool = False) -> list:
        if self._by_shape != by_shape or any("diff" not in m.parts for m in self.models):
            self.fetch({"diff": {"by_shape": by_shape}})
            self._by_shape = by_shape
        return [m.parts["diff"] for m in self.models]

    def unprofiled_facts(self, inflation: float | None) -> list[tuple[int, tuple]]:
        self.fetch({"unprofiled": {"inflation": inflation}})
        return [(m.rank, m.parts.pop("unprofiled")) for m in self.models]

    def report_parts(self, key: str) -> list:
        """Every rank's report part `key` (core/ranks/rank_parts.py), in the view's model order."""
        if key == "timeline":
            return [m.parts["timeline"] for m in self.models]
        return [m.parts["report"][key] for m in self.models]

    def run_findings(self) -> list[dict]:
        """The run's findings as `analyze` gives them (map / reduce over the ranks, stored summaries used)."""
        from core.ranks.run import analyze_run
        return analyze_run(self.path, self.executor(), use_cache=self.use_cache,
                           given=self._given).analysis.to_json()["findings"]


def shift_parts(parts: dict, delta: int) -> dict:
    """A rank's parts cut on its own clock, on the run's (ts + delta): integers moved, so exactly the parts the
    loaded run gives (pixel columns and durations do not move)."""
    if not delta:
        return parts
    d = int(delta)
    out = dict(parts)
    if "report" in parts:
        rep = dict(parts["report"])
        st = rep["steps"]
        rep["steps"] = st[:2] + (st[2] + np.int64(d),) + st[3:]
        rep["memory_peak"] = [dict(p, at_ns=p["at_ns"] + d) for p in rep["memory_peak"]]
        rep["memory_curves"] = tuple([(p, key, x + np.int64(d), y) for p, key, x, y in side]
                                     for side in rep["memory_curves"])
        if rep.get("busiest") is not None:  # (step number, its start, its end)
            step = rep["busiest"]
            rep["busiest"] = (step[0], step[1] + d, step[2] + d)
        out["report"] = rep
    if "timeline" in parts:
        labels, starts, big, runs, texts = parts["timeline"]
        out["timeline"] = (labels, starts, (big[0] + d, big[1] + d, big[2], big[3]), runs,
                           [(a + d, b + d, row, name) for a, b, row, name in texts])
    if "timeline_at" in parts:  # (v0, v1, px_ns, multi)
        at = parts["timeline_at"]
        out["timeline_at"] = (at[0] + d, at[1] + d, at[2], at[3])
    return out


def open_view(path, use_cache: bool = True, want: dict | None = None, executor: Executor | None = None,
              progress=None) -> RunView:
    return RunView(path, executor, use_cache, want, progress)


def _rel(root: Path, p) -> str:
    try:
        return str(Path(p).relative_to(root))
    except ValueError:
        return Path(p).name
