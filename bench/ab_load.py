"""Alternate `ptprof info --no-cache TRACE` between builds (checkouts) and settings; medians.

    python bench/ab_load.py TRACE --runs 5 --build before=/tmp/base_wt --build after=. [--env name=K=V,K2=V2]

Each run is its own process (`core.cli` imported from the build's folder, this interpreter), runs
alternate (before, after, before, ...) so a machine whose speed drifts - this VM's did by 30 % within
the hour - weighs on both alike. Prints wall (median, min), user, sys and CPU seconds (user + sys) and
peak RSS per build. A --env entry adds a run of the first build with extra environment variables
(`-` as a value removes one). Used for bench/README.md "Fresh pages".
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

RUN = "import sys; sys.path.insert(0, sys.argv.pop(1)); from core.cli import main; sys.exit(main())"


def measure(repo: Path, trace: str, env: dict) -> tuple[float, float, float, float]:
    """wall, user, sys seconds and peak RSS (MB) of one run (os.wait4: this child's own rusage)."""
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", RUN, str(repo), "info", "--no-cache", trace], env=env,
                            cwd=repo, stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{repo}: ptprof info exited {proc.returncode}")
    return wall, ru.ru_utime, ru.ru_stime, ru.ru_maxrss / 1024


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--build", action="append", default=[], help="NAME=FOLDER (a checkout)")
    ap.add_argument("--env", action="append", default=[], help="NAME=K=V[,K=V] (first build, extra env)")
    args = ap.parse_args(argv)
    builds = [(b.split("=", 1)[0], Path(b.split("=", 1)[1]).resolve(), {}) for b in args.build or ["this=."]]
    for e in args.env:
        name, _, kvs = e.partition("=")
        extra = dict(kv.split("=", 1) for kv in kvs.split(",") if kv)
        builds.append((name, builds[0][1], extra))
    res: dict[str, list] = {name: [] for name, _, _ in builds}
    for _ in range(args.runs):
        for name, repo, extra in builds:
            env = dict(os.environ)
            for k, v in extra.items():
                env.pop(k, None) if v == "-" else env.__setitem__(k, v)
            res[name].append(measure(repo, args.trace, env))
            w, u, s, _ = res[name][-1]
            print(f"{name}: {w:.2f} s wall, {u:.2f} user, {s:.2f} sys", flush=True)
    print(f"load average {os.getloadavg()[0]:.2f}; medians of {args.runs}")
    for name, runs in res.items():
        med = [statistics.median(r[j] for r in runs) for j in range(3)]
        print(f"{name:12s} wall {med[0]:.2f} (min {min(r[0] for r in runs):.2f})  user {med[1]:.2f}  sys {med[2]:.2f}"
              f"  cpu {statistics.median(r[1] + r[2] for r in runs):.2f}  peak RSS {max(r[3] for r in runs):.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
