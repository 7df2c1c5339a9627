"""`ptprof info SNAPSHOT` side by side with torch's own Python processing of the same file (issue 37).

    python bench/bench_snapshot.py FILE.pickle [FILE2 ...] [--runs 3]

Each command runs in a fresh process, `--runs` times; the table gives medians of wall time, CPU time
(user + system, from wait4: what the machine's load does not inflate) and peak RSS:
  ptprof info        core/snapshot: bounded opcode walk, restricted unpickler, columns, timeline, blocks
  memory_viz         python -m torch.cuda._memory_viz trace_plot FILE -o OUT.html (pickle.load, then the
                     page with the snapshot embedded: its layout runs later, in the browser)
  pickle.load        the unrestricted floor: pickle.load and nothing else
  (before)           with --before DIR: `ptprof info` of another checkout (cwd there)
Generate inputs with bench/gen_big_snapshot.py (and delete them after: they are hundreds of MB).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def commands(path: Path, out_html: str, before: Path | None) -> dict[str, list[str]]:
    old = {"ptprof info (before)": ["env", f"PYTHONPATH={before}", sys.executable, "-m", "core.cli", "info",
                                    str(path)]} if before else {}
    return {
        **old,
        "ptprof info": [sys.executable, "-m", "core.cli", "info", str(path)],
        "memory_viz trace_plot": [sys.executable, "-m", "torch.cuda._memory_viz", "trace_plot", str(path), "-o",
                                  out_html],
        "pickle.load": [sys.executable, "-c", f"import pickle; pickle.load(open({str(path)!r}, 'rb'))"],
    }


def run_once(cmd: list[str]) -> tuple[float, float, float, int]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    t0 = time.perf_counter()
    cwd = cmd[1].split("=", 1)[1] if cmd[0] == "env" else REPO
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace")
    if proc.returncode:
        print(f"  ! {cmd[2:4]} exit {proc.returncode}: {err.strip().splitlines()[-1:]}", file=sys.stderr)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--before", type=Path, help="a checkout of the code before (its `ptprof info` runs too)")
    a = ap.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        for path in a.files:
            print(f"\n{path.name}: {path.stat().st_size / 1e6:.1f} MB")
            print(f"  {'what':24s} {'wall s':>8s} {'cpu s':>8s} {'peak MB':>8s}  (medians of {a.runs})")
            rows = {}
            for name, cmd in commands(path, os.path.join(tmp, "out.html"), a.before).items():
                runs = [run_once(cmd) for _ in range(a.runs)]
                wall, cpu, rss = (statistics.median(r[i] for r in runs) for i in range(3))
                rows[name] = (wall, cpu, rss)
                print(f"  {name:24s} {wall:8.2f} {cpu:8.2f} {rss:8.0f}", flush=True)
            ours, theirs = rows["ptprof info"], rows["memory_viz trace_plot"]
            print(f"  ptprof / memory_viz: wall {ours[0] / theirs[0]:.2f}x, cpu {ours[1] / theirs[1]:.2f}x, "
                  f"peak {ours[2] / theirs[2]:.2f}x")
    print(f"\nload average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
