"""What each recording option costs: the same loop recorded with each option set, the step time of the
recorded (active) steps against the unprofiled steps of the same run (the schedule's wait steps and the
steps after the window), from events.jsonl step events (dur_ns = the script's time between step hooks,
phase = the profiler state the step ran in; docs/architecture.md "Runner").

    python bench/bench_record_options.py                      # CPU, LOOP_WIDTH=256
    python bench/bench_record_options.py --json out.json      # also write the table
    LOOP_WIDTH=2048 python bench/bench_record_options.py      # on a GPU box (the loop uses cuda if present)

Each option set runs --rounds times, interleaved (drift spreads over all sets); the inflation of a run is
median(active dur_ns) / median(unprofiled dur_ns); the table gives the median over rounds and the range.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LOOP = REPO / "bench" / "device_loops" / "options_loop.py"
OPTION_SETS = {
    "default (shapes, memory, sync debug)": [],
    "--no-shapes": ["--no-shapes"],
    "--no-memory": ["--no-memory"],
    "--no-sync-debug": ["--no-sync-debug"],
    "--no-shapes --no-memory --no-sync-debug": ["--no-shapes", "--no-memory", "--no-sync-debug"],
    "--with-stack": ["--with-stack"],
}


def one_run(options: list[str], out: Path, wait: int, active: int, after: int, python: str) -> dict:
    steps = wait + 1 + active + after
    cmd = [python, "-m", "core.cli", "record", "--quiet", "--out", str(out), "--wait", str(wait), "--warmup", "1",
           "--active", str(active), *options, str(LOOP), str(steps)]
    subprocess.run(cmd, cwd=str(REPO), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines() if line.strip()]
    by_phase: dict[str, list[int]] = {}
    for e in events:
        if e.get("type") == "step" and e.get("rank", 0) == 0:
            by_phase.setdefault(e["phase"], []).append(int(e["dur_ns"]))
    unprofiled = by_phase.get("wait", [])[1:] + by_phase.get("done", [])[1:]  # first of each: transition
    active_ns = by_phase.get("active", [])[1:]
    trace_bytes = sum(p.stat().st_size for p in (out / "traces").glob("*.gz"))
    return {"unprofiled_ns": statistics.median(unprofiled), "active_ns": statistics.median(active_ns),
            "inflation": statistics.median(active_ns) / statistics.median(unprofiled), "trace_bytes": trace_bytes}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--wait", type=int, default=30)
    p.add_argument("--active", type=int, default=30)
    p.add_argument("--after", type=int, default=30)
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--json", default="")
    a = p.parse_args()
    results: dict[str, list[dict]] = {name: [] for name in OPTION_SETS}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            for k, (name, options) in enumerate(OPTION_SETS.items()):
                results[name].append(one_run(options, Path(tmp) / f"r{r}o{k}", a.wait, a.active, a.after, a.python))
    print(f"LOOP_WIDTH={os.environ.get('LOOP_WIDTH', '256')}, {a.rounds} rounds, wait {a.wait} / active {a.active} "
          f"/ after {a.after} steps")
    print(f"{'options':42} {'unprofiled':>11} {'recorded':>10} {'inflation':>10} {'range':>13} {'trace':>9}")
    table = {}
    for name, runs in results.items():
        infl = [x["inflation"] for x in runs]
        row = {"unprofiled_us": statistics.median(x["unprofiled_ns"] for x in runs) / 1e3,
               "recorded_us": statistics.median(x["active_ns"] for x in runs) / 1e3,
               "inflation": statistics.median(infl), "inflation_min": min(infl), "inflation_max": max(infl),
               "trace_kb": statistics.median(x["trace_bytes"] for x in runs) / 1024}
        table[name] = row
        print(f"{name:42} {row['unprofiled_us']:9.0f}µs {row['recorded_us']:8.0f}µs {row['inflation']:9.2f}x "
              f"{row['inflation_min']:5.2f}-{row['inflation_max']:.2f}x {row['trace_kb']:7.0f}KB")
    if a.json:
        Path(a.json).write_text(json.dumps(table, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
