"""Hostile inputs whose cost, not their shape, was the problem (issue 37), side by side on two checkouts.

    python bench/bench_input_bounds.py --base /tmp/base-checkout [--runs 3] [--timeout 300]

Cases (written once to --work): a 200 MB event name, 200 MB of trailing NUL padding (a real file, not
sparse), 200 MB of trailing spaces, a 20,000-column nvml.csv bundle, a gzip member with a 10 MB FNAME.
Each `ptprof info --no-cache` (and `analyze` for the name) runs in a fresh interpreter of each checkout;
wall / CPU (user + sys) / peak RSS by /usr/bin/time, medians of --runs. A run past --timeout counts as the
timeout. Prints a Markdown table with the ratios (base / this).
"""
from __future__ import annotations

import argparse
import gzip
import os
import random
import re
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))


def make_cases(work: Path) -> dict[str, tuple[list[str], Path]]:
    from hostile.gen_store import SMALL_TRACE, _nvml_wide
    from hostile.gen_trace import base_doc, gzip_member, kineto_text
    work.mkdir(parents=True, exist_ok=True)
    raw = gzip.decompress(SMALL_TRACE.read_bytes())
    cases = {}
    name = work / "name200mb.pt.trace.json"
    if not name.exists():
        doc = base_doc(random.Random(7))
        doc["traceEvents"][1]["name"] = "@NAME@"
        head, tail = kineto_text(doc).split(b"@NAME@")
        with open(name, "wb") as fh:
            fh.write(head)
            for _ in range(200):
                fh.write(b"N" * (1 << 20))
            fh.write(tail)
    cases["200 MB event name: info"] = (["info"], name)
    cases["200 MB event name: analyze"] = (["analyze"], name)
    for pad, label in ((b"\0", "NUL"), (b" ", "space")):
        p = work / f"pad200mb_{label}.pt.trace.json"
        if not p.exists():
            with open(p, "wb") as fh:
                fh.write(raw)
                for _ in range(200):
                    fh.write(pad * (1 << 20))
        cases[f"200 MB of trailing {label} padding: info"] = (["info"], p)
    bundle = work / "nvml_wide"
    if not bundle.exists():
        _nvml_wide(work)
    cases["nvml.csv of 20,000 columns: info"] = (["info"], bundle)
    fname = work / "fname10mb.pt.trace.json.gz"
    if not fname.exists():
        fname.write_bytes(gzip_member(raw, fname=b"n" * (10 << 20)))
    cases["gzip FNAME of 10 MB: info"] = (["info"], fname)
    return cases


_TIME = re.compile(r"BENCH wall=([\d.]+) user=([\d.]+) sys=([\d.]+) rss=(\d+)")


def measure(repo: Path, args: list[str], path: Path, timeout: float) -> tuple[float, float, float, str]:
    cmd = ["/usr/bin/time", "-f", "BENCH wall=%e user=%U sys=%S rss=%M", sys.executable, "-m", "core.cli", *args,
           "--no-cache", str(path)]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    try:
        proc = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return timeout, float("nan"), float("nan"), "timeout"
    m = _TIME.search(proc.stderr)
    outcome = "traceback" if "Traceback" in proc.stderr else f"exit {proc.returncode}"
    if m is None:
        return float("nan"), float("nan"), float("nan"), outcome
    wall, user, sys_, rss = m.groups()
    return float(wall), float(user) + float(sys_), int(rss) / 1024, outcome


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", type=Path, required=True, help="the checkout to compare with (its _scan built)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/ptprof-bench-input"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=300)
    a = ap.parse_args()
    cases = make_cases(a.work)
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    print("| case | base wall s / CPU s / MB | this wall s / CPU s / MB | wall ratio | outcome base / this |")
    print("|---|---:|---:|---:|---|")
    for label, (args, path) in cases.items():
        cols = []
        for repo in (a.base.resolve(), REPO):
            runs = [measure(repo, args, path, a.timeout) for _ in range(a.runs)]
            if runs[0][3] == "timeout":  # one timeout is enough: do not wait for it --runs times
                runs = runs[:1]
            cols.append(tuple(statistics.median(r[i] for r in runs) for i in range(3)) + (runs[-1][3],))
        (bw, bc, br, bo), (tw, tc, tr, to) = cols
        print(f"| {label} | {bw:.1f} / {bc:.1f} / {br:.0f} | {tw:.1f} / {tc:.1f} / {tr:.0f} | {bw / tw:.1f}x | {bo} / {to} |",
              flush=True)


if __name__ == "__main__":
    main()
