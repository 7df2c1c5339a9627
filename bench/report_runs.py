"""What bench_report_ranks.py and bench_one_read.py share: a generated multi-rank run with its own cache
(bench/multi/gen_ranks.py; deleted afterwards with the report folders), a report folder's files to compare, and
the loop over --ranks that prints one JSON line per run (bench_ranks.emit)."""
from __future__ import annotations

import re
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "bench" / "multi"))

from bench_ranks import emit  # noqa: E402


def report_files(folder: Path) -> dict:
    """name -> bytes of a report folder (report.html without its "generated ..." timestamp)."""
    out = {}
    for p in sorted(folder.iterdir()):
        data = p.read_bytes()
        if p.name == "report.html":
            data = re.sub(rb"generated [^<]*", b"", data)
        out[p.name] = data
    return out


@contextmanager
def generated_run(source: str, n: int, work: Path) -> Iterator[tuple[Path, dict, Path]]:
    """(run folder, gen_ranks info, cache folder) of `n` ranks made from `source`; the run, the cache and every
    work/report_* folder are deleted on the way out."""
    import gen_ranks
    run = work / f"run{n}"
    info = gen_ranks.generate(gen_ranks.source_path(source), n, run)
    (run / "generated.json").unlink(missing_ok=True)
    cache = work / "cache"
    try:
        yield run, info, cache
    finally:
        shutil.rmtree(run, ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)
        for folder in work.glob("report_*"):
            shutil.rmtree(folder, ignore_errors=True)


def each_rank_count(ranks: list[int], work: Path, bench_one: Callable[[int], dict], out: Path | None) -> int:
    """bench_one(n) for each n of --ranks, timed (bench_s), one JSON line each (and appended to --out)."""
    work.mkdir(parents=True, exist_ok=True)
    for n in ranks:
        t0 = time.perf_counter()
        result = bench_one(n)
        result["bench_s"] = round(time.perf_counter() - t0, 1)
        emit(result, out)
    return 0
