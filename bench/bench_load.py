"""Load-time benchmark: ptprof (cold and warm cache) vs plain orjson.loads vs HTA TraceAnalysis.

    python bench/bench_load.py                                   # gpt_big (+ /tmp big traces if present)
    python bench/bench_load.py TRACE [TRACE ...] --runs 5 --hta-max-mb 200

Every measurement runs in its own subprocess (one process tree: this script and its children), so
wall time includes interpreter start and imports, as a user sees them. CPU s = user + sys of the
process and the children it reaped (ptprof's decode workers included): on a shared machine it is
the steadier number. Peak RSS is reported twice:
`rss` = ru_maxrss of the measured process (what /usr/bin/time -v reports; ptprof's decode workers are
separate processes), `tree` = the largest sum of VmRSS over the process and its children, sampled
every 20 ms (shared file pages counted once per process, so it over-counts). Medians of --runs.
ptprof cold = an empty cache dir (the run writes the cache); warm = the cache that run wrote.
orjson = read (+ISA-L gunzip for .gz) + orjson.loads, gc disabled. HTA = TraceAnalysis on a dir
holding only a link to the trace; skipped above --hta-max-mb (HTA needs ~7x the JSON size in RAM
and minutes: 148 s / 7.6 GB for 1.15 GB measured here) and reported 'unavailable' if it fails.
Results: a table on stdout and bench/results/<time>.{md,json}.
Every child runs with bytecode caching on (`PYTHONDONTWRITEBYTECODE` removed from its environment,
the modules compiled once before the first timing), as after a `pip install`: with it set - as in
this project's sandbox shells - each run recompiled ~45 modules, +0.08 s on every `ptprof info`.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
DEFAULT_TRACES = [Path("/work/shared/traces/gpu_gpt_big.pt.trace.json.gz"),
                  Path("/tmp/gpu_big_stack.pt.trace.json"), Path("/tmp/big_synth.pt.trace.json")]

ORJSON = """
import gc, sys, orjson
gc.disable()
p = sys.argv[1]
if p.endswith('.gz'):
    from isal import igzip
    data = igzip.open(p).read()
else:
    data = open(p, 'rb').read()
doc = orjson.loads(data)
print(len(doc['traceEvents']))
"""
HTA = """
import logging, sys
logging.disable(logging.CRITICAL)
from hta.trace_analysis import TraceAnalysis
a = TraceAnalysis(trace_dir=sys.argv[1])
print(sum(len(t) for t in a.t.get_all_traces().values()))
"""


def _children(pid: int) -> list[int]:
    out = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                out += [int(c) for c in fh.read().split()]
    except OSError:
        pass
    return out


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def measure(argv: list[str], env: dict | None = None, timeout: float = 600, cwd: Path = REPO) -> dict:
    """Run argv; wall seconds, ru_maxrss of that process, sampled peak RSS of its tree, rc."""
    env = {k: v for k, v in (os.environ if env is None else env).items() if k != "PYTHONDONTWRITEBYTECODE"}
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd)
    peak = [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            pids = [proc.pid]
            i = 0
            while i < len(pids):
                pids += _children(pids[i])
                i += 1
            peak[0] = max(peak[0], sum(_rss_kb(p) for p in pids))
            done.wait(0.02)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    try:
        _, status, ru = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
        done.set()
    wall = time.perf_counter() - t0
    out = proc.stdout.read().decode(errors="replace")
    err = proc.stderr.read().decode(errors="replace")
    rc = os.waitstatus_to_exitcode(status)
    return {"wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "rss_mb": ru.ru_maxrss / 1024,
            "tree_mb": peak[0] / 1024, "rc": rc,
            "out": out.strip(), "err": err.strip()[-400:]}  # all of out: `info --json` is parsed


def median_of(runs: list[dict]) -> dict:
    ok = [r for r in runs if r["rc"] == 0]
    if not ok:
        return {"ok": False, "err": runs[-1]["err"].splitlines()[-1:] if runs else ["not run"]}
    return {"ok": True, "n": len(ok), "wall_s": statistics.median(r["wall_s"] for r in ok),
            "cpu_s": statistics.median(r["cpu_s"] for r in ok),
            "rss_mb": statistics.median(r["rss_mb"] for r in ok), "tree_mb": statistics.median(r["tree_mb"] for r in ok),
            "all_wall_s": [round(r["wall_s"], 3) for r in ok]}


def bench_trace(path: Path, runs: int, hta_max_mb: float, hta_timeout: float, baseline: Path | None = None) -> dict:
    py = sys.executable
    size_mb = path.stat().st_size / 1e6
    raw_mb = size_mb
    if path.suffix == ".gz":
        import struct
        with open(path, "rb") as fh:
            fh.seek(-4, os.SEEK_END)
            raw_mb = struct.unpack("<I", fh.read(4))[0] / 1e6
    res: dict = {"trace": str(path), "file_mb": round(size_mb, 1), "json_mb": round(raw_mb, 1)}
    cold, warm, orj, hta, nocache, base = [], [], [], [], [], []
    info = [py, "-m", "core.cli", "info", str(path), "--json"]
    load_s = {"cold": [], "warm": []}
    for i in range(runs):
        with tempfile.TemporaryDirectory(prefix="ptprof-bench-cache-") as cache:
            env = {**os.environ, "PTPROF_CACHE_DIR": cache}
            r = measure(info, env)
            cold.append(r)
            if r["rc"] == 0:
                load_s["cold"].append(json.loads(r["out"])["load_s"])
            r = measure(info, env)
            warm.append(r)
            if r["rc"] == 0 and r["out"].startswith("{"):
                load_s["warm"].append(json.loads(r["out"])["load_s"])
        nocache.append(measure(info + ["--no-cache"]))
        if baseline is not None:  # the same command in another checkout (e.g. main before a change)
            base.append(measure(info + ["--no-cache"], cwd=baseline))
        orj.append(measure([py, "-c", ORJSON, str(path)]))
        print(f"  run {i + 1}: cold {cold[-1]['wall_s']:.2f}s warm {warm[-1]['wall_s']:.2f}s "
              f"no-cache {nocache[-1]['wall_s']:.2f}s orjson {orj[-1]['wall_s']:.2f}s", file=sys.stderr)
    res["ptprof_cold"] = median_of(cold)
    res["ptprof_warm"] = median_of(warm)
    res["orjson"] = median_of(orj)
    res["ptprof_nocache"] = median_of(nocache)
    res["baseline_nocache"] = median_of(base) if baseline is not None else {"ok": False, "err": ["no --baseline"]}
    for k in ("cold", "warm"):
        if load_s[k]:
            res[f"ptprof_{k}"]["load_s"] = statistics.median(load_s[k])
    if raw_mb > hta_max_mb:
        res["hta"] = {"ok": False, "err": [f"skipped: {raw_mb:.0f} MB JSON > --hta-max-mb {hta_max_mb:.0f} "
                                          "(HTA took 148 s / 7.6 GB for 1.15 GB here)"]}
    else:
        with tempfile.TemporaryDirectory(prefix="hta-bench-") as d:
            os.symlink(path, Path(d) / path.name)
            for i in range(runs):
                hta.append(measure([py, "-c", HTA, d], timeout=hta_timeout))
                print(f"  run {i + 1}: HTA {hta[-1]['wall_s']:.2f}s rc={hta[-1]['rc']}", file=sys.stderr)
                if hta[-1]["rc"] != 0:
                    break
        res["hta"] = median_of(hta)
        if not res["hta"]["ok"]:
            res["hta"]["err"] = ["unavailable: " + " ".join(res["hta"]["err"])]
    return res


def table(results: list[dict], load: str) -> str:
    lines = [f"machine: {os.cpu_count()} cores, load average at start {load}; medians of {results[0]['runs']} runs"
             if results else "", "",
             "| trace | JSON MB | tool | wall s | load_s | CPU s | peak RSS MB (proc / tree) | wall vs orjson | HTA / this |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        name = Path(r["trace"]).name
        base = r["orjson"].get("wall_s")
        hta = r["hta"].get("wall_s")
        for key, label in (("ptprof_cold", "ptprof cold"), ("ptprof_nocache", "ptprof cold --no-cache"),
                           ("baseline_nocache", "baseline cold --no-cache"), ("ptprof_warm", "ptprof warm"),
                           ("orjson", "orjson.loads"), ("hta", "HTA TraceAnalysis")):
            if key == "baseline_nocache" and not r[key].get("ok") and r[key].get("err") == ["no --baseline"]:
                continue
            m = r[key]
            if not m.get("ok"):
                lines.append(f"| {name} | {r['json_mb']} | {label} | - | - | - | - | - | {' '.join(m.get('err', []))[:90]} |")
                continue
            vs = f"{m['wall_s'] / base:.2f}x" if base else "-"
            vh = f"{hta / m['wall_s']:.1f}x" if hta else "-"
            ls = f"{m['load_s']:.2f}" if "load_s" in m else "-"
            lines.append(f"| {name} | {r['json_mb']} | {label} | {m['wall_s']:.2f} | {ls} | {m['cpu_s']:.2f} | "
                         f"{m['rss_mb']:.0f} / {m['tree_mb']:.0f} | {vs} | {vh} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="ptprof load benchmark")
    ap.add_argument("traces", nargs="*", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--hta-max-mb", type=float, default=200.0, help="skip HTA for bigger JSON (raw MB)")
    ap.add_argument("--hta-timeout", type=float, default=180.0)
    ap.add_argument("--baseline", type=Path, help="a checkout (its C scanner built) to time side by side")
    args = ap.parse_args(argv)
    traces = args.traces or [p for p in DEFAULT_TRACES if p.exists()]
    for cwd in [REPO] + ([args.baseline] if args.baseline else []):  # write the .pyc files once
        measure([sys.executable, "-c", "import core.cli, core.commands.info, core.trace.loader"], cwd=cwd)
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    results = []
    for p in traces:
        print(f"{p} ...", file=sys.stderr)
        r = bench_trace(p, args.runs, args.hta_max_mb, args.hta_timeout, args.baseline)
        r["runs"] = args.runs
        results.append(r)
    text = table(results, load)
    print(text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (RESULTS / f"{stamp}.md").write_text(text + "\n")
    (RESULTS / f"{stamp}.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
