"""A whole load (`load(path, use_cache=False)`, one process: PTPROF_WORKERS=0) through each decode path - the C
scanner and the pure-Python one (msgspec + numpy; what an install without a compiler runs) - CPU seconds of
this process, best and median of N runs. For A/B runs of changes to the decode paths (issue 28's exact
times): run it from each checkout, or give another checkout with --baseline to alternate the two.

    python bench/bench_decode_paths.py TRACE [TRACE ...] [--runs 5] [--baseline /path/to/checkout]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ONE = """
import json, sys, time
from core.trace import columns
from core.trace.loader import load
columns._DISABLED = sys.argv[2] == "python"
t, c = time.perf_counter(), time.process_time()
m = load(sys.argv[1], use_cache=False).primary
print(json.dumps({"cpu": time.process_time() - c, "wall": time.perf_counter() - t, "rows": len(m.slices)}))
"""


def run_once(checkout: Path, trace: Path, path: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(checkout), PTPROF_WORKERS="0")
    out = subprocess.run([sys.executable, "-c", ONE, str(trace), path], cwd=checkout, env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("traces", nargs="+", type=Path)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--baseline", type=Path)
    args = ap.parse_args()
    sides = [("this", REPO)] + ([("baseline", args.baseline)] if args.baseline else [])
    print("| trace | path | checkout | CPU s best | CPU s median | wall s median | rows |\n|---|---|---|---|---|---|---|")
    for trace in args.traces:
        for path in ("scanner", "python"):
            got: dict[str, list[dict]] = {name: [] for name, _ in sides}
            for _ in range(args.runs):  # alternated, so both sides see the same machine load
                for name, checkout in sides:
                    got[name].append(run_once(checkout, trace, path))
            for name, _ in sides:
                cpu = [r["cpu"] for r in got[name]]
                print(f"| {trace.name} | {path} | {name} | {min(cpu):.3f} | {statistics.median(cpu):.3f} | "
                      f"{statistics.median(r['wall'] for r in got[name]):.3f} | {got[name][0]['rows']:,} |", flush=True)


if __name__ == "__main__":
    main()
