"""One-line step summary shared by `ptprof analyze` and the app's Issues panel.

    36.85 ms/step recorded, ≈ 20.09 ms unprofiled (CPU 36.73 ms · GPU 36.84 ms · cpu-bound)
    all fixes together: est. -1.42 ms/step (-7.0 %)

`mean_step_ns` is the effective step (max of the CPU and GPU span) in recorded time; `unprofiled_step_ns`
(run bundles that know their recording inflation) is the critical-path replay with the CPU side as fast as
the run's unprofiled steps: what the loop takes without the profiler.
"""
from __future__ import annotations

from core import units


def step_text(summary: dict) -> str:
    """'36.85 ms/step recorded, ≈ 20.09 ms unprofiled (CPU … · GPU … · cpu-bound)'; '' without steps."""
    mean = summary.get("mean_step_ns")
    if not mean:
        return ""
    out = f"mean {units.fmt_ns(mean)}/step"
    if summary.get("unprofiled_step_ns"):
        out += f" recorded, ≈ {units.fmt_ns(summary['unprofiled_step_ns'])} unprofiled"
    if summary.get("bound") and summary.get("gpu_step_ns"):  # a CPU-only trace has no GPU span to compare
        out += (f" (CPU {units.fmt_ns(summary.get('cpu_step_ns', 0))} · GPU {units.fmt_ns(summary['gpu_step_ns'])}"
                f" · {summary['bound']}-bound)")
    return out


def fixes_text(summary: dict) -> str:
    """'all fixes together: est. -1.42 ms/step (-7.0 %)'; '' when no finding has a what-if saving."""
    together = summary.get("all_fixes") or {}
    if not together.get("saving_ns"):
        return ""
    return (f"all fixes together: est. -{units.fmt_ns(together['saving_ns'])}/step "
            f"(-{together.get('saving_pct', 0.0):.1f} %)")
