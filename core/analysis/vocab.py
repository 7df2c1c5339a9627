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


# --- the per-step vocabulary (issue 31 item 4) -----------------------------------------------------------
# What users read, the same words in the app, report.html, findings.csv headers and `ptprof analyze`:
# "Lost / step" (the time a problem takes per profiled step: its impact over the window / the window's steps,
# the mean), "Saves / step" (what its fix would give back per step, the what-if replay), both positive times
# with units, and both as "% of mean step": the mean effective step (max of CPU and GPU span), the statistic
# the status line and report.html state. A saving in unprofiled time (a run bundle that knows how much
# recording slowed its loop) is a share of the mean unprofiled step.
LOST = "Lost / step"
SAVES = "Saves / step"
OF_MEAN = "% of mean step"
STATISTIC = "mean"  # of Lost / step (impact over the window's steps)
# Saves / step is the median of the per-step replays, robust to one odd step, except where the DataLoader paces
# the loop (the mean: its periodic stalls are the cost) - core/rules/whatif.py; each saving line says which
SAVES_STATISTIC = "median of the per-step replays (the mean where the DataLoader paces the loop)"


def steps_of(f) -> int:
    return max(int(get(f, "steps", 0) or 0), 1)  # a trace without step markers: the window is one step


def lost_per_step_ns(f) -> int:
    return int(round(int(get(f, "impact_ns", 0) or 0) / steps_of(f)))


def lost_pct(f) -> float:
    """Lost / step as % of the mean step: the same number as impact_pct (impact over the summed steps)."""
    return float(get(f, "impact_pct", 0.0) or 0.0)


def saves_pct(f) -> float | None:
    """Saves / step as % of the mean step (None without a what-if)."""
    saving = get(f, "saving_ns")
    if saving is None:
        return None
    step = int(get(f, "mean_step_ns", 0) or 0)
    if step > 0:
        return 100.0 * int(saving) / step
    pct = get(f, "saving_pct")  # made before the mean step was recorded on findings: the replay's step
    return None if pct is None else float(pct)


def time_text(ns: int) -> str:
    return units.fmt_ns(int(ns))


def lost_text(f, short: bool = False) -> str:
    """'3.48 ms (42.8 % of mean step)'; a one-off cost: 'one-off: 3.84 s at step 4 (99.3 % of the profiled
    steps)'. short (a table cell): '3.48 ms' over '42.8 %'."""
    once = one_off_text(f)
    if once:
        if short:
            head, _, where = once.partition(" at ")
            return f"{head}\nat {where}" if where else head
        return f"{once} ({lost_pct(f):.1f} % of the profiled steps; paid once, not every step)"
    if short:
        return f"{time_text(lost_per_step_ns(f))}\n{lost_pct(f):.1f} %"
    return f"{time_text(lost_per_step_ns(f))} ({lost_pct(f):.1f} {OF_MEAN})"


def saves_text(f, short: bool = False) -> str:
    """'2.49 ms (30.6 % of mean step)', '≈ 0' under a microsecond, '—' without a what-if. short: two lines."""
    saving = get(f, "saving_ns")
    if saving is None:
        return "—"
    if int(saving) < TRIVIAL_NS:
        return "≈ 0" if short else "≈ 0 (the step would not get shorter)"
    pct = saves_pct(f)
    if short:
        return time_text(saving) + (f"\n{pct:.1f} %" if pct is not None else "")
    return time_text(saving) + (f" ({pct:.1f} {OF_MEAN})" if pct is not None else "")
