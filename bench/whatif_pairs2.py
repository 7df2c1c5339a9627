"""What-ifs, unprofiled step estimates and diff signs against the issue-28 pairs (H100, tests/data/device/pairs2).

For each pair of measured.json (bench/device_pairs2/pairs2.py: one planted problem, its hand fix, both timed
unprofiled in one process): the before bundle's findings of the pair's rule -> predicted saving (unprofiled
time when the bundle knows its recording inflation) vs the measured saving; ptprof's unprofiled step estimate
of each bundle vs its measured step; `ptprof diff` before -> after: its sign and significance vs the measured
saving. A prediction is right within +-30 % of the measured saving, or, for a saving the measurement cannot
tell from zero (its range spans 0) or under 3 % of the step (the issue's floor), when it stays under 3 % too.
Held-out pairs (measured.json `held_out`) are printed apart: they were not looked at while tuning.
Run: python bench/whatif_pairs2.py [PAIRS_DIR]
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from core.analysis.diff import compare  # noqa: E402
from core.rules import analyze  # noqa: E402
from core.trace.loader import load  # noqa: E402

DEFAULT = REPO / "tests" / "data" / "device" / "pairs2"


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


def table(rows: list[dict], title: str) -> None:
    print(f"-- {title}")
    print(f"{'pair':15} {'rule':24} {'sev':7} {'before':>8} {'meas ms':>8} {'pred ms':>8} {'err %':>6} ok  "
          f"{'est A':>7} {'err':>5} {'est B':>7} {'err':>5} {'diff ms':>8} {'basis':10} sign")
    for r in rows:
        err = 100 * (r["predicted_ms"] - r["saving_ms"]) / r["saving_ms"] if r["saving_ms"] else 0.0
        ea = 100 * (r["estimate_a_ms"] - r["before_ms"]) / r["before_ms"]
        eb = 100 * (r.get("estimate_b_ms", 0) - r["after_ms"]) / r["after_ms"] if "estimate_b_ms" in r else 0
        dm = r.get("diff_ms")
        print(f"{r['pair']:15} {r['rule']:24} {r['severity']:7} {r['before_ms']:8.2f} {r['saving_ms']:8.2f} "
              f"{r['predicted_ms']:8.2f} {err:+6.0f} {'yes' if right(r) else 'NO ':3} {r['estimate_a_ms']:7.2f} "
              f"{ea:+5.0f} {r.get('estimate_b_ms', 0):7.2f} {eb:+5.0f} "
              f"{dm if dm is not None else float('nan'):+8.2f} {str(r.get('diff_basis', '-'))[:10]:10} "
              f"{'yes' if sign_right(r) else 'NO'}")
    big = [r for r in rows if r["saving_ms"] > 0.03 * r["before_ms"]]
    errs = [abs(r["predicted_ms"] - r["saving_ms"]) / r["saving_ms"] * 100 for r in big]
    est = [abs(r[k] - r[m]) / r[m] * 100 for r in rows for k, m in (("estimate_a_ms", "before_ms"),
                                                                     ("estimate_b_ms", "after_ms")) if k in r]
    print(f"savings right: {sum(right(r) for r in rows)} of {len(rows)}; of the {len(big)} pairs saving > 3 % of the "
          f"step: {sum(abs(e) <= 30 for e in errs)} within +-30 %, median |error| "
          f"{statistics.median(errs) if errs else 0:.0f} %; unprofiled estimates within 10 %: "
          f"{sum(e <= 10 for e in est)} of {len(est)} (median |error| {statistics.median(est) if est else 0:.0f} %); "
          f"diff sign right: {sum(sign_right(r) for r in rows)} of {len(rows)}")


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    rows = pair_rows(root)
    table([r for r in rows if not r.get("held_out")], "tuned on")
    held = [r for r in rows if r.get("held_out")]
    if held:
        table(held, "held out (not looked at while tuning)")


if __name__ == "__main__":
    main()
