"""`ptprof analyze PATH [--json] [--csv FILE] [--fail-on info|warning|error] [--no-cache]`: findings.

Exit 0 ok, 1 when a finding at or above --fail-on exists (a CI gate), 2 bad input (one line).
JSON: {"findings": [{"rule","severity","title","count","impact_ns","impact_pct","time_ranges","source",
"facts","evidence","fix"}], "summary": {...}, "metrics": [{"rank","overlap_pct","queue_length","launch_delay_us",
"kernels_shorter_than_launch","memcpy_gbps","tflops","mfu_pct","device"}]} (ARCHITECTURE.md; metrics:
core.analysis.metrics, one object per trace file / rank; summary adds tflops and mfu_pct of the first rank).
"""
from __future__ import annotations

import json
import sys

from core import units
from core.export.analysis_json import json_doc
from core.export.tables import columns_of
from core.terminal import printable
from core.trace.loader import load

# `--csv FILE` writes the same findings.csv as `ptprof report` (core.export.tables SCHEMAS["findings"])
CSV_COLUMNS = columns_of("findings")


def add_arguments(p) -> None:
    p.add_argument("path", nargs="?", help="trace file, TensorBoard log dir, multi-rank dir or run bundle")
    p.add_argument("--explain", metavar="RULE", help="print what a rule reports, its thresholds and its what-if")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.add_argument("--csv", metavar="FILE", help="also write the findings as CSV")
    p.add_argument("--fail-on", choices=("info", "warning", "error"),
                   help="exit 1 when a finding at or above this severity exists")
    p.add_argument("--no-cache", action="store_true", help="ignore and do not write the columnar cache")
    p.add_argument("--rules", metavar="IDS", help="comma-separated rule ids to run (default: all)")
    p.add_argument("--baseline", metavar="A", help="compare with this baseline run (prints a markdown summary)")
    p.add_argument("--fail-on-regression", metavar="PCT", type=float,
                   help="with --baseline: exit 1 when this run is worse than the baseline by more than PCT %% "
                        "and the change is significant")
    p.add_argument("--metric", choices=("step", "gpu_busy", "memory_peak"), default="step",
                   help="what --fail-on-regression compares (default: the median step time)")
    p.add_argument("--workers", type=int, metavar="N",
                   help="several trace files (ranks): analyze N ranks at a time (default: one per core)")
    p.add_argument("--scheduler", metavar="ADDR",
                   help="several trace files: run the per-rank analysis on a Dask cluster (tcp://HOST:8786, or "
                        "local:N for N local Dask workers; pip install \".[cluster]\")")


def run(args) -> int:
    if args.explain:
        from core.rules.explain import explain
        text = explain(args.explain)
        if text is None:
            print(f"ptprof: unknown rule id: {args.explain}", file=sys.stderr)
            return 2
        sys.stdout.write(text)
        return 0
    if not args.path:
        print("ptprof: analyze needs a PATH (or --explain RULE)", file=sys.stderr)
        return 2
    from core.rules import RULE_IDS, Severity, all_rules, analyze
    rules = None
    if args.rules:
        wanted = [r.strip() for r in args.rules.split(",") if r.strip()]
        unknown = sorted(set(wanted) - set(RULE_IDS) - {"oom"})  # oom: a bundle finding (oom_findings.py)
        if unknown:
            print(f"ptprof: unknown rule id(s): {', '.join(unknown)}", file=sys.stderr)
            return 2
        rules = [r for r in all_rules() if r.id in wanted]
    if args.fail_on_regression is not None and not args.baseline:
        print("ptprof: --fail-on-regression needs --baseline A", file=sys.stderr)
        return 2
    from core.rules.oom_findings import bundle_findings
    from core.trace.model import TraceParseError
    wanted_ids = None if rules is None else {r.id for r in rules} | ({"oom"} & set(args.rules.split(",")))
    extra = [f for f in bundle_findings(args.path) if wanted_ids is None or f.rule in wanted_ids]
    if not args.baseline:
        from core.ranks import is_multi
        if is_multi(args.path):
            return run_multi(args, None if rules is None else [r.id for r in rules], extra)
    elif args.scheduler:
        print("ptprof: --scheduler works without --baseline only", file=sys.stderr)
        return 2
    try:
        ts = load(args.path, use_cache=not args.no_cache)
    except TraceParseError:
        if not extra or args.baseline:  # a bundle that died of OOM before its first window: what it has
            raise
        return _bundle_only(args, extra, Severity)
    if args.baseline:
        from core.commands import gate
        return gate.run(args, ts)
    result = analyze(ts, rules=rules)
    if extra:
        import dataclasses
        result = dataclasses.replace(result, findings=tuple(extra) + tuple(result.findings))
    if args.csv:
        try:
            write_csv(result, args.csv, ts)
        except OSError as exc:
            print(f"ptprof: cannot write {args.csv}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    from core.analysis import health
    from core.analysis.metrics import trace_metrics
    checks = [h.to_json() for h in health.check(ts)]
    metrics = trace_metrics(ts)
    from core.tryfix.store import annotate, tried_for
    tried = tried_for(args.path)  # what `ptprof try` measured on this run (bundle's tried.json)
    if args.json:
        doc = json_doc(result, checks, metrics)
        annotate(doc["findings"], tried)  # what `ptprof try` measured on this run (tried.json)
        json.dump(doc, sys.stdout)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(printable(format_table(result, metrics, checks, tried)))
    if args.fail_on and result.at_or_above(Severity.parse(args.fail_on)):
        return 1
    return 0


def run_multi(args, rule_ids, extra=()) -> int:
    """Several trace files: rank by rank on the local process pool or a Dask cluster, then across ranks
    (core/ranks); the same output as the whole-set path."""
    from types import SimpleNamespace

    from core.analysis.metrics import RankMetrics
    from core.ranks import analyze_run
    from core.ranks.executor import make_executor
    from core.rules import Severity
    if args.workers is not None and args.workers < 1:
        print("ptprof: --workers must be at least 1", file=sys.stderr)
        return 2
    try:
        ex = make_executor(args.scheduler, args.workers)
    except (ImportError, OSError, ValueError, TimeoutError, RuntimeError) as exc:  # RuntimeError: a worker
        print(printable(f"ptprof: --scheduler {args.scheduler}: {exc}"), file=sys.stderr)  # that did not start
        return 2
    try:
        ra = analyze_run(args.path, ex, rules=rule_ids, use_cache=not args.no_cache)
    finally:
        ex.close()
    result = ra.analysis
    if extra:  # a bundle's own findings (oom: run.json and the allocator snapshots)
        import dataclasses
        result = dataclasses.replace(result, findings=tuple(extra) + tuple(result.findings))
    if args.csv:
        try:
            write_csv(result, args.csv, SimpleNamespace(models=ra.summaries))
        except OSError as exc:
            print(f"ptprof: cannot write {args.csv}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    metrics = [RankMetrics(**m) for m in ra.metrics]
    if args.json:
        json.dump(json_doc(result, ra.health, metrics), sys.stdout)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(printable(format_table(result, metrics, ra.health)))
    if args.fail_on and result.at_or_above(Severity.parse(args.fail_on)):
        return 1
    return 0


def _bundle_only(args, findings, severity) -> int:
    """A bundle without traces (an OOM before the first window): its `oom` / `memory_growth` findings."""
    if args.json:
        json.dump({"health": [], "findings": [f.to_json() for f in findings], "summary": {"trace": args.path,
                   "traces": 0}}, sys.stdout)
        sys.stdout.write("\n")
    else:
        lines = [args.path, "  no trace in the bundle (the run ended before its first window); "
                            f"{units.count(len(findings), 'finding')} from run.json and the allocator snapshots", ""]
        for f in findings:
            lines.append(f"  {f.severity.label:8} {f.rule:22} {f.title}")
            if f.source:
                lines.append(f"  {'':8} {'':22} at {f.source}")
            lines.append(f"  {'':8} {'':22} fix: {f.fix}")
        sys.stdout.write(printable("\n".join(lines) + "\n"))
    fail = args.fail_on and any(f.severity >= severity.parse(args.fail_on) for f in findings)
    return 1 if fail else 0


def write_csv(result, path: str, trace_set) -> None:
    """findings.csv exactly as `ptprof report` writes it (README: findings.csv columns)."""
    from core.export.csv import write_findings
    from core.export.findings import wrap
    write_findings(wrap(result).findings, path, trace_set, user_path=True)  # `-`, /dev/stdout, a FIFO: in place


def _measured_line(tried, rule: str) -> str:
    """'measured -3.90 ms/step (...) by `ptprof try --fix pin_memory`' when a try measured this rule's fix."""
    if not tried:
        return ""
    from core.tryfix.store import measured_for_rule, measured_text
    hit = measured_for_rule(tried, rule)
    return f"{measured_text(hit[1])} by `ptprof try --fix {hit[0]}`" if hit else ""


def format_table(result, metrics=(), checks=(), tried=None) -> str:
    s = result.summary
    traces = s.get("traces", s["ranks"])
    files = f" in {traces} trace files" if traces != s["ranks"] else ""
    from core.analysis.headline import fixes_text, step_text
    from core.analysis.vocab import one_off_text
    step = step_text(s)
    lines = [f"{s['trace']}",
             f"  {units.count(s['steps'], 'step')}{', ' + step if step else ''}, {units.count(s['ranks'], 'rank')}"
             f"{files}; {units.count(len(result.findings), 'finding')} in {s['analysis_s']:.2f} s"]
    if fixes_text(s):
        lines.append(f"  {fixes_text(s)}")
    lines.extend(f"  warning: {w}" for w in s.get("warnings", ()))
    lines.extend(f"  {h['severity']}: {h['message']}" for h in checks if h["severity"] != "info")
    from core.analysis.metrics import format_metrics
    lines.extend(format_metrics(metrics))
    lines.append("")
    if result.findings:
        from core.analysis import vocab
        pad = f"  {'':8} {'':22} {'':>11} {'':>5} {'':>12} {'':>5} {'':>5}  "
        lines.append(f"  {'SEVERITY':8} {'RULE':22} {'LOST / STEP':>11} {'%':>5} {'SAVES / STEP':>12} {'%':>5} "
                     f"{'COUNT':>5}  TITLE")
        lines.append(f"  ({vocab.LOST}: the {vocab.STATISTIC} per profiled step; {vocab.SAVES}: the "
                     f"{vocab.SAVES_STATISTIC}; %: {vocab.OF_MEAN}"
                     + (f" = {units.fmt_ns(s['mean_step_ns'])}" if s.get("mean_step_ns") else "") + ")")
        for f in result.findings:
            lost = "one-off" if f.one_off else units.fmt_ns(vocab.lost_per_step_ns(f))
            # under a microsecond per step the fix would not change the step: "≈ 0", as in the app
            saves = "" if f.saving_ns is None else "≈ 0" if f.saving_ns < vocab.TRIVIAL_NS else units.fmt_ns(f.saving_ns)
            spct = vocab.saves_pct(f)
            spct = "" if spct is None or f.saving_ns < vocab.TRIVIAL_NS else f"{spct:.1f}"
            lines.append(f"  {f.severity.label:8} {f.rule:22} {lost:>11} {vocab.lost_pct(f):5.1f} {saves:>12} "
                         f"{spct:>5} {f.count:5d}  {f.title}")
            if f.one_off:  # paid once, not every step (core/rules/per_step.py)
                lines.append(f"{pad}{one_off_text(f)} (paid once, not every step)")
            if f.source:
                lines.append(f"{pad}at {f.source}")
            lines.append(f"{pad}fix: {f.fix}")
            if f.estimate:
                lines.append(f"{pad}saving: {f.estimate}")
            measured = _measured_line(tried, f.rule)
            if measured:
                lines.append(f"{pad}{measured}")
    else:
        lines.append("  no findings")
    if result.not_run:
        lines.append("")
        lines.append("  checks not run:")
        lines.extend(f"    {n.rule}: {n.reason}" for n in result.not_run)
    return "\n".join(lines) + "\n"
