"""Rule, Finding, Severity: what every rule returns and how it is costed.

A rule is a small object with an `id` and `run(ctx) -> RuleOutput`; it reads one `RuleContext`
(the trace set, per-model step windows and the thresholds from resources/rules.toml) and returns
findings plus the checks it could not run (missing shapes, stacks, memory events, GPU ...).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from core.analysis.step_times import step_times
from core.analysis.step_windows import StepWindows
from core.analysis.steps import step_windows
from core.analysis.vocab import lost_per_step_ns, one_off_text, saves_pct
from core.trace.model import GPU_KINDS, TraceModel, TraceSet

_CYCLE = re.compile(r"\.cycle(\d+)\.")


class Severity(IntEnum):
    INFO = 0
    WARNING = 1
    ERROR = 2

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls[text.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown severity {text!r} (info, warning, error)") from None


@dataclass(frozen=True, slots=True)
class Source:
    file: str
    line: int
    function: str
    # the innermost library frame when the cause is inside library code the user's line called
    # (`transformers/trainer.py:2375 in _maybe_log_save_evaluate`), "" otherwise
    library: str = ""

    def to_json(self) -> dict:
        d = {"file": self.file, "line": self.line, "function": self.function}
        if self.library:
            d["library"] = self.library
        return d

    def __str__(self) -> str:
        user = f"{self.file}:{self.line} ({self.function})" if self.function else f"{self.file}:{self.line}"
        return f"{self.library} <- {user}" if self.library else user


@dataclass(frozen=True, slots=True, eq=False)
class Finding:
    """One problem: what, how much it costs, where in the trace and in the user's code, how to fix it."""

    rule: str
    severity: Severity
    title: str
    count: int
    impact_ns: int
    impact_pct: float
    time_ranges: tuple[tuple[int, int], ...]
    evidence: tuple[dict, ...]
    source: Source | None
    fix: str
    model_index: int = 0  # which TraceModel of the set (rank) the ranges and rows refer to
    evidence_rows: tuple[int, ...] = ()  # SliceTable rows of that model to highlight (what the GUI shows)
    hint: bool = False  # advisory (no measured cost), always info
    # what the fix would save (core/rules/whatif.py): per step, median over steps, from the replay of the
    # critical path; None when the rule has no what-if (hints, memory, multi-rank findings)
    saving_ns: int | None = None
    saving_pct: float | None = None  # of the median effective step
    estimate: str = ""  # one line: how saving_ns was computed
    # the saving of each way to fix it where they differ (launch_bound: {"compile": ns, "cuda_graphs": ns});
    # saving_ns is the first one's
    savings_by_fix: tuple[tuple[str, int], ...] = ()
    # set by core/rules/per_step.py after pricing: the profiled steps of its model (0: no step markers, or a
    # finding made outside the rules), and whether its cost is one-off (a recompile, a first-step compile, a
    # cold start: it sits in one or few steps, `one_off_steps` their ProfilerStep numbers) rather than per step
    steps: int = 0
    one_off: bool = False
    one_off_steps: tuple[int, ...] = ()
    # the edit input of the rule's what-if (its `WhatIf.edit` reads these rows, never evidence_rows: widening
    # a highlight cannot change a saving); fix_groups, when set, one group id per fix row (launch_bound: the
    # run each kernel belongs to)
    fix_rows: tuple[int, ...] = ()
    fix_groups: tuple[int, ...] = ()
    # the mean step "% of mean step" of Saves / step refers to (core/analysis/vocab.py): the mean effective step
    # of its model, or the unprofiled step where the saving is in unprofiled time; 0 when not known
    mean_step_ns: int = 0
    # the summary line (issue 35): named plain values about the finding as a whole (launch_bound's kernel and run
    # counts, the sync sites the runner recorded, a straggler's waiting ranks); `evidence` holds only the events,
    # every row of one finding with the same keys. Values: str / int / float / bool / None or a list of those
    facts: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "facts", plain_facts(self.facts))

    def to_json(self) -> dict:
        return {
            "rule": self.rule,
            "severity": self.severity.label,
            "title": self.title,
            "count": int(self.count),
            "impact_ns": int(self.impact_ns),
            "impact_pct": round(float(self.impact_pct), 3),
            "time_ranges": [[int(a), int(b)] for a, b in self.time_ranges],
            "source": self.source.to_json() if self.source else None,
            "facts": dict(self.facts),
            "evidence": [_jsonable(e) for e in self.evidence],
            "fix": self.fix,
            "saving_ns": None if self.saving_ns is None else int(self.saving_ns),
            "saving_pct": None if self.saving_pct is None else round(float(self.saving_pct), 3),
            "estimate": self.estimate,
            **({"savings_by_fix": {k: int(v) for k, v in self.savings_by_fix}} if self.savings_by_fix else {}),
            "steps": int(self.steps),
            # the per-step vocabulary users read (Lost / step, Saves / step as % of mean step); impact_pct is
            # Lost / step as % of the mean step
            "lost_per_step_ns": lost_per_step_ns(self),
            "mean_step_ns": int(self.mean_step_ns) or None,
            "saving_pct_of_mean_step": _round3(saves_pct(self)),
            "one_off": ({"cost_ns": int(self.impact_ns), "steps": [int(n) for n in self.one_off_steps],
                         "label": one_off_text(self)} if self.one_off else None),
        }


@dataclass(frozen=True, slots=True)
class CheckNotRun:
    """A check a rule could not make on this trace, and why (shown in the summary and the GUI)."""

    rule: str
    reason: str

    def to_json(self) -> dict:
        return {"rule": self.rule, "reason": self.reason}


@dataclass(slots=True)
class RuleOutput:
    findings: list[Finding] = field(default_factory=list)
    not_run: list[CheckNotRun] = field(default_factory=list)

    def extend(self, other: RuleOutput) -> None:
        self.findings.extend(other.findings)
        self.not_run.extend(other.not_run)


@runtime_checkable
class Rule(Protocol):
    id: str
    title: str

    def run(self, ctx: RuleContext) -> RuleOutput: ...


class RuleContext:
    """What rules read: the trace set, thresholds and cheap per-model helpers."""

    def __init__(self, trace_set: TraceSet, config: dict[str, Any] | None) -> None:
        from core.rules.config import with_defaults
        self.trace_set = trace_set
        self.config = with_defaults(config)  # checked: an unknown key fails here, not silently later
        self._steps: dict[int, StepWindows] = {}
        self.memo: dict[str, Any] = {}  # per-analysis values shared by rules (bundle sync sites ...)
        self.world_hint = 0  # ranks of the run when the set holds one of them (core/ranks' per-rank map)

    def memoized(self, key: str, compute):
        if key not in self.memo:
            self.memo[key] = compute()
        return self.memo[key]

    @property
    def models(self) -> tuple[TraceModel, ...]:
        return self.trace_set.models

    def label(self, index: int) -> str:
        """Which trace a finding is about: "rank 1", or "rank 0 · cycle 2" when one rank has several trace
        files (a run bundle's profiler cycles: traces/rank0.cycle2.pt.trace.json.gz; else the file name)."""
        m = self.models[index]
        if sum(1 for o in self.models if o.rank == m.rank) < 2:
            return f"rank {m.rank}"
        name = Path(m.path).name
        cycle = _CYCLE.search(name)
        return f"rank {m.rank} · cycle {cycle.group(1)}" if cycle else f"rank {m.rank} · {name.split('.pt.trace')[0]}"

    def cfg(self, rule: str) -> dict[str, Any]:
        """The thresholds of `rule` (its resources/rules.toml table; every key is there)."""
        return self.config[rule]

    def in_steps(self, index: int, rows: np.ndarray) -> np.ndarray:
        """The rows of model `index` inside a profiled step (all rows when steps are synthetic): CPU rows that
        start inside one; GPU rows (kernels, copies, memsets) that are some step's own work (launched from
        inside it, wherever they ran: core.analysis.step_times)."""
        steps = self.steps(index)
        if len(rows) and not steps.synthetic:
            m = self.models[index]
            gpu = np.isin(m.slices.kind[rows], np.asarray(GPU_KINDS, np.int8))
            own = np.isin(rows, step_times(m, self.config).work_rows) if gpu.any() else gpu
            rows = rows[np.where(gpu, own, steps.index_of(m.slices.ts_ns[rows]) >= 0)]
        return rows

    def steps(self, index: int) -> StepWindows:
        """The model's step windows (`total_ns` is the denominator of impact_pct)."""
        if index not in self._steps:
            self._steps[index] = step_windows(self.models[index])
        return self._steps[index]

    def pct(self, index: int, impact_ns: float) -> float:
        """impact as a share of the summed effective step time (max of CPU and GPU span per step)."""
        steps = self.steps(index)
        total = steps.total_ns if steps.synthetic else int(step_times(self.models[index], self.config).effective_ns.sum())
        return 100.0 * float(impact_ns) / total if total > 0 else 0.0

    def severity(self, impact_pct: float, impact_ns: float, hint: bool = False) -> Severity:
        """By cost as a share of total step time (impact_pct). Costs paid every step should use
        `per_step_severity` instead: one long step (a compile, a checkpoint) dilutes the share."""
        if hint:
            return Severity.INFO
        sev = self.config["severity"]
        if impact_pct >= sev["error_pct"]:
            return Severity.ERROR
        if impact_pct >= sev["warning_pct"]:
            return Severity.WARNING
        return Severity.INFO

    def typical_step_ns(self, index: int) -> int:
        """Median duration of the steps without torch.compile activity (all steps when every one has it):
        what one ordinary step costs, undistorted by a compile step that lasts seconds."""
        def compute():
            from core.analysis.breakdown import compile_windows
            st = self.steps(index)
            dur_ns = st.dur_ns
            if not len(dur_ns):
                return 0
            compiling = compile_windows(self.models[index])
            plain = compiling.covered(st.t0_ns, st.t1_ns) == 0 if len(compiling) else np.ones(len(dur_ns), bool)
            return int(np.median(dur_ns[plain] if plain.any() else dur_ns))
        return self.memoized(f"typical_step:{index}", compute)

    def per_step_severity(self, index: int, per_step_ns: float) -> Severity:
        """Severity of a cost paid in each affected step, by its share of the typical step
        (`typical_step_ns`), with the same lines as `severity`."""
        typical = self.typical_step_ns(index)
        pct = 100.0 * float(per_step_ns) / typical if typical > 0 else 0.0
        return self.severity(pct, per_step_ns)

    def finding(self, rule: str, index: int, *, title: str, count: int, impact_ns: float,
                time_ranges, evidence, source, fix: str, evidence_rows=(), hint: bool = False,
                severity: Severity | None = None, fix_rows=(), fix_groups=(), facts=None) -> Finding:
        pct = self.pct(index, impact_ns)
        sev = severity if severity is not None else self.severity(pct, impact_ns, hint)
        if len(self.models) > 1:
            title = f"[{self.label(index)}] {title}"
        return Finding(rule=rule, severity=sev, title=title, count=int(count), impact_ns=int(impact_ns),
                       impact_pct=pct, time_ranges=tuple((int(a), int(b)) for a, b in time_ranges),
                       evidence=tuple(evidence), source=source, fix=fix, model_index=index,
                       evidence_rows=tuple(int(r) for r in evidence_rows), hint=hint,
                       fix_rows=tuple(int(r) for r in fix_rows), fix_groups=tuple(int(g) for g in fix_groups),
                       facts=facts or {})


def _plain(value):
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, Source):
        return str(value)
    raise TypeError(f"a finding's fact is a str, int, float, bool, None or a list of those, not {type(value).__name__}")


def plain_facts(facts) -> dict:
    """`Finding.facts` as plain JSON values (numpy scalars -> int / float, a Source -> "file:line (function)",
    tuples -> lists); TypeError on anything else (a dict, an array of arrays)."""
    out = {}
    for key, value in dict(facts or {}).items():
        if isinstance(value, (list, tuple, np.ndarray)):
            value = [_plain(v) for v in (value.tolist() if isinstance(value, np.ndarray) else value)]
        else:
            value = _plain(value)
        out[str(key)] = value
    return out


def _round3(v):
    return None if v is None else round(float(v), 3)


def _jsonable(value):
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, Source):
        return value.to_json()
    return value


@dataclass(frozen=True, slots=True)
class WhatIf:
    """What a rule's fix would save (core/rules/savings.py prices every finding with it).

    `edit(model, finding, replay, cfg) -> Edit`: the replay edit the fix makes, built from the finding's
    `fix_rows` / `fix_groups` (core.analysis.critical_path.Edit; cfg = resources/whatif.toml). `doc`: one
    line, what the edit does. `loader_fix`: the fix changes the DataLoader's period (whatif_data.py).
    `alternatives(model, finding, cfg, inflation, saving) -> (estimate, savings_by_fix)`: where fixes differ
    (launch_bound: torch.compile vs CUDA graphs). `amortised(ctx, finding, model, step_ns) -> (saving_ns,
    pct, estimate) | None`: a one-off cost priced over the run (recompile), before the edit."""

    edit: Any
    doc: str = ""
    loader_fix: bool = False
    alternatives: Any = None
    amortised: Any = None


@dataclass(frozen=True, slots=True)
class FnRule:
    """One rule as one unit: its id, title, one-paragraph doc (the README's rules table and `ptprof analyze
    --explain RULE`), its detector `fn(ctx) -> RuleOutput` and its what-if (None: no saving is priced)."""

    id: str
    title: str
    fn: Any
    doc: str = ""
    what_if: WhatIf | None = None

    def run(self, ctx: RuleContext) -> RuleOutput:
        return self.fn(ctx)


def rule(rule_id: str, title: str, *, doc: str = "", what_if: WhatIf | None = None):
    """Decorator: `@rule("host_sync", "Host-device synchronisation", doc=..., what_if=WhatIf(...))` turns a
    detector function into a Rule."""
    def wrap(fn) -> FnRule:
        return FnRule(rule_id, title, fn, " ".join(doc.split()), what_if)
    return wrap
