"""Rule registry and `analyze(trace_set)`: every rule over every model, findings sorted by impact.

Rule ids are stable (ARCHITECTURE.md, README). Each family lives in its own module and exports RULES.
"""
from __future__ import annotations

import importlib
import logging
import os
import time
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field

import numpy as np

from core.rules.base import CheckNotRun, Finding, Rule, RuleContext, RuleOutput, Severity, Source
from core.rules.config import load_config

log = logging.getLogger(__name__)

FAMILIES = ("sync", "memcpy", "layout", "compile", "gpu_time", "dataloader", "precision", "optimizer",
            "memory", "distributed", "straggler", "hints", "cudnn")

RULE_IDS = ("host_sync", "non_contiguous_input", "graph_break", "recompile", "pageable_memcpy", "sync_memcpy",
            "launch_bound", "gpu_idle", "dataloader_bound", "fp32_gemm", "channels_last", "zero_grad_not_none",
            "memory_near_capacity", "memory_growth", "allocator_churn", "single_tensor_optimizer", "comm_bound",
            "rank_imbalance", "straggler", "zeros_then_overwrite", "cudnn_benchmark_off")

__all__ = ["Analysis", "AnalysisCancelled", "iter_analyze", "CheckNotRun", "Finding", "Rule", "Severity", "Source",
           "all_rules", "analyze"]


def all_rules() -> list[Rule]:
    rules: list[Rule] = []
    for fam in FAMILIES:
        rules.extend(importlib.import_module(f"core.rules.{fam}").RULES)
    return rules


@dataclass(frozen=True, slots=True)
class Analysis:
    """What `analyze` returns: findings (largest impact first), checks not run, and a summary."""

    findings: tuple[Finding, ...]
    not_run: tuple[CheckNotRun, ...]
    summary: dict = field(default_factory=dict)
    elapsed_s: float = 0.0

    def at_or_above(self, level: Severity) -> list[Finding]:
        return [f for f in self.findings if f.severity >= level]

    def to_json(self) -> dict:
        return {"findings": [f.to_json() for f in self.findings], "summary": self.summary}


def analyze(trace_set, config: dict | None = None, rules: Iterable[Rule] | None = None,
            progress: Callable[[float, str], None] | None = None,
            cancelled: Callable[[], bool] | None = None, world_hint: int = 0) -> Analysis:
    """Run rules over a TraceSet. A rule that raises becomes a 'check not run', never a crash.
    `world_hint`: how many ranks the run has when the set holds one of them (core/ranks' per-rank map)."""
    gen = iter_analyze(trace_set, config, rules, world_hint=world_hint)
    while True:
        try:
            fraction, rule_id = next(gen)
        except StopIteration as stop:
            return stop.value
        if progress is not None:
            progress(fraction, rule_id)
        if cancelled is not None and cancelled():
            gen.close()
            raise AnalysisCancelled()


class AnalysisCancelled(Exception):
    """The consumer of iter_analyze / analyze asked it to stop."""


def iter_analyze(trace_set, config: dict | None = None, rules: Iterable[Rule] | None = None,
                 world_hint: int = 0) -> Generator[tuple[float, str], None, Analysis]:
    """Generator form for workers: yields (fraction, rule id) before each rule, returns the Analysis.
    Stop iterating to cancel (nothing is left running)."""
    t0 = time.perf_counter()
    cfg = config if config is not None else load_config()
    ctx = RuleContext(trace_set, cfg)
    ctx.world_hint = world_hint
    rules = list(rules) if rules is not None else all_rules()
    total = RuleOutput()
    for k, r in enumerate(rules):
        yield k / max(len(rules), 1), r.id
        try:
            total.extend(r.run(ctx))
        except Exception as exc:  # noqa: BLE001 - one broken rule must not hide the others
            reason = f"rule failed: {type(exc).__name__}: {_first_line(exc)}"
            # one line (it is also in the analysis' "checks not run"); the traceback only with PTPROF_DEBUG=1
            if _debug():
                log.warning("rule %s failed", r.id, exc_info=True)
            else:
                log.info("rule %s %s (PTPROF_DEBUG=1 shows the traceback)", r.id, reason)
            total.not_run.append(CheckNotRun(r.id, reason))
    total.not_run[:0] = _capability_notes(ctx)
    yield 1.0, "what-if savings"
    from core.rules import savings
    priced, together = savings.price(ctx, total.findings)
    from core.rules.per_step import annotate
    findings = sorted(annotate(ctx, priced), key=sort_key)
    not_run = _dedupe(total.not_run)
    elapsed = time.perf_counter() - t0
    summary = _summary(ctx, findings, not_run, elapsed)
    summary.update(together)
    yield 1.0, "done"
    return Analysis(tuple(findings), tuple(not_run), summary, elapsed)


def _debug() -> bool:
    return os.environ.get("PTPROF_DEBUG", "").strip().lower() not in ("", "0", "false", "no", "off")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0][:300] if text else "") or "(no message)"


def sort_key(f: Finding):
    """The one order of findings (core/analysis/vocab.py `order_key`, also the app's and the report's): errors
    first; per-step trivia last in their severity (one-off costs never are); then the largest saving, then
    findings without a what-if by impact."""
    from core.analysis.vocab import order_key
    return order_key(f)


def _capability_notes(ctx: RuleContext) -> list[CheckNotRun]:
    """What the trace lacks, once per analysis (profiler options off), so nobody reads silence as 'clean'.
    On a truncated file the absence may only mean the cut came first, so the notes say so instead of
    blaming the profiler options."""
    from core.rules import common
    notes = []
    for i, m in enumerate(ctx.models):
        who = f"{ctx.label(i)}: " if len(ctx.models) > 1 else ""
        cut = common.truncated(m)
        if not common.has_stacks(m):
            from core.rules import sync_sites
            extra = ", except host-sync lines the runner recorded" if sync_sites.sites(ctx, m.rank) else ""
            why = ("Python stacks are not in the loaded part of a truncated file" if cut
                   else "no Python stacks (with_stack=False)")
            notes.append(CheckNotRun("source", who + f"{why}: findings carry no "
                                     f"file/line{extra} (compile.json reasons still apply)"))
        if not common.has_shapes(m):
            why = ("input shapes/strides are not in the loaded part of a truncated file" if cut
                   else "no input shapes/strides (record_shapes=False)")
            notes.append(CheckNotRun("non_contiguous_input", who + f"{why}: "
                                     "layout copies found from the call tree only; zeros_then_overwrite shape "
                                     "check skipped"))
        if common.gpu_event_count(m) == 0:
            if cut:
                notes.append(CheckNotRun("gpu", who + "GPU events are not in the loaded part of a truncated file "
                                         "(Kineto writes them after the CPU events): GPU rules (launch_bound, "
                                         "gpu_idle, fp32_gemm, pageable_memcpy, channels_last) could not run"))
            else:
                hints = "" if common.unknown_categories_of(m) else "; ops that would sync on a GPU are reported as hints"
                notes.append(CheckNotRun("gpu", who + f"{common.no_gpu_words(m)}: GPU rules (launch_bound, gpu_idle, "
                                         f"fp32_gemm, pageable_memcpy, channels_last) do not apply{hints}"))
    return notes


def _dedupe(items: list[CheckNotRun]) -> list[CheckNotRun]:
    seen, out = set(), []
    for it in items:
        if (it.rule, it.reason) not in seen:
            seen.add((it.rule, it.reason))
            out.append(it)
    return out


def _summary(ctx: RuleContext, findings: list[Finding], not_run: list[CheckNotRun], elapsed: float) -> dict:
    from core.analysis.step_times import step_times
    steps = [ctx.steps(i) for i in range(len(ctx.models))]
    n_steps = sum(0 if s.synthetic else len(s.number) for s in steps)
    times = [step_times(m, ctx.config) for m in ctx.models]
    durs = np.concatenate([t.effective_ns for t in times if not t.synthetic] or [np.zeros(0, np.int64)])
    cpu_durs = np.concatenate([t.cpu_ns for t in times if not t.synthetic] or [np.zeros(0, np.int64)])
    gpu_durs = np.concatenate([t.gpu_ns for t in times if not t.synthetic] or [np.zeros(0, np.int64)])
    bounds = np.concatenate([t.bound for t in times if not t.synthetic] or [np.zeros(0, "<U4")])
    return {
        "trace": ctx.trace_set.path,
        "ranks": len({m.rank for m in ctx.models}),
        "traces": len(ctx.models),  # one per rank and profiler cycle
        "steps": n_steps,
        **step_means(durs, cpu_durs, gpu_durs),
        # a loop the DataLoader workers pace is data-bound, though most of its steps are served at once
        # (one stall per round of the workers: the majority said "cpu")
        "bound": "data" if _paced(ctx) else _majority(bounds),
        # the same steps as mean_step_ns and every impact_pct (effective steps; CPU spans were up to 1.74x apart
        # on GPU-bound traces); a trace without steps: its whole span
        "total_step_ns": int(sum(int(t.effective_ns.sum()) if not t.synthetic else s.total_ns
                                 for t, s in zip(times, steps))),
        **finding_counts(findings),
        "checks_not_run": [n.to_json() for n in not_run],
        "warnings": list(ctx.trace_set.all_warnings),  # loader warnings (same field as `ptprof info --json`)
        "analysis_s": round(elapsed, 4),
    }


def step_means(effective_ns: np.ndarray, cpu_ns: np.ndarray, gpu_ns: np.ndarray) -> dict:
    """The summary's mean steps (0 without steps): effective = max(CPU span, GPU span) per step, CPU and GPU
    spans. Also the many-rank reduce's, over every rank's steps (core/ranks/reduce.py)."""
    return {"mean_step_ns": int(effective_ns.mean()) if len(effective_ns) else 0,
            "cpu_step_ns": int(cpu_ns.mean()) if len(cpu_ns) else 0,
            "gpu_step_ns": int(gpu_ns.mean()) if len(gpu_ns) else 0}


def finding_counts(findings) -> dict:
    """The summary's counts: findings, per rule, per severity (every severity, 0 included)."""
    per_rule: dict[str, int] = {}
    per_sev = {s.label: 0 for s in Severity}
    for f in findings:
        per_rule[f.rule] = per_rule.get(f.rule, 0) + 1
        per_sev[f.severity.label] += 1
    return {"findings": len(findings), "per_rule": per_rule, "per_severity": per_sev}


def _paced(ctx: RuleContext) -> bool:
    try:
        from core.analysis.unprofiled import data_period_ns
        return any(m.devices and data_period_ns(m) for m in ctx.models)
    except Exception:  # noqa: BLE001 - a summary field must not fail the analysis
        return False


def _majority(bounds: np.ndarray) -> str:
    """What bounds most steps ('' without steps)."""
    if not len(bounds):
        return ""
    names, counts = np.unique(bounds, return_counts=True)
    return str(names[np.argmax(counts)])
