"""`ptprof try BUNDLE --fix ID[,ID...] [--runs N] [--json]` / `ptprof try BUNDLE --all`: run the recorded
script again with a finding's fix switched on at run time (core/runner/switches.py), and measure what it
saves against the recorded run, next to what the finding predicted.

Each fix runs on its own (`--all`: every fix the run's findings ask for that a switch applies, one at a
time, then all of them together), after one run of the recorded command without a switch (the baseline):
both with the recorded window moved to the end of the run, so that the steps compared ran before the profiler
ever started (core/tryfix/measure.py says why). The runs are bundles in `<BUNDLE>.tries/`; the measured saving is
stored in BUNDLE's tried.json (read back by `analyze --json` as `measured_saving_ns`). A fix that cannot
apply to this run is said in one line before anything runs, or stops its run at the second step.
Exit: 0 every fix measured (or refused, said why), 1 a run failed, 2 bad input, 130 interrupted.
JSON: {"before": PATH, "fixes": [{"fix", "after", "predicted_saving_ns", "measured_saving_ns", "ci_ns",
"p_value", "significant", "predicted_pct", "measured_pct", "basis", "steps", "step_ns", "rules", "status",
"message", "after_runs", "baseline_runs", "runs"}]} (savings positive when the step got shorter).
"""
from __future__ import annotations

import json
import signal
import sys
import time

from core import units
from core.terminal import printable


def add_arguments(p) -> None:
    p.add_argument("bundle", help="a run bundle recorded by ptprof record or the app (the BEFORE run)")
    p.add_argument("--fix", metavar="ID[,ID...]", default="",
                   help="switches (pin_memory, num_workers[=N], tf32, bf16_autocast, foreach, fused, set_to_none, "
                        "channels_last, cudnn_benchmark, compile[=MODE]) or rule ids with one; each tried on its own")
    p.add_argument("--all", action="store_true",
                   help="every fix the run's findings ask for that a switch applies, one at a time, then all together")
    p.add_argument("--runs", type=int, default=1, metavar="N",
                   help="repeat both sides N times and pool their steps (tells a small saving from noise)")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.add_argument("--no-store", action="store_true", help="do not write the result into BUNDLE/tried.json")
    p.add_argument("--no-cache", action="store_true", help="ignore and do not write the columnar cache")


def _fail(msg: str) -> int:
    print(f"ptprof: {printable(msg)}", file=sys.stderr)
    return 2


def run(args) -> int:
    from core.runner.config import ConfigError
    from core.tryfix import plan, session as ts
    if not args.fix and not args.all:
        return _fail("try: give --fix ID[,ID...] or --all")
    if args.runs < 1 or args.runs > 20:
        return _fail(f"--runs must be 1..20 (got {args.runs})")
    try:
        specs = plan.check_ids(args.fix) if args.fix else []
        before = plan.load_before(args.bundle, use_cache=not args.no_cache)
    except plan.TryError as exc:
        return _fail(str(exc))
    entries, todo = [], []
    if args.all:
        found = plan.candidates(before)
        for s in specs:
            if s not in found:
                found.append(s)
        specs = found
        if not specs:
            return _fail(f"{before.path}: none of this run's findings has a fix a runtime switch applies "
                         "(every fix needs a code change)")
    for spec in specs:  # said before anything runs
        why = plan.precheck(before, spec)
        if why:
            print(f"ptprof: {printable(why)}", file=sys.stderr)
            entries.append(ts.not_run(spec, "refused", why, before))
        else:
            todo.append(spec)
    if args.all and len(todo) > 1:
        todo.append(",".join(todo))
    if todo and not args.json:
        base = before.step_ns
        print(f"before: {before.path} ({units.fmt_ns(base)}/step)" if base else f"before: {before.path}")
    stop = []

    def on_signal(signum, frame):
        stop.append(time.monotonic())
    old = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    runs: dict[str, list] = {}
    baselines = []
    refused: dict[str, tuple[str, str]] = {}
    try:
        for planned in (ts.plan_runs(before, todo, args.runs) if todo else []):
            if stop:
                break
            if planned.spec in refused:
                continue
            try:
                cfg = ts.config_for(before, planned)
            except ConfigError as exc:
                return _fail(str(exc))
            print(f"ptprof: running {planned.label} -> {planned.out}", file=sys.stderr)
            session = ts.run_blocking(cfg, should_stop=lambda: bool(stop))
            status, message = ts.outcome(session)
            if status == "stopped" or stop:
                print("ptprof: interrupted", file=sys.stderr)
                return 130
            if status != "ok":
                print(f"ptprof: {planned.label}: {printable(message)}", file=sys.stderr)
                if planned.spec:
                    refused[planned.spec] = (status, message)
                elif status == "failed":
                    return 1
                continue
            (runs.setdefault(planned.spec, []) if planned.spec else baselines).append(session.bundle.root)
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    code = 0
    for spec in todo:
        if spec in refused:
            entries.append(ts.not_run(spec, *refused[spec], before))
            code = max(code, 1 if refused[spec][0] == "failed" else 0)
            continue
        entries.append(ts.result(before, spec, runs.get(spec, []), baselines, keep=not args.no_store,
                                 use_cache=not args.no_cache))
    if args.json:
        json.dump({"before": str(before.path), "fixes": entries}, sys.stdout)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(text(entries, table=args.all or len(entries) > 1))
    return code


def _signed(ns) -> str:
    return ("-" if ns > 0 else "+" if ns < 0 else "±") + units.fmt_ns(abs(ns))


def verdict(e: dict) -> str:
    """'predicted -4.30 ms/step (-15.0 %), measured -3.90 ms/step (-14.0 %, p = 0.004)' (savings as changes
    of the step: a saving is a minus)."""
    if e.get("predicted_saving_ns") is not None:
        pred = f"predicted {_signed(e['predicted_saving_ns'])}/step ({-(e.get('predicted_pct') or 0):+.1f} %)"
    else:
        pred = "no prediction (no finding with a what-if)"
    if e.get("measured_saving_ns") is None:
        return f"{pred}, not measured: {e.get('message', '')}"
    from core.tryfix.store import p_text
    p = e.get("p_value")
    sig = f", {p_text(p)}" if p is not None else ""
    return f"{pred}, measured {_signed(e['measured_saving_ns'])}/step ({-e['measured_pct']:+.1f} %{sig})"


def detail(e: dict) -> str:
    if e.get("measured_saving_ns") is None:
        return ""
    ci = e.get("ci_ns")
    interval = f"95 % interval of the saving {units.fmt_ns(ci[0]) if ci[0] >= 0 else '-' + units.fmt_ns(-ci[0])} .. " \
               f"{units.fmt_ns(ci[1]) if ci[1] >= 0 else '-' + units.fmt_ns(-ci[1])}" if ci else "no interval"
    sig = {True: "significant", False: "not significant", None: "cannot tell"}[e.get("significant")]
    steps = e.get("steps")
    basis = f"{steps[0]} vs {steps[1]} {e.get('basis', '')}" if steps else e.get("basis", "")
    return (f"{interval}; {sig}; {basis}"
            + (f"; {e['message']}" if e.get("message") else ""))


def text(entries: list[dict], table: bool) -> str:
    lines = []
    for e in entries:
        lines.append(f"{e['fix']}: {verdict(e)}")
        if detail(e):
            lines.append(f"  {detail(e)}")
        if e.get("after"):
            lines.append(f"  ptprof diff {e.get('baseline') or 'BEFORE'} {e['after']}")
    if table and entries:
        lines += ["", f"{'FIX':34} {'PREDICTED':>12} {'MEASURED':>12} {'INTERVAL':>24}  SIGNIFICANT"]
        for e in entries:
            pred = "" if e.get("predicted_saving_ns") is None else _signed(e["predicted_saving_ns"])
            meas = e["status"] if e.get("measured_saving_ns") is None else _signed(e["measured_saving_ns"])
            ci = e.get("ci_ns")
            interval = f"{_signed(ci[1])} .. {_signed(ci[0])}" if ci else ""
            sig = {True: "yes", False: "no", None: "-"}[e.get("significant")]
            lines.append(f"{e['fix'][:34]:34} {pred:>12} {meas:>12} {interval:>24}  {sig}")
    return "\n".join(lines) + "\n"
