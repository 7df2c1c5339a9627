"""`ptprof report PATH --out DIR [--no-cache] [--width PX] [--scale 2] [--step N] [--no-png]`.

Writes timeline.png, memory.png, gpu.png (with NVML samples), breakdown.png, findings.csv, kernels.csv,
ops.csv, steps.csv, nvml.csv (with NVML samples) and a self-contained report.html into DIR.
Renders offscreen: without a display it sets QT_QPA_PLATFORM=offscreen itself, before Qt is imported.
Never replaces a file ptprof did not write (core.export.outdir): a folder holding the user's own
metrics.csv, or a run bundle (its raw nvml.csv), is refused in one line before anything is loaded.
Exit codes: 0 ok, 2 bad input or usage (one line on stderr).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from core.terminal import printable
from core.trace.loader import load


def add_arguments(p) -> None:
    p.add_argument("path", help="trace file (.json/.json.gz), TensorBoard log dir, multi-rank dir or run bundle")
    p.add_argument("--out", required=True, metavar="DIR", help="folder to write the report into (created)")
    p.add_argument("--no-cache", action="store_true", help="ignore and do not write the columnar cache")
    p.add_argument("--width", type=int, default=1600, metavar="PX", help="PNG width in logical pixels (default 1600)")
    p.add_argument("--scale", type=float, default=1.0, help="device pixels per logical pixel: 2 for 2x DPI PNGs")
    p.add_argument("--step", type=int, default=None, metavar="N", help="timeline of ProfilerStep N (default: busiest)")
    p.add_argument("--no-png", action="store_true", help="CSVs and report.html only (no Qt needed)")


def headless_platform(env=os.environ) -> None:
    """Offscreen Qt when there is no display (CI, ssh). Must run before PySide6 is imported."""
    if env.get("QT_QPA_PLATFORM"):
        return
    if sys.platform.startswith("linux") and not (env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")):
        env["QT_QPA_PLATFORM"] = "offscreen"


def _fail(msg: str) -> int:
    print(f"ptprof: {msg}", file=sys.stderr)
    return 2


def run(args) -> int:
    from core.export.figures import FigureSpec

    if not 200 <= args.width <= 10000:
        return _fail(f"--width must be between 200 and 10000, got {args.width}")
    if not 0.5 <= args.scale <= 4:
        return _fail(f"--scale must be between 0.5 and 4, got {args.scale}")
    if not args.out.strip():
        return _fail("--out is empty: give the folder to write the report into")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        return _fail(f"--out {out}: exists and is not a folder")
    from core.export import outdir
    why = outdir.problem(out)  # before the load: a refused folder costs nothing
    if why:
        return _fail(printable(f"--out {why}"))
    from core.ranks import is_multi
    findings = view = None
    spec = FigureSpec(width_px=args.width, scale=args.scale, step=args.step)
    if is_multi(args.path):  # several trace files (ranks): read rank by rank in workers, never all held
        from core.export.findings import wrap
        from core.ranks.report_parts import report_view
        view, run_analysis = report_view(args.path, not args.no_cache, args.width, not args.no_png, spec)
        ts, findings = view, wrap(run_analysis.analysis)
    else:
        ts = load(args.path, use_cache=not args.no_cache)  # TraceParseError -> exit 2 in core.cli
    try:
        return _write(args, ts, out, spec, findings)
    finally:
        if view is not None:
            view.close()


def _write(args, ts, out: Path, spec, findings) -> int:
    from core.export import outdir
    from core.export.writer import ReportOptions, load_renderer, write_report
    if args.step is not None:
        numbers = sorted({int(n) for m in ts.models for n in m.steps.number})
        if args.step not in numbers:
            have = f"steps {numbers[0]}-{numbers[-1]}" if numbers else "the trace has no ProfilerStep spans"
            return _fail(f"--step {args.step}: no ProfilerStep#{args.step} ({have})")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return _fail(f"--out {out}: {exc.strerror or exc}")
    renderer = None
    if not args.no_png:
        headless_platform()
        renderer, why = load_renderer()
        if renderer is None:
            print(f"ptprof: warning: {why}; writing CSVs and report.html without PNGs", file=sys.stderr)
    if findings is None:  # core.export never runs the ranks analysis itself (core.ranks sits above it)
        from core.ranks.inset import collect_findings
        findings = collect_findings(ts)
    try:
        result = write_report(ts, out, renderer, ReportOptions(spec=spec, findings=findings, pngs=not args.no_png))
    except outdir.ExportRefused as exc:  # the folder changed since the check above
        return _fail(printable(f"--out {exc}"))
    except OSError as exc:
        return _fail(f"cannot write into {out}: {exc.strerror or exc}")
    for path in result.files:
        print(printable(str(path)))
    if result.findings_note:
        print(f"ptprof: note: {result.findings_note}", file=sys.stderr)
    return 0
