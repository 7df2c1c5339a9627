"""`ptprof analyze` of generated multi-rank runs: the map/reduce path beside today's whole-set path.

    nice -n 10 python bench/bench_ranks.py --source gpu_gpt_big --ranks 8 32 128 --old-max 32 --base /tmp/base
    nice -n 10 python bench/bench_ranks.py --source gpu_big_stack --ranks 32 --old-max 8 --base /tmp/base
    nice -n 10 python bench/bench_ranks.py --reduce-only 1024 --source gpu_gpt_big

Per run (bench/multi/gen_ranks.py; generated, measured, deleted): cold (fresh cache dir), warm (cache), and for a
bundle a reduce-only analyze (stored summaries). Each measurement is one `python -m core.cli analyze --json`
child: wall s, CPU s of the whole process tree (user + sys of it and its waited descendants), peak RSS of the
tree (sum of every process, sampled every 50 ms) and of its largest process, the load average around it.
`--base DIR`: a checkout of the code before issue 33 (git archive <commit> | tar -x -C DIR, its _scan built)
runs the same analyze for the whole-set numbers, up to --old-max ranks. Findings are compared on (rule, title,
severity, saving); the straggler must be found with its cause (slow_rank_data_prep) on every run.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "multi"))


def measure(cmd: list[str], env: dict) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak = {"tree": 0, "one": 0}
    done = threading.Event()

    def sample():
        root = psutil.Process(p.pid)
        while not done.is_set():
            try:
                procs = [root] + root.children(recursive=True)
                rss = []
                for q in procs:
                    try:
                        rss.append(q.memory_info().rss)
                    except psutil.Error:
                        pass
                peak["tree"] = max(peak["tree"], sum(rss))
                peak["one"] = max(peak["one"], max(rss, default=0))
            except psutil.Error:
                pass
            done.wait(0.05)
    th = threading.Thread(target=sample, daemon=True)
    th.start()
    out, err = p.communicate()
    wall = time.perf_counter() - t0
    done.set()
    th.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    res = {"rc": p.returncode, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
           "peak_tree_gb": round(peak["tree"] / 1e9, 3), "peak_one_gb": round(peak["one"] / 1e9, 3),
           "maxrss_child_gb": round(after.ru_maxrss * 1024 / 1e9, 3), "load": [round(x, 1) for x in load0],
           "load_after": [round(x, 1) for x in os.getloadavg()]}
    try:
        res["doc"] = json.loads(out)
    except ValueError:
        res["stderr"] = err.decode(errors="replace")[-2000:]
    return res


def key(doc) -> list:
    return [(f["rule"], f["title"], f["severity"], f["saving_ns"]) for f in doc.get("findings", ())]


def straggler_ok(doc, slow: int) -> bool:
    return any(f["rule"] == "straggler" and f["title"].startswith(f"[rank {slow}] rank {slow} is the straggler")
               and "slow_rank_data_prep" in f["title"] for f in doc.get("findings", ()))


def analyze_cmd(code: Path, run: Path, extra=()) -> list[str]:
    # -P: `-m` would put the current folder first on sys.path, and a bench started in a checkout ran that
    # checkout's code whatever PYTHONPATH (`--base`) named
    return [sys.executable, "-P", "-m", "core.cli", "analyze", "--json", *extra, str(run)]


def env_for(code: Path, cache: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(code), PTPROF_CACHE_DIR=str(cache))
    return env


def strip(r: dict) -> dict:
    return {k: v for k, v in r.items() if k != "doc"}


def bench_run(source: str, n: int, work: Path, base: Path | None, old_max: int, bundle: bool,
              second: bool = True) -> dict:
    import gen_ranks
    run = work / f"{Path(source).name}_{n}"
    traces = run / "traces" if bundle else run
    t0 = time.perf_counter()
    info = gen_ranks.generate(gen_ranks.source_path(source), n, traces)
    if bundle:  # a run bundle: summaries are stored on first analysis
        (run / "run.json").write_text(json.dumps({"status": "done", "ranks": n}))
        (run / "events.jsonl").write_text("")
    gen_s = time.perf_counter() - t0
    disk = sum(p.stat().st_size for p in traces.glob("*.gz"))
    out = {"source": source, "ranks": n, "slow_rank": info["slow_rank"], "generate_s": round(gen_s, 1),
           "disk_gb": round(disk / 1e9, 2)}
    cache = work / "cache"
    try:
        shutil.rmtree(cache, ignore_errors=True)
        new = measure(analyze_cmd(ROOT, run), env_for(ROOT, cache))
        out["new_cold"] = strip(new)
        doc = new.get("doc") or {}
        out["findings"] = len(doc.get("findings", ()))
        out["straggler_found"] = straggler_ok(doc, info["slow_rank"])
        summ = doc.get("summary", {})
        out["ranks_seen"] = summ.get("ranks")
        if second:
            warm = measure(analyze_cmd(ROOT, run), env_for(ROOT, cache))
            out["new_second"] = strip(warm)  # bundle: reduce-only (stored summaries); folder: warm cache
            out["second_same"] = key(warm.get("doc") or {}) == key(doc)
        if base is not None and n <= old_max:
            shutil.rmtree(cache, ignore_errors=True)
            old = measure(analyze_cmd(base, run), env_for(base, cache))
            out["old_cold"] = strip(old)
            out["same_findings_as_old"] = key(old.get("doc") or {}) == key(doc)
            out["old_straggler_found"] = straggler_ok(old.get("doc") or {}, info["slow_rank"])
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(run, ignore_errors=True)
    return out


def reduce_only(n: int, source: str, work: Path, per: int = 8) -> dict:
    """A bundle of n ranks whose summaries are stored: `per` real ranks generated and mapped, the other ranks'
    trace files hard links to them (same size and mtime) with their summaries copied under their own rank."""
    import gen_ranks
    run = work / f"reduce_{n}"
    traces = run / "traces"
    gen_ranks.generate(gen_ranks.source_path(source), per, traces, slow=per - 1)
    (run / "run.json").write_text(json.dumps({"status": "done", "ranks": n}))
    (run / "events.jsonl").write_text("")
    cache = work / "cache"
    env = env_for(ROOT, cache)
    try:
        # summaries of the real ranks with the n-rank world hint (the stored digest includes it)
        for r in range(per, n):
            os.link(traces / f"rank{r % (per - 1)}.pt.trace.json.gz", traces / f"rank{r}.pt.trace.json.gz")
        from core.ranks import stored
        from core.ranks.run import tasks_of
        from core.trace import io
        os.environ["PTPROF_CACHE_DIR"] = str(cache)
        found = io.discover(run)
        tasks = {Path(t.path).name: t for t in tasks_of(found)}
        from core.ranks.mapper import map_rank
        base = {}
        for r in range(per):
            t = tasks[f"rank{r}.pt.trace.json.gz"]
            base[r] = map_rank(t)
        t_copy = time.perf_counter()
        from dataclasses import replace
        for r in range(n):
            t = tasks[f"rank{r}.pt.trace.json.gz"]
            src = base[r] if r < per else base[r % (per - 1)]
            di = dict(src.distributed_info or {}, rank=r, world_size=n)
            stored.store(t, replace(src, rank=r, path=t.path, distributed_info=di))
        copy_s = time.perf_counter() - t_copy
        res = measure(analyze_cmd(ROOT, run), env)
        doc = res.get("doc") or {}
        out = {"ranks": n, "stored_from_real_ranks": per, "store_s": round(copy_s, 1),
               "reduce_only": strip(res), "findings": len(doc.get("findings", ())),
               "ranks_seen": doc.get("summary", {}).get("ranks"),
               "straggler_found": straggler_ok(doc, per - 1)}
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(run, ignore_errors=True)
    return out


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--source", default="gpu_gpt_big")
    p.add_argument("--ranks", type=int, nargs="*", default=[8])
    p.add_argument("--base", type=Path, default=None)
    p.add_argument("--old-max", type=int, default=32)
    p.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "bench_ranks")
    p.add_argument("--bundle", action="store_true", help="write the runs as run bundles (summaries stored)")
    p.add_argument("--reduce-only", type=int, default=0)
    p.add_argument("--out", type=Path, default=None, help="append the JSON lines here")
    p.add_argument("--cold-only", action="store_true", help="no second (warm / reduce-only) analyze")
    a = p.parse_args()
    a.work.mkdir(parents=True, exist_ok=True)
    results = []
    if a.reduce_only:
        results.append(reduce_only(a.reduce_only, a.source, a.work))
    else:
        for n in a.ranks:
            results.append(bench_run(a.source, n, a.work, a.base, a.old_max, a.bundle, not a.cold_only))
    for r in results:
        emit(r, a.out)
    return 0


def emit(result: dict, out: Path | None) -> None:
    """One result as a JSON line on stdout, and appended to `out` when given (--out)."""
    line = json.dumps(result)
    print(line, flush=True)
    if out:
        with open(out, "a") as fh:
            fh.write(line + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
