"""`analyze_run(path)`: a multi-rank input analyzed rank by rank (map) and across ranks (reduce).

`analyze`, `report`, `diff` and the window's Issues analysis go through here for every input of several
trace files (`is_multi`); a single trace keeps the whole-set path (core.rules.analyze).
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core.ranks import reduce as rd
from core.ranks.executor import Executor, make_executor
from core.ranks.mapper import MapTask, cause_task, map_rank
from core.ranks.summary import RankSummary
from core.rules import Analysis
from core.trace import io
from core.trace.model import TraceParseError

log = logging.getLogger(__name__)


@dataclass(slots=True)
class RunAnalysis:
    analysis: Analysis
    summaries: list[RankSummary]  # in the run's model order, on the run's time base
    metrics: list[dict]  # RankMetrics.to_json() per rank
    health: list[dict]  # Health.to_json() for the run
    executor: str = ""
    mapped: int = 0  # ranks mapped now (the others came with a stored summary)
    stats: dict = field(default_factory=dict)


def is_multi(path) -> bool:
    """Whether `path` holds several trace files (ranks or cycles): the map/reduce path."""
    try:
        return len(io.discover(path).sources) > 1
    except TraceParseError:
        return False


def _map_safe(task: MapTask):
    """map_rank, with a file that cannot be read answered as ("error", path, reason): the others still count."""
    try:
        return map_rank(task)
    except TraceParseError as exc:
        return ("error", str(exc.path), exc.reason)
    except MemoryError:
        return ("error", task.path, "out of memory while loading this trace")


def tasks_of(found: io.Discovered, rules=None, use_cache: bool = True) -> list[MapTask]:
    hints = {s.rank_hint for s in found.sources}
    world = len(hints) if None not in hints else len(found.sources)
    keys = tuple(str(s.path) for s in found.sources) if len(found.sources) <= 4096 else ()
    return [MapTask(str(s.path), s.rank_hint, str(found.root), found.kind,
                    str(found.bundle_dir) if found.bundle_dir else None, world,
                    tuple(rules) if rules is not None else None, use_cache, keys) for s in found.sources]


def analyze_run(path, executor: Executor | None = None, rules=None, use_cache: bool = True,
                progress: Callable[[float, str], None] | None = None,
                cancelled: Callable[[], bool] | None = None, stored: bool = True,
                given: dict | None = None) -> RunAnalysis:
    """Map every rank (or read its stored summary), then reduce. `rules`: rule ids (None: all). `given`: trace
    path -> RankSummary (or the ("error", path, reason) of a rank that could not be read) already mapped by the
    caller in its own pass over the ranks (core/ranks/onepass.py: report / diff read each rank once).
    Raises TraceParseError when no rank can be read, AnalysisCancelled when `cancelled()` turns true."""
    from core.ranks import stored as st
    from core.rules import AnalysisCancelled
    t0 = time.perf_counter()
    found = io.discover(path)
    tasks = tasks_of(found, rules, use_cache)
    results: list[RankSummary | tuple | None] = [None] * len(tasks)
    todo = []
    keep = stored and use_cache and rules is None
    given = given or {}
    for i, task in enumerate(tasks):
        got = given.get(task.path)
        if isinstance(got, RankSummary) and keep:
            st.store(task, got, found)
        got = got if got is not None else (st.load(task) if keep else None)
        if got is not None:
            results[i] = got
        else:
            todo.append(i)
    own = executor is None
    ex = executor if executor is not None else (make_executor(workers=1) if len(todo) <= 1 else make_executor())
    try:
        done = len(tasks) - len(todo)
        if progress is not None:
            progress(done / max(len(tasks), 1), f"{done} of {len(tasks)} ranks summarised")
        from core.ranks.budget import estimate_peak
        for k, res in ex.map_unordered(_map_safe, [tasks[i] for i in todo], lambda t: estimate_peak(t.path)):
            results[todo[k]] = res
            done += 1
            if isinstance(res, RankSummary) and stored and use_cache and rules is None:
                st.store(tasks[todo[k]], res, found)
            if progress is not None:
                progress(done / max(len(tasks), 1), f"{done} of {len(tasks)} ranks summarised")
            if cancelled is not None and cancelled():
                raise AnalysisCancelled()
        map_s = time.perf_counter() - t0
        return _reduce(found, tasks, results, ex, rules, map_s, len(todo) + sum(
            1 for t in tasks if isinstance(given.get(t.path), RankSummary)))
    finally:
        if own:
            ex.close()


def _reduce(found, tasks, results, ex, rules, map_s: float, mapped: int) -> RunAnalysis:
    from core.rules.config import load_config
    failed = [r for r in results if isinstance(r, tuple)]
    good = [(t, r) for t, r in zip(tasks, results) if isinstance(r, RankSummary)]
    if not good:
        first = failed[0]
        raise TraceParseError(found.root, f"none of the {len(tasks)} trace files could be read "
                                          f"({Path(first[1]).name}: {first[2]})")
    skipped = [f"{_rel(found.root, p)}: not loaded ({reason})" for _e, p, reason in failed]
    good.sort(key=lambda ts: (ts[1].rank, ts[1].path))
    deltas = rd.time_deltas([s for _t, s in good])
    summaries = [rd.shift_summary(s, d) for (_t, s), d in zip(good, deltas)]
    ranks = [s.rank for s in summaries]
    warnings = list(skipped)
    if len(summaries) > 1 and len(set(ranks)) != len(ranks) and found.kind != "bundle" \
            and not _cycles_by_name([s.path for s in summaries]):
        warnings.append("several traces share one rank (TensorBoard workers/spans): shown side by side")
    multi = len(summaries) > 1
    all_warnings = warnings + [(f"{Path(s.path).name}: " if multi else "") + w for s in summaries for w in s.warnings]

    def cause_of(index: int, t0: np.ndarray, t1: np.ndarray):
        task, delta = good[index][0], deltas[index]
        name, ns, ev, rows = ex.call(cause_task, task, np.asarray(t0) - delta, np.asarray(t1) - delta)
        return name, ns, [rd.shift_evidence(e, delta) for e in ev], rows

    analysis = rd.reduce(str(found.root), summaries, load_config(), rules, cause_of, all_warnings, map_s)
    stats = {"map_s": round(map_s, 3), "cache_hits": sum(1 for s in summaries if s.cache_hit),
             "load_s": round(sum(s.load_s for s in summaries), 3),
             "rank_analysis_s": round(sum(s.analysis_s for s in summaries), 3)}
    return RunAnalysis(analysis, summaries, [s.metrics for s in summaries], rd.health(summaries),
                       getattr(ex, "name", ""), mapped, stats)


def _cycles_by_name(paths: list[str]) -> bool:
    """rank*.cycle* names: one rank's profiler cycles, not TensorBoard workers sharing a rank."""
    return all(io.cycle_of_name(Path(p).name) is not None for p in paths)


def _rel(root: Path, p) -> str:
    try:
        return str(Path(p).relative_to(root))
    except ValueError:
        return Path(p).name


def summarise_bundle(bundle: str | Path, workers: int | None = None) -> int:
    """Map every rank of a finished bundle that has no valid summary and store it (the launcher's call at the
    end of a run). Returns the number of ranks summarised now; never raises for a bad trace."""
    from core.ranks import stored as st
    try:
        found = io.discover(bundle)
    except Exception:  # noqa: BLE001 - nothing to summarise
        return 0
    if found.kind != "bundle" or len(found.sources) < 2:
        return 0
    tasks = [t for t in tasks_of(found) if st.load(t) is None]
    if not tasks:
        return 0
    ex = make_executor(workers=workers or (1 if len(tasks) == 1 else None))
    n = 0
    try:
        for k, res in ex.map_unordered(_map_safe, tasks):
            if isinstance(res, RankSummary) and st.store(tasks[k], res):
                n += 1
    finally:
        ex.close()
    return n
