"""`ptprof report` / `ptprof diff` of generated multi-rank runs, this checkout beside a baseline checkout (the
code before `report` and `diff` read each rank once: core/ranks/onepass.py), with `ptprof analyze` as the
reference (one read of each rank).

    git archive <before> | tar -x -C /tmp/base   # + build its core/trace/_scan*.so
    nice -n 10 python bench/bench_one_read.py --baseline /tmp/base --source gpu_gpt_big --ranks 8 32

Per run (bench/multi/gen_ranks.py; generated, measured, deleted): warm = the cache filled by one `analyze`
first (the run's findings cache is removed before each diff, so both diffs run the rules); cold = --no-cache.
Each command in its own child process: wall, CPU of its process tree, peak RSS of the tree
(bench_ranks.measure), the load average around it. Outputs of both checkouts are compared.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ranks import env_for, measure, strip  # noqa: E402
from report_runs import ROOT, each_rank_count, generated_run, report_files  # noqa: E402


def _no_findings_cache(cache: Path) -> None:
    for p in cache.rglob("findings-*.json"):
        p.unlink(missing_ok=True)


def bench(source: str, n: int, work: Path, base: Path, png: bool, cold: bool) -> dict:
    py = sys.executable
    code = {"before": base, "after": ROOT}
    out: dict = {"source": source, "ranks": n}
    with generated_run(source, n, work) as (run, _info, cache):
        out["analyze_fill_cache"] = strip(measure([py, "-P", "-m", "core.cli", "analyze", "--json", str(run)],
                                                  env_for(ROOT, cache)))
        out["analyze_warm"] = strip(measure([py, "-P", "-m", "core.cli", "analyze", "--json", str(run)], env_for(ROOT, cache)))
        modes = [("warm", [])] + ([("cold", ["--no-cache"])] if cold else [])
        for mode, flags in modes:
            if mode == "cold":
                out["analyze_cold"] = strip(measure([py, "-P", "-m", "core.cli", "analyze", "--json", "--no-cache", str(run)],
                                                    env_for(ROOT, cache)))
            for side in ("before", "after"):
                dest = work / f"report_{side}"
                shutil.rmtree(dest, ignore_errors=True)
                cmd = [py, "-P", "-m", "core.cli", "report", str(run), "--out", str(dest)] + flags + ([] if png else ["--no-png"])
                out[f"report_{mode}_{side}"] = strip(measure(cmd, env_for(code[side], cache)))
            out[f"report_{mode}_same_files"] = report_files(work / "report_before") == report_files(work / "report_after")
            docs = {}
            for side in ("before", "after"):
                _no_findings_cache(cache)
                r = measure([py, "-P", "-m", "core.cli", "diff", "--json"] + flags + [str(run), str(run)],
                            env_for(code[side], cache))
                docs[side] = r.get("doc")
                out[f"diff_{mode}_{side}"] = strip(r)
            out[f"diff_{mode}_same_json"] = docs["before"] == docs["after"] and docs["after"] is not None
    return out


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--baseline", type=Path, required=True, help="a checkout of the code before (its _scan built)")
    p.add_argument("--source", default="gpu_gpt_big")
    p.add_argument("--ranks", type=int, nargs="*", default=[8])
    p.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "bench_one_read")
    p.add_argument("--no-png", action="store_true")
    p.add_argument("--no-cold", action="store_true", help="skip the --no-cache commands")
    p.add_argument("--out", type=Path, default=None, help="append the JSON lines here")
    a = p.parse_args()
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    return each_rank_count(a.ranks, a.work, lambda n: bench(a.source, n, a.work, a.baseline.resolve(), not a.no_png,
                                                             not a.no_cold), a.out)

if __name__ == "__main__":
    raise SystemExit(main())
