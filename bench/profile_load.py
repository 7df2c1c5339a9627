"""Where a cold load's CPU goes, by stage (CPU seconds: steadier than wall time on a shared machine).

    PTPROF_WORKERS=1 python bench/profile_load.py TRACE [--cache]

One in-process load (PTPROF_WORKERS=1: the scan runs in this thread, so the profiler sees it),
profiled with cProfile on a CPU-time clock. Stages: the C scan, Python row selection per kind
(`scan_columns` minus the scan), merge (chunk strings remapped, columns collected), merge finish
(concatenation), build (sort, tracks, depth, tables), cache write (with --cache), the rest
(imports, read, locate). Prints one markdown table row per stage.
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

STAGES = [  # (stage, (file suffix, function name)) - cumulative time of the function
    ("C scan (`_scan.scan`)", ("~", "<built-in method core.trace._scan.scan>")),
    ("row selection per kind (Python)", ("columns.py", "scan_columns")),
    ("merge: remap chunk strings, collect", ("merge.py", "add")),
    ("merge: concatenate", ("merge.py", "finish")),
    ("build (sort, tracks, depth, tables)", ("build.py", "build_model")),
    ("cache write", ("cache.py", "store")),
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--cache", action="store_true", help="also write the cache (to a temporary dir)")
    args = ap.parse_args(argv)
    import os
    tmp = tempfile.TemporaryDirectory(prefix="ptprof-prof-cache-")
    os.environ["PTPROF_CACHE_DIR"] = tmp.name
    from core.trace import loader
    prof = cProfile.Profile(time.process_time)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    prof.runcall(loader.load, args.trace, use_cache=args.cache)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    stats = pstats.Stats(prof).stats
    cum = {}
    for (file, _, func), (_, _, _, ct, _) in stats.items():
        for stage, (suffix, name) in STAGES:
            if func == name and file.endswith(suffix):
                cum[stage] = cum.get(stage, 0.0) + ct
    scan = cum.get(STAGES[0][0], 0.0)
    rows = dict(cum)
    rows[STAGES[1][0]] = max(0.0, cum.get(STAGES[1][0], 0.0) - scan)
    rows["rest (imports, read, locate, ...)"] = cpu - sum(rows.values())
    print(f"{args.trace.name}: wall {wall:.2f} s, CPU {cpu:.2f} s")
    print("| stage | CPU s | share |\n|---|---:|---:|")
    for stage, secs in rows.items():
        print(f"| {stage} | {secs:.2f} | {100 * secs / cpu:.0f} % |")
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
