"""Cache store cost on a bundle with many cycle files (issue 14: 422 cycles took 46.8 s vs 1.6 s --no-cache).

    python bench/bench_cache.py [--files 422] [--runs 3]

Side by side in one run, each on a fresh cache folder with `--files` copies of a small trace in one folder:
  no_cache    load(use_cache=False)
  amortized   load() as shipped: one cache scan per process, then a running total (cache_evict.note_stored),
              each small model's columns packed in one file (cache format 7)
  per_column  the same with one .npy per column (PTPROF_CACHE_PACK_MAX_BYTES=0: format 6's layout)
  rescan      per_column with the old eviction: a full scan of the cache after every store
  warm        load() again from the packed entries `amortized` wrote
Medians of --runs; ratios against no_cache.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.trace import cache_evict  # noqa: E402
from core.trace.loader import load  # noqa: E402

SMALL = Path(__file__).resolve().parents[1] / "tests" / "data" / "gpu_print.pt.trace.json.gz"


def one(mode: str, folder: Path, work: Path) -> float:
    cdir = work / f"cache-{mode}-{time.monotonic_ns()}"
    os.environ["PTPROF_CACHE_DIR"] = str(cdir)
    os.environ["PTPROF_CACHE_PACK_MAX_BYTES"] = "0" if mode in ("per_column", "rescan") else str(8 << 20)
    cache_evict._tally = None
    real = cache_evict.note_stored
    if mode == "rescan":
        cache_evict.note_stored = lambda root, entry, limit, keep=None: cache_evict.evict(root, limit, keep=keep)
    try:
        if mode == "warm":
            load(folder)
        t0 = time.perf_counter()
        load(folder, use_cache=mode != "no_cache")
        return time.perf_counter() - t0
    finally:
        cache_evict.note_stored = real
        shutil.rmtree(cdir, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=422)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        folder = work / "bundle"
        folder.mkdir()
        for i in range(args.files):
            shutil.copy(SMALL, folder / f"rank0.cycle{i + 1}.pt.trace.json.gz")
        results = {m: [] for m in ("no_cache", "amortized", "per_column", "rescan", "warm")}
        for _ in range(args.runs):
            for mode in results:
                results[mode].append(one(mode, folder, work))
    base = statistics.median(results["no_cache"])
    print(f"{args.files} files, median of {args.runs}")
    for mode, times in results.items():
        med = statistics.median(times)
        print(f"  {mode:10s} {med:7.2f} s  x{med / base:5.2f} of no_cache")


if __name__ == "__main__":
    main()
