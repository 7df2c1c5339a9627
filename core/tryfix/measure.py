"""What a fix measured: the step times of the before run(s) against the after run(s), pooled over runs.

The basis is the loop's own unprofiled steps when both sides have enough of them: every `step` event of
events.jsonl in the profiler's `wait` phase before its first window (the script's time between two step
hooks, profiler transitions excluded; the first wait step is dropped: it pays the start), of rank 0 and the
run's final step source. That is what the loop takes without the profiler, the number a user times by hand.
Steps after a window (`done`) are NOT used: once the profiler had run, the same loop stayed 30-45 % slower
on the H100 (bench/try_pairs: mlp 14.1 ms/step before the window, 20.5 ms after), and that residue inflates
every launch-bound fix. `ptprof try` therefore records its timing runs with the window at the end
(core.tryfix.plan.timing_schedule). With too few clean steps the traces' recorded effective steps
(core.analysis.diff.run_steps_ns) are used instead, and the result says so.
Significance: core.analysis.significance (Mann-Whitney U + bootstrap 95 % interval of the median
difference); a saving is positive when the step got shorter, its interval flipped accordingly.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.analysis import significance

MIN_UNPROFILED = 8  # fewer unprofiled steps a side: use the recorded ones (significance needs 4+ a side)
UNPROFILED = "unprofiled steps before the profiler started (events.jsonl)"
RECORDED = "recorded steps (trace, profiler on)"


def unprofiled_steps(bundle: str | Path) -> np.ndarray:
    """The unprofiled step durations (ns) of a bundle's rank 0, final step source; [] when unknown."""
    from core.runner.events_check import valid
    from core.runner.protocol import read_events
    path = Path(bundle) / "events.jsonl"
    if not path.is_file():
        return np.zeros(0, np.int64)
    steps = [e for e in read_events(str(path)) if valid(e) and e.get("type") == "step" and e.get("rank", 0) == 0
             and isinstance(e.get("dur_ns"), int)]
    final = steps[-1].get("source") if steps else None
    previous, out = None, []
    for ev in steps:
        if ev.get("source") != final:  # a weaker step source's steps (before the switch to the final one)
            previous = None
            continue
        phase = ev.get("phase")  # the profiler state this step's interval ran in
        if phase in ("warmup", "active"):
            break  # the first window: everything after it runs with the profiler's residue
        if phase == previous == "wait":  # the first wait step pays the profiler's start
            out.append(int(ev["dur_ns"]))
        previous = phase
    return np.asarray(out, np.int64)


def recorded_steps(bundle: str | Path, use_cache: bool = True) -> np.ndarray:
    from core.analysis.diff import run_steps_ns
    from core.trace.loader import load
    return run_steps_ns(load(str(bundle), use_cache=use_cache))


@dataclass(frozen=True)
class Measured:
    before_ns: np.ndarray
    after_ns: np.ndarray
    basis: str
    comparison: significance.Comparison

    @property
    def saving_ns(self) -> float:
        return -self.comparison.delta_ns

    @property
    def saving_pct(self) -> float:
        return -self.comparison.delta_pct

    @property
    def ci_ns(self) -> tuple[float, float] | None:
        ci = self.comparison.ci_ns
        return None if ci is None else (-ci[1], -ci[0])

    def to_json(self) -> dict:
        c = self.comparison
        return {"measured_saving_ns": round(self.saving_ns), "measured_pct": round(self.saving_pct, 3),
                "ci_ns": None if self.ci_ns is None else [round(self.ci_ns[0]), round(self.ci_ns[1])],
                "p_value": None if c.p_value is None else round(c.p_value, 6), "significant": c.significant,
                "basis": self.basis, "steps": [int(len(self.before_ns)), int(len(self.after_ns))],
                "step_ns": [round(c.a_median_ns), round(c.b_median_ns)], "method": c.method}


def measure(before: list[str | Path], after: list[str | Path], use_cache: bool = True) -> Measured:
    """Pool each side's runs; unprofiled steps when both sides have MIN_UNPROFILED, else recorded ones."""
    a = [unprofiled_steps(b) for b in before]
    b = [unprofiled_steps(x) for x in after]
    a_all = np.concatenate(a) if a else np.zeros(0, np.int64)
    b_all = np.concatenate(b) if b else np.zeros(0, np.int64)
    basis = UNPROFILED
    if len(a_all) < MIN_UNPROFILED or len(b_all) < MIN_UNPROFILED:
        a_all = np.concatenate([recorded_steps(x, use_cache) for x in before])
        b_all = np.concatenate([recorded_steps(x, use_cache) for x in after])
        basis = RECORDED
    return Measured(a_all, b_all, basis, significance.compare(a_all, b_all))
