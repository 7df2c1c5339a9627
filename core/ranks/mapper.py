"""The map: one rank loaded, analyzed as a one-model set, summarised, dropped. Runs in a worker (a process of
the local pool or a Dask worker); everything it takes and returns is small and picklable.

`cause_of_lateness` is the second, rare call: the reduce asks the straggler's map what that rank's CPU ran
while the others waited (its own clock), which needs its slices, so it loads the rank again (from the cache).
"""
from __future__ import annotations

import gc
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.ranks.summary import TOP_ROWS, RankSummary

CROSS_RANK = ("rank_imbalance", "straggler")  # the rules the reduce runs; every other rule is per rank
SET_HEALTH = ("recording_inflation", "run_status")


@dataclass(frozen=True, slots=True)
class MapTask:
    path: str
    rank_hint: int | None
    root: str  # the run's folder (what discover was given)
    kind: str  # discover's kind: "dir" | "bundle"
    bundle_dir: str | None
    world_hint: int  # ranks in the run
    rules: tuple[str, ...] | None = None  # rule ids asked for (None: all)
    use_cache: bool = True
    run_keys: tuple[str, ...] = ()  # every trace of the run: their cache entries are kept together (cache.pin)


def _load_one(task: MapTask):
    """(TraceSet of this one rank with the run's bundle extras, cache hit, load seconds)."""
    from core.trace import cache, io
    from core.trace.loader import _load_source, assemble
    t0 = time.perf_counter()
    if task.use_cache and task.run_keys:
        cache.pin_run(task.run_keys)
    src = io.TraceSource(Path(task.path), task.rank_hint)
    gen = _load_source(src, 0.0, 1.0, task.use_cache)
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            model, hit = stop.value
            break
    if task.use_cache:
        cache.flush()  # a background store must end before this worker takes the next rank
    found = io.Discovered(task.kind, Path(task.root), (src,), Path(task.bundle_dir) if task.bundle_dir else None)
    ts = assemble(task.root, [model], found)
    return ts, bool(hit), time.perf_counter() - t0


def map_rank(task: MapTask) -> RankSummary:
    ts, hit, load_s = _load_one(task)
    summary = summary_of(ts, task, hit, load_s)
    del ts
    _drop()
    return summary


def summary_of(ts, task: MapTask, hit: bool, load_s: float) -> RankSummary:
    """The map's answer for the rank `ts` (loaded by `_load_one(task)`): its per-rank rules run, summarised."""
    from core.rules import analyze
    from core.rules.config import load_config
    t0 = time.perf_counter()
    cfg = load_config()
    result = analyze(ts, cfg, rules=per_rank_rules(task.rules), world_hint=task.world_hint)
    summary = summarize(ts, result, cfg)
    summary.load_s, summary.cache_hit, summary.source = round(load_s, 4), hit, _source(task.path)
    summary.analysis_s = round(time.perf_counter() - t0, 4)
    return summary


def per_rank_rules(rule_ids=None) -> list:
    from core.rules import all_rules
    return [r for r in all_rules() if r.id not in CROSS_RANK and (rule_ids is None or r.id in rule_ids)]


def summarize(ts, result, cfg) -> RankSummary:
    """The summary of a one-model set `ts` and its per-rank analysis `result`."""
    from core.analysis import health
    from core.analysis.metrics import rank_metrics
    from core.analysis.step_times import step_times
    from core.rules import _capability_notes
    from core.rules.base import RuleContext
    model = ts.models[0]
    ctx = RuleContext(ts, cfg)
    caps = _capability_notes(ctx)
    cap_keys = {(n.rule, n.reason) for n in caps}
    steps = ctx.steps(0)
    times = step_times(model, cfg)
    checks = health.check(ts, cfg)
    replay = [dict(e) for e in result.summary.get("replay", ())]
    return RankSummary(
        path=str(model.path), rank=int(model.rank), base_unix_ns=int(model.meta.base_unix_ns),
        distributed_info=model.meta.distributed_info if isinstance(model.meta.distributed_info, dict) else None,
        warnings=list(model.warnings), findings=list(result.findings), capability_notes=caps,
        not_run=[n for n in result.not_run if (n.rule, n.reason) not in cap_keys],
        step_number=np.asarray(steps.number, np.int64), step_t0_ns=steps.t0_ns, step_t1_ns=steps.t1_ns,
        synthetic=steps.synthetic,
        effective_ns=np.zeros(0, np.int64) if times.synthetic else np.asarray(times.effective_ns, np.int64),
        cpu_ns=np.zeros(0, np.int64) if times.synthetic else np.asarray(times.cpu_ns, np.int64),
        gpu_ns=np.zeros(0, np.int64) if times.synthetic else np.asarray(times.gpu_ns, np.int64),
        bound=[] if times.synthetic else [str(b) for b in times.bound],
        pct_total_ns=int(steps.total_ns if steps.synthetic else times.effective_ns.sum()),
        colls=_safe(_colls, model, default=None) or _no_colls(),
        metrics=_safe(lambda m: rank_metrics(m).to_json(), model, default={"rank": int(model.rank), "overlap_pct": None}),
        health=[h.to_json() for h in checks if h.code not in SET_HEALTH],
        set_health=[h.to_json() for h in checks if h.code in SET_HEALTH],
        replay=replay[0] if replay else None, inflation=result.summary.get("recording_inflation"),
        breakdown=_breakdown(model, cfg), kernels=_safe(_kernels, model, default=[]), ops=_safe(_ops, model, default=[]),
        memory_peak=_safe(_memory, model, default=[]))


def _safe(fn, model, default):
    """A summary part that fails is left empty (logged): it must not lose the rank's findings."""
    try:
        return fn(model)
    except Exception:  # noqa: BLE001
        import logging
        logging.getLogger(__name__).warning("rank summary part %s failed", getattr(fn, "__name__", fn), exc_info=True)
        return default


def _no_colls():
    from core.analysis.collectives import CollRows
    z = np.zeros(0, np.int64)
    return CollRows(np.zeros(0, dtype=str), z, z, z)


def cause_task(task: MapTask, t0: np.ndarray, t1: np.ndarray) -> tuple[str, int, list[dict], tuple[int, ...]]:
    """What the rank's CPU ran in the windows [t0, t1) of its own clock (core.rules.straggler)."""
    from core.rules import common
    from core.rules.straggler import cause_of_lateness
    ts, _hit, _s = _load_one(task)
    model = ts.models[0]
    name, ns, rows = cause_of_lateness(model, np.asarray(t0, np.int64), np.asarray(t1, np.int64))
    ev = common.evidence(model, rows, role="what the straggler was doing") if name else []
    out = (name, int(ns), [dict(e) for e in ev], tuple(int(r) for r in rows[:common.MAX_EVIDENCE]))
    del ts, model
    _drop()
    return out


def _drop() -> None:
    """After the caller dropped its model: collect it (the rules' memo holds cycles) and give its pages back."""
    gc.collect()
    from core.trace.alloc import trim
    trim()  # the rank's freed columns must not stay in this worker's RSS under the next rank


def _source(path: str) -> dict:
    from core.trace import cache
    key = cache.source_key(Path(path)) or {}
    return {"size": key.get("size"), "mtime_ns": key.get("mtime_ns")}


def _colls(model):
    from core.analysis import collectives
    from core.ranks.collargs import coll_keys
    from core.trace.model import Kind
    rows = collectives.backend_rows(model)
    pg = seq = None
    if len(rows) and (model.slices.kind[rows] == Kind.KERNEL).all() and model.path:
        offsets = model.slices.at("src_offset", rows)
        pg, seq = coll_keys(model.path, np.asarray(offsets, np.int64))
        if not (seq >= 0).any():
            pg = seq = None
    if pg is not None:  # coll_rows sorts by time: give it the keys in backend_rows' order
        return collectives.coll_rows(model, pg, seq)
    return collectives.coll_rows(model)


def _breakdown(model, cfg) -> dict:
    from core.analysis.breakdown import step_breakdown
    from core.rules.config import with_defaults
    try:
        kw = int(with_defaults(cfg)["gpu_idle"]["kernel_wait_max_ns"])
        return step_breakdown(model, kw).totals()
    except Exception:  # noqa: BLE001 - a summary part must not lose the rank's findings
        return {}


def _kernels(model) -> list[dict]:
    from core.analysis.stats import kernel_table
    t = kernel_table(model)
    top = np.argsort(-t.total_ns, kind="stable")[:TOP_ROWS]
    return [{"name": model.strings[int(t.name[i])], "kind": int(t.kind[i]), "calls": int(t.calls[i]),
             "total_ns": int(t.total_ns[i])} for i in top]


def _ops(model) -> list[dict]:
    from core.analysis.stats import op_table
    t = op_table(model)
    top = np.argsort(-t.host_total_ns, kind="stable")[:TOP_ROWS]
    return [{"name": model.strings[int(t.name[i])], "calls": int(t.calls[i]),
             "host_total_ns": int(t.host_total_ns[i]), "device_ns": int(t.device_ns[i])} for i in top]


def _memory(model) -> list[dict]:
    from core.analysis.memory import memory_series
    return [{"device": int(d.device), "label": d.label, "peak_allocated_bytes": int(d.peak_allocated_bytes),
             "peak_reserved_bytes": int(d.peak_reserved_bytes), "total_bytes": d.total_bytes}
            for d in memory_series(model, include_cpu=True)]
