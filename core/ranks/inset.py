"""Map / reduce over a set already in memory (the window's Issues analysis): each model analyzed as a one-model
set, then the same reduce as `analyze_run`, so the window and `ptprof analyze` give the same findings for a
multi-rank run, with progress per rank and a cancel between ranks."""
from __future__ import annotations

from collections.abc import Generator

from core.export.findings import FindingsResult, guarded
from core.generators import result_of
from core.ranks import reduce as rd
from core.ranks.mapper import per_rank_rules, summarize
from core.rules import Analysis, iter_analyze
from core.trace.model import TraceSet


def iter_analyze_set(trace_set: TraceSet, config: dict | None = None, rule_ids=None
                     ) -> Generator[tuple[float, str], None, Analysis]:
    """Generator like `core.rules.iter_analyze`: yields (fraction, what), returns the Analysis."""
    import time

    import numpy as np

    from core.rules import common
    from core.rules.config import load_config
    from core.rules.straggler import cause_of_lateness
    cfg = config if config is not None else load_config()
    models = trace_set.models
    n = len(models)
    hints = {m.rank for m in models}
    world = len(hints)
    rules = per_rank_rules(rule_ids)
    summaries = []
    t0 = time.perf_counter()
    for i, m in enumerate(models):
        one = TraceSet(path=trace_set.path, models=(m,), base_unix_ns=trace_set.base_unix_ns, bundle=trace_set.bundle,
                       nvml=trace_set.nvml, nvml_strings=trace_set.nvml_strings, compile_info=trace_set.compile_info)
        gen = iter_analyze(one, cfg, rules, world_hint=world)
        while True:
            try:
                frac, what = next(gen)
            except StopIteration as stop:
                result = stop.value
                break
            yield (i + frac) / (n + 1), f"rank {m.rank}: {what}"
        summaries.append(summarize(one, result, cfg))
    yield n / (n + 1), "across ranks"

    def cause_of(index: int, t0_ns, t1_ns):
        model = models[index]
        name, ns, rows = cause_of_lateness(model, np.asarray(t0_ns, np.int64), np.asarray(t1_ns, np.int64))
        ev = common.evidence(model, rows, role="what the straggler was doing") if name else []
        return name, int(ns), ev, tuple(int(r) for r in rows[:common.MAX_EVIDENCE])

    deltas = rd.time_deltas(summaries)  # the models are on one base already: all 0
    summaries = [rd.shift_summary(s, d) for s, d in zip(summaries, deltas)]
    analysis = rd.reduce(trace_set.path, summaries, cfg, rule_ids, cause_of, list(trace_set.all_warnings),
                         time.perf_counter() - t0)
    yield 1.0, "done"
    return analysis


def analyze_any(trace_set: TraceSet, config: dict | None = None) -> Analysis:
    """`core.rules.analyze` for one model; rank by rank + across ranks for several (`report`, `diff`)."""
    if len(trace_set.models) < 2:
        from core.rules import analyze
        return analyze(trace_set, config)
    return result_of(iter_analyze_set(trace_set, config))


def collect_findings(trace_set: TraceSet) -> FindingsResult:
    """A report's findings for any set (`analyze_any`, wrapped; a failing rule engine becomes the report's note):
    what `ptprof report` and the window's exports hand core.export.writer."""
    return guarded(analyze_any, trace_set)
