"""Recompiles amortised over the run (issue 28): a rare, huge cost that a per-step median drops.

A new static shape every 16 steps recompiles in one step of eight: the replay's median saving over the window
was 0 ("info") while the finding's own cost was 4.41 s (98.9 % of the window); measured: 18 ms/step with warm
compile caches, 244 ms/step cold. The runner sees every recompile of the run (compile.json `recompiles`, one
per guard failure dynamo logged) and the compile time of the whole run (`compile_times`: torch._dynamo's
compilation_time_metrics, every compile and recompile); run.json counts the run's steps. Saving per step =
recompiles x the mean compile time / the run's steps; without compile_times, the mean of the recompiles seen in
the window; without compile.json, the window's compile time over its steps (a mean, never a median).
"""
from __future__ import annotations

from core.rules import compile_info as ci
from core.rules.common import compile_windows

COMPILE_KEYS = ("_compile.compile_inner", "compile_inner", "entire_frame_compile")


def _mean_compile_s(info: dict) -> tuple[float | None, str]:
    times = info.get("compile_times") if isinstance(info, dict) else None
    if not isinstance(times, dict):
        return None, ""
    for key in COMPILE_KEYS:
        t = times.get(key)
        if isinstance(t, dict) and isinstance(t.get("count"), int) and t["count"] > 0 \
                and isinstance(t.get("total_s"), (int, float)) and t["total_s"] >= 0:
            return float(t["total_s"]) / t["count"], f"{t['count']} compiles took {float(t['total_s']):.2f} s ({key})"
    return None, ""


def amortised(ctx, finding, model, step_ns: float) -> tuple[int, float, str] | None:
    """(saving ns per step, % of the step, how) for a recompile finding; None without anything to go on."""
    info = ctx.trace_set.compile_info or {}
    bundle = ctx.trace_set.bundle if isinstance(ctx.trace_set.bundle, dict) else {}
    run_steps = bundle.get("steps") if isinstance(bundle.get("steps"), int) and bundle.get("steps") > 0 else None
    n_re = len(ci.recompiles(info))
    steps = ctx.steps(finding.model_index)
    n_win = max(len(steps.number), 1)
    compiling = compile_windows(model)
    in_win = int(compiling.covered(steps.t0_ns, steps.t1_ns).sum()) if len(compiling) else 0
    in_win = min(in_win, int(finding.impact_ns or in_win)) if finding.impact_ns else in_win
    mean_s, how = _mean_compile_s(info)
    if n_re and run_steps:
        if mean_s is None and finding.count and in_win:
            mean_s, how = in_win / 1e9 / finding.count, f"{finding.count} recompile(s) in the window took " \
                                                         f"{in_win / 1e6:.1f} ms"
        if mean_s is not None:
            per_step = n_re * mean_s * 1e9 / run_steps
            text = (f"{n_re} recompiles over the run's {run_steps} steps; {how}: "
                    f"{per_step / 1e6:.2f} ms per step amortised")
            return int(per_step), _pct(per_step, step_ns), text
    if in_win:
        per_step = in_win / n_win
        return int(per_step), _pct(per_step, step_ns), (
            f"recompile time in the window ({in_win / 1e6:.1f} ms) over its {n_win} steps (mean)")
    return None


def _pct(per_step: float, step_ns: float) -> float:
    """Share of the run's mean step, which holds the amortised compile time (step_ns is a step without one)."""
    return 100.0 * per_step / max(step_ns + per_step, 1.0)
