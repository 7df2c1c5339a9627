"""The reduce: rank summaries -> one Analysis, as `core.rules.analyze` gives it for the whole set.

- time base: the earliest rank's start (core.trace.loader.assemble's rule); each rank's findings, ranges,
  evidence and collectives are shifted onto it;
- order and labels: ranks sorted by (rank, path) as assemble sorts models; "[rank N]" (or "rank N · cycle C"
  where one rank has several files) prefixed to each finding, as RuleContext.finding does;
- cross-rank rules on the summaries (`SummaryContext`: a RuleContext whose models are stubs and whose step
  windows / impact denominators come from the summaries): rank_imbalance unchanged, straggler through
  `straggler_findings` with the collectives of the summaries and the cause asked of the straggler's map;
- the summary dict of `core.rules._summary` + the replay / all-fixes medians of `core.rules.savings`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from core.analysis.step_windows import StepWindows
from core.ranks.summary import RankSummary
from core.rules import Analysis, _dedupe, _majority, finding_counts, sort_key, step_means
from core.rules.base import CheckNotRun, Finding, RuleContext


@dataclass(frozen=True, slots=True)
class _Meta:
    distributed_info: dict | None
    base_unix_ns: int


@dataclass(frozen=True, slots=True)
class _Stub:
    """What the cross-rank rules read of a model: its rank, path and distributedInfo."""

    rank: int
    path: str
    meta: _Meta


class SummaryContext(RuleContext):
    def __init__(self, root: str, summaries: list[RankSummary], config: dict) -> None:
        stubs = tuple(_Stub(s.rank, s.path, _Meta(s.distributed_info, s.base_unix_ns)) for s in summaries)
        super().__init__(SimpleNamespace(models=stubs, path=root), config)
        self.summaries = summaries
        self._per_rank: dict[int, int] = {}
        for s in summaries:
            self._per_rank[s.rank] = self._per_rank.get(s.rank, 0) + 1
        self._labels: dict[int, str] = {}

    def label(self, index: int) -> str:
        """RuleContext.label without its scan of every model per call (1,024 ranks: O(n^2))."""
        got = self._labels.get(index)
        if got is None:
            m = self.models[index]
            got = f"rank {m.rank}" if self._per_rank.get(m.rank, 0) < 2 else super().label(index)
            self._labels[index] = got
        return got

    def steps(self, index: int) -> StepWindows:
        s = self.summaries[index]
        return StepWindows(s.step_number, s.step_t0_ns, s.step_t1_ns, s.synthetic)

    def pct(self, index: int, impact_ns: float) -> float:
        total = self.summaries[index].pct_total_ns
        return 100.0 * float(impact_ns) / total if total > 0 else 0.0


def time_deltas(summaries: list[RankSummary]) -> list[int]:
    """Per rank: ns to add to its own times to put them on the run's base (loader.assemble's rule)."""
    bases = [s.base_unix_ns for s in summaries]
    base = min(bases) if bases else 0
    return [b - base if b and base else 0 for b in bases]


def shift_summary(s: RankSummary, delta: int) -> RankSummary:
    """The rank's summary on the run's time base."""
    if not delta:
        return s
    d = int(delta)
    findings = [replace(f, time_ranges=_shift_ranges(f.time_ranges, d),
                        evidence=tuple(shift_evidence(e, d) for e in f.evidence)) for f in s.findings]
    return replace(s, findings=findings, step_t0_ns=s.step_t0_ns + d, step_t1_ns=s.step_t1_ns + d,
                   colls=s.colls.shifted(d), base_unix_ns=s.base_unix_ns - d)


def _shift_ranges(ranges, d: int) -> tuple:
    if not ranges:
        return tuple(ranges)
    return tuple(map(tuple, (np.asarray(ranges, np.int64).reshape(-1, 2) + np.int64(d)).tolist()))


def shift_evidence(e, d: int):
    if isinstance(e, dict) and isinstance(e.get("ts_ns"), (int, np.integer)):
        return dict(e, ts_ns=int(e["ts_ns"]) + d)
    return e


def reduce(root: str, summaries: list[RankSummary], config: dict, rule_ids, cause_of, all_warnings: list[str],
           elapsed_map_s: float = 0.0) -> Analysis:
    """`summaries` in the run's model order, already shifted (`shift_summary`). `cause_of(index, t0, t1)` asks
    the straggler's map (times on the run's base). `rule_ids`: the rules that ran (None: all)."""
    from core.rules import all_rules
    t0 = time.perf_counter()
    multi = len(summaries) > 1
    ctx = SummaryContext(root, summaries, config)
    order = [r.id for r in all_rules() if rule_ids is None or r.id in rule_ids]
    per_rule: dict[str, list[Finding]] = {r: [] for r in order}
    not_run_by_rule: dict[str, list[CheckNotRun]] = {r: [] for r in order}
    caps: list[CheckNotRun] = []
    for i, s in enumerate(summaries):
        who = f"{ctx.label(i)}: " if multi else ""
        caps.extend(CheckNotRun(n.rule, who + n.reason) for n in s.capability_notes)
        for f in s.findings:
            title = f"[{ctx.label(i)}] {f.title}" if multi else f.title
            per_rule.setdefault(f.rule, []).append(replace(f, title=title, model_index=i))
        for n in s.not_run:
            not_run_by_rule.setdefault(n.rule, []).append(n)
    from core.rules import distributed, straggler
    if "rank_imbalance" in order:
        _run(ctx, distributed.rank_imbalance, per_rule, not_run_by_rule)
    if "straggler" in order:
        _run(ctx, lambda c: straggler.straggler_findings(c, lambda i: summaries[i].colls, cause_of),
             per_rule, not_run_by_rule, "straggler")
    findings = sorted([f for r in per_rule.values() for f in r], key=sort_key)
    not_run = _dedupe(caps + [n for r in not_run_by_rule.values() for n in r])
    elapsed = elapsed_map_s + time.perf_counter() - t0
    summary = _summary(root, summaries, findings, not_run, all_warnings, elapsed)
    summary.update(_together(summaries))
    return Analysis(tuple(findings), tuple(not_run), summary, elapsed)


def _run(ctx, fn, per_rule, not_run_by_rule, rule_id: str | None = None) -> None:
    from core.rules import _first_line
    rid = rule_id or fn.id
    try:
        out = fn.run(ctx) if hasattr(fn, "run") else fn(ctx)
    except Exception as exc:  # noqa: BLE001 - as iter_analyze: a failing rule is a check not run
        not_run_by_rule.setdefault(rid, []).append(
            CheckNotRun(rid, f"rule failed: {type(exc).__name__}: {_first_line(exc)}"))
        return
    per_rule.setdefault(rid, []).extend(out.findings)
    not_run_by_rule.setdefault(rid, []).extend(out.not_run)


def _summary(root: str, summaries: list[RankSummary], findings, not_run, all_warnings, elapsed: float) -> dict:
    real = summaries  # a rank whose steps are synthetic has empty step-time arrays
    durs = np.concatenate([s.effective_ns for s in real] or [np.zeros(0, np.int64)])
    cpu = np.concatenate([s.cpu_ns for s in real] or [np.zeros(0, np.int64)])
    gpu = np.concatenate([s.gpu_ns for s in real] or [np.zeros(0, np.int64)])
    bounds = np.asarray([b for s in real for b in s.bound] or np.zeros(0, "<U4"))
    return {
        "trace": root,
        "ranks": len({s.rank for s in summaries}),
        "traces": len(summaries),
        "steps": sum(0 if s.synthetic else len(s.step_number) for s in summaries),
        **step_means(durs, cpu, gpu),
        "bound": _majority(bounds),
        "total_step_ns": int(sum(int((s.step_t1_ns - s.step_t0_ns).sum()) for s in summaries)),
        **finding_counts(findings),
        "checks_not_run": [n.to_json() for n in not_run],
        "warnings": list(all_warnings),
        "analysis_s": round(elapsed, 4),
    }


def _together(summaries: list[RankSummary]) -> dict:
    """core.rules.savings.together over the ranks' own replay entries."""
    from core.rules import savings
    return savings.together([s.replay for s in summaries if s.replay],
                            next((s.inflation for s in summaries if s.inflation), None))


def health(summaries: list[RankSummary]) -> list[dict]:
    """core.analysis.health.check's list for the whole run."""
    out = []
    multi = len(summaries) > 1
    for s in summaries:
        who = f"{Path(s.path).name}: " if multi else ""
        out.extend(dict(h, message=who + h["message"]) for h in s.health)
    if summaries:
        out.extend(summaries[0].set_health)
    order = {"error": 0, "warning": 1, "info": 2}
    return sorted(out, key=lambda h: order.get(h["severity"], 3))
