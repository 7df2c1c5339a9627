"""How findings are worded and ordered, the same in the app, report.html, findings.csv and `ptprof analyze`.

Every function takes a Finding (core.rules.base) or its JSON dict (`Finding.to_json()`, a stored summary's
`finding_json`), so the report, which may hold either, words and orders them exactly as the app does.

One-off costs: a finding whose cost sits in one or few steps (a recompile, a first-step compile, a cold
start: core/rules/per_step.py) is labelled "one-off: 3.84 s at step 4", never as a cost paid per step, and
never orders below per-step trivia.
"""
from __future__ import annotations

from core import units

SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}
TRIVIAL_NS = 1_000  # a fix that saves under a microsecond a step would not change the step: "≈ 0"
TRIVIAL_PCT = 0.1  # ... or under 0.1 % of the step: per-step trivia, listed after the rest of its severity


def get(f, key: str, default=None):
    if isinstance(f, dict):
        v = f.get(key, default)
        return default if v is None and default is not None else v
    return getattr(f, key, default)


def severity_rank(f) -> int:
    """2 error, 1 warning, 0 info (a Severity, its int, or its label)."""
    sev = get(f, "severity", 0)
    if isinstance(sev, str):
        return SEVERITY_RANK.get(sev.strip().lower(), -1)
    try:
        return int(sev)
    except (TypeError, ValueError):
        return -1


def is_one_off(f) -> bool:
    return bool(get(f, "one_off", False))


def one_off_steps(f) -> tuple[int, ...]:
    """The ProfilerStep numbers a one-off cost sits in (empty: a trace without step markers)."""
    v = get(f, "one_off")
    if isinstance(v, dict):  # the JSON form: {"cost_ns", "steps", "label"}
        return tuple(int(n) for n in v.get("steps") or ())
    return tuple(int(n) for n in (get(f, "one_off_steps") or ()))


def one_off_text(f) -> str:
    """'one-off: 3.84 s at step 4' / '... at steps 4, 7' / '... in the window' (no step markers); '' otherwise."""
    if not is_one_off(f):
        return ""
    cost = units.fmt_ns(int(get(f, "impact_ns", 0) or 0))
    steps = one_off_steps(f)
    if not steps:
        return f"one-off: {cost} in the window"
    where = f"step {steps[0]}" if len(steps) == 1 else "steps " + ", ".join(str(n) for n in steps)
    return f"one-off: {cost} at {where}"


def is_trivia(f) -> bool:
    """A per-step finding whose fix would give back (next to) nothing: a what-if saving under 1 µs or under
    0.1 % of the step. One-off costs never are (their saving is spread over the run's steps)."""
    if is_one_off(f):
        return False
    saving = get(f, "saving_ns")
    if saving is None:
        return False
    pct = get(f, "saving_pct")
    return int(saving) < TRIVIAL_NS or (pct is not None and float(pct) < TRIVIAL_PCT)


def order_key(f) -> tuple:
    """The one order of findings everywhere (app, report, CSV, analyze): errors first; within a severity,
    per-step trivia last; then by what the fix saves per step where there is a what-if, then the rest by
    the time they lose."""
    saving = get(f, "saving_ns")
    value = int(saving) if saving is not None else int(get(f, "impact_ns", 0) or 0)
    return (-severity_rank(f), is_trivia(f), saving is None, -value, str(get(f, "rule", "")),
            str(get(f, "title", "")))
