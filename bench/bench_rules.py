"""Rules speed: median of >= 3 runs of all rules over gpt_big (428k events) and the ~1 GB trace.

    python bench/bench_rules.py [--runs 3] [--big /tmp/gpu_big_stack.pt.trace.json]

Each run analyses a freshly loaded model (derived arrays are memoised per model, so re-running on the
same object would measure the cache). The load itself is not timed. Targets (issue #4): <= 1 s for
gpt_big, <= 3 s for the 1 GB trace. `critical_path_whatif_s`: the replay of every finding's what-if plus
"all fixes together" (core/rules/savings.py; issue #9 targets: <= 1 s on gpt_big, <= 5 s on the 833 MB trace).
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.rules import analyze  # noqa: E402
from core.trace.loader import load  # noqa: E402

_REPO = Path(__file__).resolve().parents[1]
# beside a clone (../shared/traces) or a worktree under a folder beside it (../../shared/traces), as tests/helpers.py
SHARED = Path(os.environ.get("PTPROF_SHARED_TRACES") or next(
    (p for p in (_REPO.parent / "shared" / "traces", _REPO.parent.parent / "shared" / "traces") if p.is_dir()),
    _REPO.parent / "shared" / "traces"))
BIG = Path("/tmp/gpu_big_stack.pt.trace.json")


def bench(path: Path, runs: int) -> dict:
    times, per_rule = [], {}
    n_findings = 0
    events = 0
    for _ in range(runs):
        ts = load(path)  # columnar cache makes reloads cheap; every run gets a fresh model object
        events = ts.counts.events
        gc.collect()
        t0 = time.perf_counter()
        rule_t = {}
        last = [t0, None]

        def progress(fraction, rule_id, last=last, rule_t=rule_t):  # this round's lists
            now = time.perf_counter()
            if last[1] is not None:
                rule_t[last[1]] = rule_t.get(last[1], 0.0) + now - last[0]
            last[0], last[1] = now, rule_id

        result = analyze(ts, progress=progress)
        times.append(time.perf_counter() - t0)
        n_findings = len(result.findings)
        for k, v in rule_t.items():
            per_rule.setdefault(k, []).append(v)
        del ts, result
    slowest = sorted(((statistics.median(v), k) for k, v in per_rule.items()), reverse=True)[:5]
    whatif = per_rule.get("what-if savings", [0.0])
    return {"trace": path.name, "events": events, "runs": runs, "median_s": round(statistics.median(times), 3),
            "critical_path_whatif_s": round(statistics.median(whatif), 3),
            "min_s": round(min(times), 3), "findings": n_findings,
            "slowest_rules_s": {k: round(v, 3) for v, k in slowest}}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--big", default=str(BIG), help="the decompressed ~1 GB trace (xz -dk -c ... > this)")
    args = ap.parse_args()
    out = [bench(SHARED / "gpu_gpt_big.pt.trace.json.gz", args.runs)]
    if Path(args.big).exists():
        out.append(bench(Path(args.big), args.runs))
    else:
        out.append({"trace": args.big, "skipped": "not present (xz -dk -c gpu_big_stack.pt.trace.json.xz > it)"})
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
