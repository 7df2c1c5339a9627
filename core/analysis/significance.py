"""Is B's step time different from A's? Step-to-step spread of each run decides (numpy only).

Two checks, both needed for "significant": a two-sided Mann-Whitney U test (rank-based: robust to the
odd slow step, no normality assumption; normal approximation with tie correction) at p < 0.05, and a
bootstrap 95 % interval of the difference of medians that excludes zero. With fewer than
MIN_STEPS steps on a side nothing is claimed, and neither when the step counts cannot reach p < ALPHA even
with every B step beyond every A step (3 vs 3: p >= 0.08; 4 vs 4 or 3 vs 5 can): calling that "no
significant change" would pass any CI gate whatever happened.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MIN_STEPS = 3
ALPHA = 0.05
BOOTSTRAP_RESAMPLES = 2000
METHOD = "Mann-Whitney U (two-sided) + bootstrap 95% CI of the median difference"


@dataclass(frozen=True, slots=True)
class Comparison:
    a_median_ns: float
    b_median_ns: float
    delta_ns: float  # median(B) - median(A)
    delta_pct: float  # of median(A)
    significant: bool | None  # None: too few steps to say
    p_value: float | None
    ci_ns: tuple[float, float] | None  # bootstrap 95 % interval of median(B) - median(A)
    method: str

    def to_json(self) -> dict:
        return {"delta_ns": round(self.delta_ns), "delta_pct": round(self.delta_pct, 3),
                "significant": self.significant,
                "p_value": None if self.p_value is None else round(self.p_value, 6),
                "ci_ns": None if self.ci_ns is None else [round(self.ci_ns[0]), round(self.ci_ns[1])],
                "method": self.method}

    def verdict(self) -> str:
        """faster / slower / no significant change, or the method's own words when too few steps say nothing."""
        if self.significant is None:
            return f"{self.method}"
        if not self.significant:
            return "no significant change"
        return "faster" if self.delta_ns < 0 else "slower"


def mann_whitney_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided p-value of the Mann-Whitney U test (normal approximation, tie-corrected)."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    n_a, n_b = len(a), len(b)
    pooled = np.concatenate([a, b])
    ranks = _average_ranks(pooled)
    u_a = ranks[:n_a].sum() - n_a * (n_a + 1) / 2.0
    mean_u = n_a * n_b / 2.0
    n = n_a + n_b
    _, tie_counts = np.unique(pooled, return_counts=True)
    tie_term = float((tie_counts ** 3 - tie_counts).sum()) / (n * (n - 1)) if n > 1 else 0.0
    var_u = n_a * n_b / 12.0 * ((n + 1) - tie_term)
    if var_u <= 0:  # every value equal
        return 1.0
    z = (abs(u_a - mean_u) - 0.5) / math.sqrt(var_u)  # continuity correction
    return float(min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2.0))))


def min_p_value(n_a: int, n_b: int) -> float:
    """The smallest p-value `mann_whitney_p` can give for these sample sizes (the two fully separated)."""
    return mann_whitney_p(np.arange(n_a), np.arange(n_b) + n_a)


def _average_ranks(values: np.ndarray) -> np.ndarray:
    order = np.argsort(values, kind="stable")
    sorted_values = values[order]
    ranks = np.empty(len(values), np.float64)
    ranks[order] = np.arange(1, len(values) + 1, dtype=np.float64)
    # ties share the mean of their ranks
    uniq, first, counts = np.unique(sorted_values, return_index=True, return_counts=True)
    tied = counts > 1
    for start, count in zip(first[tied], counts[tied]):
        idx = order[start:start + count]
        ranks[idx] = ranks[idx].mean()
    return ranks


def bootstrap_median_ci(a: np.ndarray, b: np.ndarray, resamples: int = BOOTSTRAP_RESAMPLES,
                        seed: int = 0) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    med_a = np.median(a[rng.integers(0, len(a), (resamples, len(a)))], axis=1)
    med_b = np.median(b[rng.integers(0, len(b), (resamples, len(b)))], axis=1)
    lo, hi = np.percentile(med_b - med_a, [2.5, 97.5])
    return float(lo), float(hi)


def compare(a_ns: np.ndarray, b_ns: np.ndarray) -> Comparison:
    a = np.asarray(a_ns, np.float64)
    b = np.asarray(b_ns, np.float64)
    med_a = float(np.median(a)) if len(a) else 0.0
    med_b = float(np.median(b)) if len(b) else 0.0
    delta = med_b - med_a
    pct = 100.0 * delta / med_a if med_a > 0 else 0.0
    if len(a) < MIN_STEPS or len(b) < MIN_STEPS:
        return Comparison(med_a, med_b, delta, pct, None, None, None,
                          f"too few steps to test (A {len(a)}, B {len(b)}; need {MIN_STEPS} a side)")
    best = min_p_value(len(a), len(b))
    if best >= ALPHA:
        return Comparison(med_a, med_b, delta, pct, None, None, None,
                          f"{len(a)} vs {len(b)} steps cannot show a significant change (best p = {best:.2g}): "
                          "record at least 4 steps a side (ptprof record --active 5)")
    p = mann_whitney_p(a, b)
    ci = bootstrap_median_ci(a, b)
    significant = p < ALPHA and (ci[0] > 0 or ci[1] < 0)
    return Comparison(med_a, med_b, delta, pct, bool(significant), p, ci, METHOD)
