"""`report` and `diff` of a multi-rank run read each rank once: one pass that analyzes and cuts the view.

Each worker loads its rank once (cache or parse), runs the map (core/ranks/mapper.py: per-rank rules ->
RankSummary) unless the bundle stores the rank's summary, and computes the parts the command asks for
(core/ranks/views.py `view_of`) on the rank's own clock; the parent reduces the summaries (`analyze_run(...,
given=)`) and the RunView moves each rank's parts onto the run's clock (`shift_parts`: integers, exact). Before,
the analysis and the parts were two passes: with `--no-cache` every rank was parsed twice, with the cache read
twice (report CPU +31-36 % over analyze at 32 ranks).

The timeline's window is the primary rank's (the first in (rank, path) order): that rank is read first, as a
worker call, and chooses the window on its own clock; every other rank cuts its piece in that window moved to
its own clock by the two ranks' time bases. A guess that was not the primary (ranks named otherwise than they
record), a window that needs the whole run (no ProfilerStep), or a rank whose time base is 0 while others have
one, get their pieces in a second pass over those ranks only (views.RunView.fetch).
"""
from __future__ import annotations

from core.ranks.executor import Executor
from core.ranks.mapper import MapTask
from core.trace.model import TraceParseError


def _read(args):
    """Worker: (summary | None | ("error", path, reason), ModelView | the same error) of one rank, loaded once."""
    task, want, summarise = args
    from core.ranks import mapper
    from core.ranks.views import view_of
    try:
        ts, hit, load_s = mapper._load_one(task)
        summary = mapper.summary_of(ts, task, hit, load_s) if summarise else None
        view = view_of(ts, want)
        del ts
        mapper._drop()
        return summary, view
    except TraceParseError as exc:
        err = ("error", str(exc.path), exc.reason)
    except MemoryError:
        err = ("error", task.path, "out of memory while loading this trace")
    return err, err


def _order(task: MapTask) -> tuple:
    """The loaded set's model order (rank, path) as far as the names tell it before anything is read."""
    return (task.rank_hint is None, task.rank_hint or 0, task.path)


def drain(gen):
    """The return value of a generator whose progress nobody shows."""
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            return stop.value


def iter_read_run(path, ex: Executor, use_cache: bool, want: dict, summarise: bool = True, first: dict | None = None):
    """One pass over the run's ranks; yields (fraction, what) per rank read, returns (RunView, {path: summary or
    error} of the ranks summarised now). `first`: the primary rank's extra want (it is read first; its
    "timeline_at" is given to the others as the window, {"ref_base": its time base}). The caller closes the
    view's executor; closing the generator stops the pass (the ranks in flight end first)."""
    from core.ranks import stored as st
    from core.ranks.budget import estimate_peak
    from core.ranks.run import tasks_of
    from core.ranks.views import RunView
    from core.trace import io
    found = io.discover(path)
    tasks = tasks_of(found, None, use_cache)
    need = {t.path: summarise and not (use_cache and st.load(t) is not None) for t in tasks}
    given: dict = {}
    views, failed = [], []

    def take(task, res) -> tuple[float, str]:
        summary, view = res
        if need[task.path]:
            given[task.path] = summary
        (failed if isinstance(view, tuple) else views).append(view)
        done = len(views) + len(failed)
        return done / max(len(tasks), 1), f"{done} of {len(tasks)} ranks read"

    rest = list(tasks)
    other_want = want
    if first is not None and tasks:
        head = min(tasks, key=_order)
        rest.remove(head)
        yield take(head, ex.call(_read, (head, dict(want, **first), need[head.path])))
        at = views[0].parts.get("timeline_at") if views else None
        if at is not None:  # (v0, v1, px_ns, multi) on the primary's clock
            other_want = dict(want, timeline={"v0": at[0], "v1": at[1], "px_ns": at[2], "multi": at[3],
                                              "ref_base": views[0].own_base_unix_ns})
    args = [(t, other_want, need[t.path]) for t in rest]
    for k, res in ex.map_unordered(_read, args, lambda a: estimate_peak(a[0].path)):
        yield take(rest[k], res)
    if not views:
        first_err = failed[0]
        raise TraceParseError(found.root, f"none of the {len(tasks)} trace files could be read "
                                          f"({first_err[1].rsplit('/', 1)[-1]}: {first_err[2]})")
    return RunView(path, ex, use_cache, mapped=(views, failed), given=given), given


def iter_report_view(path, use_cache: bool = True, width_px: int = 1600, pngs: bool = True, spec=None,
                     executor: Executor | None = None):
    """Yields (fraction, what); returns (RunView with every rank's report parts and timeline piece, RunAnalysis).
    Each rank is read once (the straggler's CPU ranges, asked by the reduce, read that rank once more, as for
    `analyze`). The caller closes the view (and with it the executor made here)."""
    from core.export import timeline_data
    from core.export.figures import FigureSpec
    from core.ranks.executor import make_executor
    from core.ranks.run import analyze_run
    spec = spec or FigureSpec(width_px=width_px)
    ex = executor if executor is not None else make_executor()
    view = None
    try:
        opts = {"width_px": width_px, "multi": True}
        first = {"timeline": {"spec": spec, "multi": True}} if pngs else None
        gen = iter_read_run(path, ex, use_cache, {"report": opts}, first=first)
        while True:
            try:
                frac, what = next(gen)
            except StopIteration as stop:
                view, given = stop.value
                break
            yield 0.9 * frac, what
        view._own = executor is None
        yield 0.92, "across ranks"
        run = analyze_run(path, ex, use_cache=use_cache, given=given)
        view.health = run.health
        if pngs:
            window = timeline_data.window_of(view, spec)  # (v0, v1, px_ns, text) on the run's clock
            at = (int(window[0]), int(window[1]), window[2], len(view.models) > 1)
            stale = [m for m in view.models if m.parts.get("timeline_at") != at]
            if stale:  # the guessed primary was not the first rank, or the window needs the whole run
                yield 0.95, "timeline"
                view.fetch({"timeline": {"v0": at[0], "v1": at[1], "px_ns": at[2], "multi": at[3]}}, stale)
    except BaseException:
        if view is not None:
            view.close()
        elif executor is None:
            ex.close()
        raise
    return view, run


def iter_diff_view(path, use_cache: bool = True, by_shape: bool = False, executor: Executor | None = None):
    """Yields (fraction, what); returns the RunView `diff` compares, each rank read once for its diff facts and,
    unless the findings cache holds the run's findings, its map (findings_of then reduces those summaries).
    The caller closes it."""
    from core.ranks.executor import make_executor
    ex = executor if executor is not None else make_executor()
    try:
        view, _given = yield from iter_read_run(path, ex, use_cache, {"diff": {"by_shape": by_shape}},
                                                summarise=not (use_cache and _findings_cached(path)))
    except BaseException:
        if executor is None:
            ex.close()
        raise
    view._own = executor is None
    view._by_shape = by_shape
    return view


def diff_view(path, use_cache: bool = True, by_shape: bool = False, executor: Executor | None = None):
    return drain(iter_diff_view(path, use_cache, by_shape, executor))


def _findings_cached(path) -> bool:
    """Whether core.ranks.findings_cache holds this run's findings, the ranks in the order their names give
    (a run whose files name no rank guesses by path: a wrong guess only costs the rules' time)."""
    from types import SimpleNamespace

    from core.ranks import findings_cache
    from core.ranks.run import tasks_of
    from core.trace import io
    tasks = sorted(tasks_of(io.discover(path)), key=_order)
    probe = SimpleNamespace(path=str(path), models=[SimpleNamespace(path=t.path) for t in tasks])
    return findings_cache.load(probe) is not None
