"""`ptprof analyze B --baseline A [--fail-on-regression PCT] [--metric step|gpu_busy|memory_peak]`.

Prints the markdown diff summary (for a PR comment) with one verdict line; exit 1 when B is worse than A
by more than PCT % on the metric and, for step time, the change is significant (step-to-step spread of
both runs); 0 otherwise; 2 for bad input.
"""
from __future__ import annotations

import sys

from core.commands import diff as diff_cmd
from core.trace.loader import load


def regression(d, metric: str) -> tuple[float | None, bool, str]:
    """(how much worse B is in %, whether that is significant, what was compared)."""
    if metric == "step":
        s = d.step
        basis = " (unprofiled: the runs were slowed differently by recording)" \
            if getattr(d, "step_basis", "") == "unprofiled" else ""
        return s.delta_pct, bool(s.significant), "median step time" + basis
    if metric == "gpu_busy":
        busy_a, busy_b = d.gpu_busy_pct
        if busy_a is None or busy_b is None:
            return None, False, "GPU busy share (not available: CPU-only trace)"
        return busy_a - busy_b, True, "GPU busy share (points lower)"
    peak_a, peak_b = d.memory["a_peak_bytes"], d.memory["b_peak_bytes"]
    if not peak_a or peak_b is None:
        return None, False, "memory peak (not available: no memory events)"
    return 100.0 * (peak_b - peak_a) / peak_a, True, "memory peak"


def run(args, ts_b) -> int:
    from core.ranks.findings_cache import compare_runs
    ts_a = load(args.baseline, use_cache=not args.no_cache)
    d = compare_runs(ts_a, ts_b, use_cache=not args.no_cache)
    worse_pct, significant, what = regression(d, args.metric)
    limit = args.fail_on_regression
    failed = (limit is not None and worse_pct is not None and significant and worse_pct > limit)
    if worse_pct is None:
        line = f"**{what}**: cannot compare"
    else:
        verdict = "REGRESSION" if failed else "ok"
        bound = f" (limit {limit:g} %)" if limit is not None else ""
        why_not = (d.step.method if args.metric == "step" and d.step.significant is None  # too few steps to claim
                   else "not significant")
        line = f"**{verdict}**: {what} {worse_pct:+.1f} %{bound}" + ("" if significant else f", {why_not}")
    sys.stdout.write(diff_cmd.markdown(d, gate_line=line))
    return 1 if failed else 0
