"""GPU lane assignment (core/trace/build.assign_lanes) vs the first-free-lane scan it replaced,
side by side in one run: N kernels on one stream that all overlap (the issue-14 case) and a
realistic stream (few overlaps). Medians of 3; same lanes checked.

    python bench/bench_lanes.py [N]
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from core.trace.build import assign_lanes  # noqa: E402


def baseline(ts, dur, offsets, gpu_track, depth) -> None:
    """The loop before issue 14 (lanes_end scanned per event; int16 overflow past 32,767 lanes)."""
    for t in np.flatnonzero(gpu_track).tolist():
        a, b = int(offsets[t]), int(offsets[t + 1])
        s, e = ts[a:b], ts[a:b] + dur[a:b]
        lanes_end: list[int] = []
        out = np.zeros(b - a, dtype=np.int32)
        for i, (si, ei) in enumerate(zip(s.tolist(), e.tolist())):
            for lane, le in enumerate(lanes_end):
                if le <= si:
                    lanes_end[lane] = ei
                    out[i] = lane
                    break
            else:
                out[i] = len(lanes_end)
                lanes_end.append(ei)
        depth[a:b] = np.minimum(out, 32767)


def median_s(fn, *args) -> float:
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 32_000
    rng = np.random.default_rng(0)
    cases = {
        f"{n:,} kernels all overlapping": (np.arange(n, dtype=np.int64) * 1000, np.full(n, 10**12, np.int64)),
        f"{n * 10:,} kernels, 2 % overlapping": (np.cumsum(rng.integers(900, 1100, n * 10)).astype(np.int64),
                                                 np.where(rng.random(n * 10) < 0.02, 3000, 800).astype(np.int64)),
    }
    print(f"{'case':40s} {'baseline s':>11s} {'heaps s':>9s} {'ratio':>7s}")
    for name, (ts, dur) in cases.items():
        offsets, gpu = np.array([0, len(ts)]), np.array([True])
        d_old, d_new = np.zeros(len(ts), np.int16), np.zeros(len(ts), np.int16)
        old = median_s(baseline, ts, dur, offsets, gpu, d_old)
        new = median_s(assign_lanes, ts, dur, offsets, gpu, d_new)
        assert (d_old == d_new).all()
        print(f"{name:40s} {old:11.3f} {new:9.3f} {old / new:6.1f}x")


if __name__ == "__main__":
    main()
