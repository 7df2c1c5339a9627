"""`ptprof diff` speed on two gpt_big-size traces (issue 10 targets: <= 2 s cold, <= 0.5 s warm).

    python bench/bench_diff.py [--runs 3] [--a PATH] [--b PATH]

cold = both traces loaded without the columnar cache, rules run on both, diff computed (what the first
`ptprof diff A B` costs); warm = both loaded from the cache and their findings read from beside it
(core/ranks/findings_cache.py: a second `ptprof diff` of the same runs). Each
phase is reported separately (load, rules, compare), medians of --runs, in one run side by side with a
plain `orjson.loads` of both files as the baseline.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.analysis import diff  # noqa: E402
from core.ranks.findings_cache import findings_of  # noqa: E402
from core.trace.loader import load  # noqa: E402

_REPO = Path(__file__).resolve().parents[1]
# beside a clone (../shared/traces) or a worktree under a folder beside it (../../shared/traces), as tests/helpers.py
SHARED = Path(os.environ.get("PTPROF_SHARED_TRACES") or next(
    (p for p in (_REPO.parent / "shared" / "traces", _REPO.parent.parent / "shared" / "traces") if p.is_dir()),
    _REPO.parent / "shared" / "traces"))


def one(a: Path, b: Path, use_cache: bool) -> dict:
    t0 = time.perf_counter()
    ts_a, ts_b = load(a, use_cache=use_cache), load(b, use_cache=use_cache)
    t1 = time.perf_counter()
    fa, fb = findings_of(ts_a, use_cache), findings_of(ts_b, use_cache)
    t2 = time.perf_counter()
    diff.compare(ts_a, ts_b, findings_a=fa, findings_b=fb)
    t3 = time.perf_counter()
    return {"load_s": t1 - t0, "rules_s": t2 - t1, "compare_s": t3 - t2, "total_s": t3 - t0}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--a", type=Path, default=SHARED / "gpu_gpt_big.pt.trace.json.gz")
    p.add_argument("--b", type=Path, default=SHARED / "gpu_gpt_big.pt.trace.json.gz")
    args = p.parse_args()
    for path in (args.a, args.b):
        if not path.is_file():
            print(f"bench_diff: {path} not found (set PTPROF_SHARED_TRACES or pass --a / --b)", file=sys.stderr)
            return 2
    os.environ["PTPROF_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench-diff-cache-")
    import orjson
    rows = {"orjson_loads_both": [], "cold": [], "warm": []}
    for _ in range(args.runs):
        t0 = time.perf_counter()
        for path in (args.a, args.b):
            orjson.loads(gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes())
        rows["orjson_loads_both"].append({"total_s": time.perf_counter() - t0})
        rows["cold"].append(one(args.a, args.b, use_cache=False))
    one(args.a, args.b, use_cache=True)  # fill the cache
    for _ in range(args.runs):
        rows["warm"].append(one(args.a, args.b, use_cache=True))
    out = {name: {k: round(statistics.median(r[k] for r in runs), 3) for k in runs[0]} for name, runs in rows.items()}
    out["cold_vs_orjson"] = round(out["cold"]["total_s"] / out["orjson_loads_both"]["total_s"], 3)
    out["load_average"] = os.getloadavg()[0]
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
