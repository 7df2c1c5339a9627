"""StepWindows: one [t0_ns, t1_ns) window per step, what the per-step analyses and the rules divide time by."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class StepWindows:
    """Step windows of one model, in step (= time) order, int64 ns; `synthetic`: the trace has no
    `ProfilerStep` and its whole span is one window, step -1. `total_ns` is the denominator of a rule's
    impact share."""

    number: np.ndarray  # int64 step number N of ProfilerStep#N
    t0_ns: np.ndarray  # int64
    t1_ns: np.ndarray  # int64
    synthetic: bool = False

    @classmethod
    def of(cls, number, t0_ns, t1_ns, synthetic: bool = False) -> StepWindows:
        """From any sequences (int64 arrays made of them)."""
        return cls(np.asarray(number, np.int64), np.asarray(t0_ns, np.int64), np.asarray(t1_ns, np.int64),
                   bool(synthetic))

    def __len__(self) -> int:
        return len(self.number)

    @property
    def dur_ns(self) -> np.ndarray:
        return self.t1_ns - self.t0_ns

    @property
    def total_ns(self) -> int:
        return int((self.t1_ns - self.t0_ns).sum())

    def index_of(self, ts_ns: np.ndarray) -> np.ndarray:
        """Step index containing each timestamp, -1 outside every step."""
        ts_ns = np.asarray(ts_ns, dtype=np.int64)
        if not len(self.t0_ns):
            return np.full(ts_ns.shape, -1, np.int64)
        step = np.searchsorted(self.t0_ns, ts_ns, side="right") - 1
        inside = (step >= 0) & (ts_ns < self.t1_ns[np.maximum(step, 0)])
        return np.where(inside, step, -1)
