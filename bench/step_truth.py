"""Step times ptprof reports against the same loop timed without the profiler (H200 bundles).

For every bundle with a known unprofiled step (tests/data/device/pairs: timings.json and pairs_timing.json;
tests/data/device/fresh: fresh_timing.json) prints the CPU-timeline step (what ptprof said before issue 9),
the effective step (max of CPU and GPU span, recorded time), the unprofiled estimate (the replay with the
CPU side / the run's recording inflation) and the measured unprofiled step, with the errors.
Run: python bench/step_truth.py [BUNDLES_DIR ...]
"""
from __future__ import annotations

import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from pairs_truth import measured  # noqa: E402  (tests/pairs_truth.py)

from core.rules import analyze  # noqa: E402
from core.trace.loader import load  # noqa: E402

DIRS = [REPO / "tests" / "data" / "device" / "pairs", REPO / "tests" / "data" / "device" / "fresh"]


def main(argv: list[str]) -> int:
    dirs = [Path(a) for a in argv] or [d for d in DIRS if d.is_dir()]
    print(f"{'bundle':18} {'cpu ms':>8} {'eff ms':>8} {'infl':>5} {'est ms':>8} {'meas ms':>8} "
          f"{'cpu err':>8} {'eff err':>8} {'est err':>8}")
    errs_cpu, errs_eff, errs_est = [], [], []
    for root in dirs:
        truth = measured(root)
        for name, ms in sorted(truth.items()):
            b = root / name
            if not (b / "traces").is_dir():
                continue
            s = analyze(load(b)).summary
            cpu, eff = s["cpu_step_ns"] / 1e6, s["mean_step_ns"] / 1e6
            est = s.get("unprofiled_step_ns")
            est_ms = est / 1e6 if est else eff
            e_cpu, e_eff, e_est = (100 * (v - ms) / ms for v in (cpu, eff, est_ms))
            errs_cpu.append(abs(e_cpu))
            errs_eff.append(abs(e_eff))
            errs_est.append(abs(e_est))
            infl = s.get("recording_inflation")
            print(f"{name:18} {cpu:8.2f} {eff:8.2f} {infl or 1:5.2f} {est_ms:8.2f} {ms:8.2f} "
                  f"{e_cpu:+7.0f}% {e_eff:+7.0f}% {e_est:+7.0f}%")
    if errs_est:
        print(f"median |error|: CPU-timeline step {statistics.median(errs_cpu):.0f} %, effective step "
              f"{statistics.median(errs_eff):.0f} %, unprofiled estimate {statistics.median(errs_est):.0f} % "
              f"({len(errs_est)} bundles; within 10 %: {sum(e <= 10 for e in errs_est)})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
