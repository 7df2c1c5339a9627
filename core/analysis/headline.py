"""One-line step summary shared by `ptprof analyze` and the app's Issues panel.

    mean step 36.85 ms recorded, ≈ 20.09 ms unprofiled (CPU 36.73 ms · GPU 36.84 ms · cpu-bound)
    all fixes together: Saves / step 1.42 ms (7.0 % of mean step)

The words are core/analysis/vocab.py's (the same in the app, report.html, findings.csv and `analyze`): the step
is the mean effective step, and savings are shares of it (of the unprofiled one when they are in unprofiled
time).

`mean_step_ns` is the effective step (max of the CPU and GPU span) in recorded time; `unprofiled_step_ns`
(run bundles that know their recording inflation) is the critical-path replay with the CPU side as fast as
the run's unprofiled steps: what the loop takes without the profiler.
"""
from __future__ import annotations

from core import units


def step_text(summary: dict) -> str:
    """'mean step 36.85 ms recorded, ≈ 20.09 ms unprofiled (CPU … · GPU … · cpu-bound)'; '' without steps."""
    mean = summary.get("mean_step_ns")
    if not mean:
        return ""
    out = f"mean step {units.fmt_ns(mean)}"
    if summary.get("unprofiled_step_ns"):
        out += f" recorded, ≈ {units.fmt_ns(summary['unprofiled_step_ns'])} unprofiled"
    if summary.get("bound") and summary.get("gpu_step_ns"):  # a CPU-only trace has no GPU span to compare
        out += (f" (CPU {units.fmt_ns(summary.get('cpu_step_ns', 0))} · GPU {units.fmt_ns(summary['gpu_step_ns'])}"
                f" · {summary['bound']}-bound)")
    return out


def fixes_text(summary: dict) -> str:
    """'all fixes together: Saves / step 1.42 ms (7.0 % of mean step)'; '' when no finding has a what-if
    saving."""
    from core.analysis.vocab import OF_MEAN, SAVES
    together = summary.get("all_fixes") or {}
    if not together.get("saving_ns"):
        return ""
    step = summary.get("unprofiled_step_ns") or summary.get("mean_step_ns")
    pct = (f"{100.0 * together['saving_ns'] / step:.1f} {OF_MEAN}" if step
           else f"{together.get('saving_pct', 0.0):.1f} % of the step")
    return f"all fixes together: {SAVES} {units.fmt_ns(together['saving_ns'])} ({pct})"
