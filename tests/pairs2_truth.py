"""Issue 28's pairs' ground truth (H100, tests/data/device/pairs2, bench/device_pairs2/pairs2.py): what-ifs,
unprofiled step estimates and diff signs against the measured ones. Used by tests/core/analysis/test_pairs2.py
and printed by bench/whatif_pairs2.py (tests never import bench/).

For each pair of measured.json (one planted problem, its hand fix, both timed unprofiled in one process): the
before bundle's findings of the pair's rule -> predicted saving (unprofiled time when the bundle knows its
recording inflation) vs the measured saving; ptprof's unprofiled step estimate of each bundle vs its measured
step; `ptprof diff` before -> after: its sign and significance vs the measured saving. A prediction is right
within +-30 % of the measured saving, or, for a saving the measurement cannot tell from zero (its range spans 0)
or under 3 % of the step (the issue's floor), when it stays under 3 % too.
"""
from __future__ import annotations

import json
from pathlib import Path

from core.analysis.diff import compare
from core.rules import analyze
from core.trace.loader import load

DEFAULT = Path(__file__).resolve().parents[1] / "tests" / "data" / "device" / "pairs2"


def pair_rows(root: Path = DEFAULT) -> list[dict]:
    rows = []
    cache: dict[str, tuple] = {}

    def get(name):
        if name not in cache:
            ts = load(root / name, use_cache=False)
            cache[name] = (ts, analyze(ts))
        return cache[name]

    for r in json.loads((root / "measured.json").read_text())["results"]:
        if not (root / r["before"]).is_dir():
            continue
        ts_a, a = get(r["before"])
        hits = [f for f in a.findings if f.rule == r["rule"] and f.saving_ns is not None]
        pred = max((f.saving_ns for f in hits), default=0) / 1e6
        row = {**r, "found": bool(hits), "predicted_ms": pred,
               "severity": max(hits, key=lambda f: f.saving_ns).severity.label if hits else "-",
               "estimate_a_ms": (a.summary.get("unprofiled_step_ns") or a.summary["mean_step_ns"]) / 1e6}
        if (root / r["after"]).is_dir():
            ts_b, b = get(r["after"])
            row["estimate_b_ms"] = (b.summary.get("unprofiled_step_ns") or b.summary["mean_step_ns"]) / 1e6
            d = compare(ts_a, ts_b)
            row["diff_ms"] = d.step.delta_ns / 1e6
            row["diff_basis"] = d.step_basis
            row["diff_significant"] = d.step.significant
        rows.append(row)
    return rows


def right(r: dict) -> bool:
    meas, pred = r["saving_ms"], r["predicted_ms"]
    floor = 0.03 * r["before_ms"]
    lo, hi = r.get("saving_min_ms"), r.get("saving_max_ms")
    if meas <= floor or (lo is not None and lo <= 0 <= hi):
        return pred <= max(floor, hi or 0)
    return abs(pred - meas) <= 0.3 * meas


def sign_right(r: dict) -> bool:
    if r.get("diff_ms") is None:
        return False
    lo, hi = r.get("saving_min_ms"), r.get("saving_max_ms")
    if r["saving_ms"] <= 0.03 * r["before_ms"] or (lo is not None and lo <= 0 <= hi):
        return not r.get("diff_significant") or r["diff_ms"] <= 0  # no real change: no significant slowdown
    return r["diff_ms"] < 0
