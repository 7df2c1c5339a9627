"""What-if savings against measured before/after pairs (H200, tests/data/device/pairs or /work/device_pairs): one
line per pair (predicted vs measured saving, in % of the step and ms, the error, right or not). The pairs, the
ground truth files and the criterion: tests/pairs_truth.py.
Run: python bench/whatif_pairs.py [PAIRS_DIR]
"""
from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from pairs_truth import default_dir, right, rows  # noqa: E402  (tests/pairs_truth.py: the pairs and the criterion)


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else default_dir()
    print(f"{'pair':12} {'rule':17} {'sev':7} {'infl':>5} {'pred %':>7} {'meas %':>7} {'pred ms':>8} {'meas ms':>8}"
          f" {'range ms':>13} {'seq ms':>7} {'err %':>7} ok")
    res = rows(root)
    for r in res:
        err = 100.0 * (r["saving_ms"] - r["measured_ms"]) / r["measured_ms"]
        lo, hi = r["range_ms"]
        rng = f"{lo:+.2f}..{hi:+.2f}" if lo is not None else "-"
        print(f"{r['pair']:12} {r['rule']:17} {r['severity']:7} {r['inflation'] or 1:5.2f} {r['saving_pct']:7.1f} "
              f"{r['measured_pct']:7.1f} {r['saving_ms']:8.2f} {r['measured_ms']:8.2f} {rng:>13} "
              f"{r['sequential_ms']:7.2f} {err:+7.0f} {'yes' if right(r) else 'NO'}")
    print(f"{sum(right(r) for r in res)} of {len(res)} pairs right (within 30 %, or inside the range of a "
          f"saving the measurement cannot tell from zero)")


if __name__ == "__main__":
    main()
