"""`ptprof report` and `ptprof diff` of generated multi-rank runs: per-rank parts (core/ranks/views.py) beside the
whole-set path (every rank loaded in the command's process, as before issue 33's follow-up).

    nice -n 10 python bench/bench_report_ranks.py --source gpu_gpt_big --ranks 8 32 [--no-png]

Per run (bench/multi/gen_ranks.py; generated, measured, deleted): the cache is filled first by one
`ptprof analyze` (both paths then read warm entries: the comparison is of what each path holds, not of the
parse), then per path one child process: wall, CPU of its process tree, peak RSS of the tree and of its biggest
process (bench_ranks.measure). Outputs are compared file by file (report.html without its timestamp; diff JSON).
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

OLD_REPORT = """
import sys
from core.export.writer import ReportOptions, load_renderer, write_report
from core.trace.loader import load
png = sys.argv[3] == "1"
r = load_renderer()[0] if png else None
ts = load(sys.argv[1])
try:  # since issue 35 the caller hands a set of several ranks its findings (older checkouts: the writer ran them)
    from core.ranks.inset import collect_findings
except ImportError:
    collect_findings = None
write_report(ts, sys.argv[2], r, ReportOptions(pngs=png, findings=collect_findings and collect_findings(ts)))
"""
OLD_DIFF = """
import json, sys
from core.ranks.findings_cache import compare_runs
from core.trace.loader import load
a, b = load(sys.argv[1]), load(sys.argv[2])
json.dump(compare_runs(a, b).to_json(), sys.stdout)
"""


def bench(source: str, n: int, work: Path, png: bool) -> dict:
    py = sys.executable
    with generated_run(source, n, work) as (run, info, cache):
        env = env_for(ROOT, cache)
        out = {"source": source, "ranks": n, "slow_rank": info["slow_rank"]}
        warm = measure([py, "-m", "core.cli", "analyze", "--json", str(run)], env)
        out["analyze_fill_cache"] = strip(warm)
        res = {}
        for path in ("old", "new"):
            dest = work / f"report_{path}"
            shutil.rmtree(dest, ignore_errors=True)
            cmd = ([py, "-c", OLD_REPORT, str(run), str(dest), "1" if png else "0"] if path == "old" else
                   [py, "-m", "core.cli", "report", str(run), "--out", str(dest)] + ([] if png else ["--no-png"]))
            res[path] = strip(measure(cmd, env))
        out["report"] = res
        out["report_same_files"] = report_files(work / "report_old") == report_files(work / "report_new")
        res = {}
        docs = {}
        for path in ("old", "new"):
            cmd = ([py, "-c", OLD_DIFF, str(run), str(run)] if path == "old" else
                   [py, "-m", "core.cli", "diff", "--json", str(run), str(run)])
            r = measure(cmd, env)
            docs[path] = r.get("doc")
            res[path] = strip(r)
        out["diff"] = res
        out["diff_same_json"] = docs["old"] == docs["new"] and docs["old"] is not None
    return out


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--source", default="gpu_gpt_big")
    p.add_argument("--ranks", type=int, nargs="*", default=[8])
    p.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "bench_report_ranks")
    p.add_argument("--no-png", action="store_true")
    p.add_argument("--out", type=Path, default=None, help="append the JSON lines here")
    a = p.parse_args()
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    return each_rank_count(a.ranks, a.work, lambda n: bench(a.source, n, a.work, not a.no_png), a.out)

if __name__ == "__main__":
    raise SystemExit(main())
