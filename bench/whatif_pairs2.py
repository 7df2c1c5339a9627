"""What-ifs, unprofiled step estimates and diff signs against the issue-28 pairs (H100, tests/data/device/pairs2):
a table per group (held-out pairs, measured.json `held_out`, apart: they were not looked at while tuning). The
rows and the criteria: tests/pairs2_truth.py.
Run: python bench/whatif_pairs2.py [PAIRS_DIR]
"""
from __future__ import annotations

import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from pairs2_truth import DEFAULT, pair_rows, right, sign_right  # noqa: E402  (tests/pairs2_truth.py)


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
