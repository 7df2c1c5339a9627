"""A worker process for the hostile-trace tests: loads the files it is sent, one JSON line each.

    python tests/hostile/trace_worker.py --scanner on|off --workers 1|2 --chunk-bytes N --rss-bytes N

stdin: one JSON object a line, {"path": ..., "mode": "load" | "info" | "analyze" | "report"}; stdout: one JSON
object a line, {"outcome": "traceset" | "parse_error" | "exception", "detail": ...}, or for the CLI
modes {"outcome": "cli", "rc": ..., "stderr": ...}. The address space is capped (RLIMIT_AS) after the
imports, so a load that would use unbounded memory fails here, not on the machine; the parent kills
a case that runs past its time limit.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import sys
import tempfile
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scanner", choices=("on", "off"), default="on")
    ap.add_argument("--workers", default="1")
    ap.add_argument("--chunk-bytes", type=int, default=0, help="small chunks: exercise cuts and merges")
    ap.add_argument("--rss-bytes", type=int, default=3 << 30, help="address space beyond what the imports use")
    opts = ap.parse_args()
    os.environ["PTPROF_WORKERS"] = opts.workers
    import core.commands.analyze  # noqa: F401 - imported before the cap, like the loader
    import core.commands.info  # noqa: F401
    import core.commands.report  # noqa: F401
    import core.export.writer  # noqa: F401
    from core import cli
    from core.trace import columns, kineto, pieces
    from core.trace.loader import load
    from core.trace.model import TraceParseError

    columns._DISABLED = opts.scanner == "off"
    if opts.chunk_bytes:
        kineto.CHUNK_BYTES = opts.chunk_bytes
        pieces.PIECE_BYTES = max(256, opts.chunk_bytes // 4)
    with open("/proc/self/statm", "rb") as fh:
        used = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    cap = used + opts.rss_bytes
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    out = sys.stdout
    for line in sys.stdin:
        case = json.loads(line)
        try:
            if case["mode"] == "load":
                ts = load(case["path"], use_cache=case.get("cache", False))
                result = {"outcome": "traceset", "detail": len(ts.models)}
            else:
                err = io.StringIO()
                with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()), \
                        tempfile.TemporaryDirectory() as out_dir:
                    args = [case["mode"], case["path"]] + ([] if case.get("cache") else ["--no-cache"])
                    if case["mode"] == "report":  # CSVs + report.html (PNGs need Qt: the GUI tests)
                        args += ["--no-png", "--out", os.path.join(out_dir, "report")]
                    rc = cli.main(args)
                result = {"outcome": "cli", "rc": rc, "stderr": err.getvalue()}
        except TraceParseError as exc:
            result = {"outcome": "parse_error", "detail": f"{exc.reason}"}
        except BaseException as exc:  # noqa: BLE001 - what the test is looking for
            result = {"outcome": "exception", "detail": f"{type(exc).__name__}: {exc}"[:2000],
                      "traceback": traceback.format_exc()[-4000:]}
        out.write(json.dumps(result) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
