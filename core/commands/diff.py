"""`ptprof diff A B [--json] [--csv DIR] [--markdown] [--by-shape] [--normalize-templates] [--no-cache]`.

A is the baseline, B the candidate; anything the loader opens works on either side. Exit 0, or 2 with one
line for bad input. `--json` prints `core.analysis.diff.Diff.to_json()`. `--csv DIR` never replaces a file
ptprof did not write (core.export.outdir, as `report --out`): a folder holding the user's own
steps_diff.csv is refused in one line before anything is loaded.
"""
from __future__ import annotations

import json
import sys

from core import units

TOP = 10


def add_arguments(p) -> None:
    p.add_argument("a", help="baseline: trace file, TensorBoard log dir, multi-rank dir or run bundle")
    p.add_argument("b", help="candidate, same kinds of input")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.add_argument("--markdown", action="store_true", help="a markdown summary (for a PR comment)")
    p.add_argument("--csv", metavar="DIR", help="write kernels_diff.csv, ops_diff.csv, steps_diff.csv into DIR")
    p.add_argument("--by-shape", action="store_true", help="match ops by name + input shapes")
    p.add_argument("--normalize-templates", action="store_true",
                   help="match kernels with their template arguments dropped")
    p.add_argument("--no-cache", action="store_true", help="ignore and do not write the columnar cache")


def load_pair(path_a: str, path_b: str, use_cache: bool, by_shape: bool = False):
    """Both runs: a single trace loaded whole; several trace files (ranks) as a run view, read rank by rank in
    worker processes (core/ranks/views.py: memory O(workers x rank), the same diff)."""
    return open_run(path_a, use_cache, by_shape), open_run(path_b, use_cache, by_shape)


def open_run(path: str, use_cache: bool, by_shape: bool = False):
    from core.ranks import is_multi
    if is_multi(path):
        from core.ranks.onepass import diff_view  # each rank read once, its map with its diff facts
        return diff_view(path, use_cache, by_shape)
    from core.trace.loader import load
    return load(path, use_cache=use_cache)


def _csv_problem(folder: str) -> str | None:
    from pathlib import Path

    from core.export import outdir
    from core.terminal import printable
    if not folder.strip():
        return "--csv is empty: give the folder to write the CSVs into"
    if Path(folder).exists() and not Path(folder).is_dir():
        return printable(f"--csv {folder}: exists and is not a folder")
    why = outdir.problem(folder, outdir.DIFF_NAMES)
    return printable(f"--csv {why}") if why else None


def run(args) -> int:
    if args.csv is not None:
        why = _csv_problem(args.csv)  # before the load: a refused folder costs nothing
        if why:
            print(f"ptprof: {why}", file=sys.stderr)
            return 2
    from core.ranks.findings_cache import compare_runs
    ts_a, ts_b = load_pair(args.a, args.b, not args.no_cache, args.by_shape)
    try:
        result = compare_runs(ts_a, ts_b, args.by_shape, args.normalize_templates, use_cache=not args.no_cache)
    finally:
        for ts in (ts_a, ts_b):
            if hasattr(ts, "close"):
                ts.close()
    if args.csv:
        try:
            write_csvs(result, args.csv)
        except OSError as exc:  # outdir.ExportRefused (the folder changed since the check), UnsafeOutput, disk
            from core.terminal import printable
            print(printable(f"ptprof: cannot write {args.csv}: {exc.strerror or exc}"), file=sys.stderr)
            return 2
    if args.json:
        json.dump(result.to_json(), sys.stdout)
        sys.stdout.write("\n")
    else:  # kernel / op names come from the traces: no raw control or bidi characters on the terminal
        from core.terminal import printable
        sys.stdout.write(printable(markdown(result) if args.markdown else text(result)))
    return 0


def _headline(d) -> list[str]:
    s = d.step
    return [f"A  {d.a.trace}: {units.count(d.a.steps, 'step')}, median {units.fmt_ns(d.a.median_ns)} "
            f"(p10 {units.fmt_ns(d.a.p10_ns)}, p90 {units.fmt_ns(d.a.p90_ns)}){_bound(d.a)}",
            f"B  {d.b.trace}: {units.count(d.b.steps, 'step')}, median {units.fmt_ns(d.b.median_ns)} "
            f"(p10 {units.fmt_ns(d.b.p10_ns)}, p90 {units.fmt_ns(d.b.p90_ns)}){_bound(d.b)}",
            f"step: {_signed_ns(s.delta_ns)} ({s.delta_pct:+.1f} %), {d.step.verdict()}"
            + (f" (p = {s.p_value:.3g})" if s.p_value is not None else "")]


def _bound(side) -> str:
    return f", {side.bound}-bound" if side.bound else ""


def _rank_lines(d) -> list[str]:
    """Multi-rank runs: one line per rank (its own median step, change and verdict)."""
    out = []
    for r in d.per_rank:
        s = r.step
        a = units.fmt_ns(s.a_median_ns) if len(r.a_steps_ns) else "no steps"
        b = units.fmt_ns(s.b_median_ns) if len(r.b_steps_ns) else "no steps"
        change = (f"{_signed_ns(s.delta_ns)} ({s.delta_pct:+.1f} %), " if len(r.a_steps_ns) and len(r.b_steps_ns)
                  else "")
        out.append(f"  rank {r.rank}: {a} -> {b}  {change}{s.verdict()}"
                   + (f" (p = {s.p_value:.3g})" if s.p_value is not None else ""))
    return out


def _signed_ns(ns: float) -> str:
    return ("+" if ns > 0 else "-" if ns < 0 else "±") + units.fmt_ns(abs(ns))


def text(d) -> str:
    lines = _headline(d)
    if d.per_rank:
        lines += ["per rank (median step A -> B):"] + _rank_lines(d)
    if getattr(d, "basis_note", ""):
        lines.append(f"note: {d.basis_note}")
    lines += [f"warning: {w}" for w in d.warnings]
    unit = "per step" if d.a.steps and d.b.steps else "whole trace"
    for title, rows in (("kernels", d.kernels), ("ops", d.ops)):
        changed = [r for r in rows if r.delta_ns][:TOP]
        if not changed:
            continue
        lines += ["", f"{title} (GPU time {unit}, largest change first):" if title == "kernels"
                  else f"{title} (CPU time {unit}, largest change first):"]
        for r in changed:
            mark = {"new": "+ new ", "gone": "- gone", "same": "      "}[r.status]
            lines.append(f"  {mark} {_signed_ns(r.delta_ns):>10}  {units.fmt_ns(r.a_total_ns):>9} -> "
                         f"{units.fmt_ns(r.b_total_ns):>9}  {_short(r.name)}")
    f = d.findings
    if f["fixed"] or f["new"] or f["changed"]:
        lines += ["", "findings:"]
        lines += [f"  fixed    {x['rule']}: {x['title']}" for x in f["fixed"]]
        lines += [f"  new      {x['rule']}: {x['title']}" for x in f["new"]]
        lines += [f"  changed  {x['rule']}: {units.fmt_ns(x['a_ns'])} -> {units.fmt_ns(x['b_ns'])}"
                  for x in f["changed"] if x["delta_ns"]]
    mem = d.memory
    if mem["a_peak_bytes"] is not None or mem["b_peak_bytes"] is not None:
        lines += ["", f"memory peak: {_bytes(mem['a_peak_bytes'])} -> {_bytes(mem['b_peak_bytes'])}"]
    return "\n".join(lines) + "\n"


def _bytes(n) -> str:
    return "n/a" if n is None else units.fmt_bytes(n)


def _short(name: str, width: int = 90) -> str:
    return name if len(name) <= width else name[:width - 1] + "…"


def _md_cell(text_value: str) -> str:
    return text_value.replace("|", "\\|").replace("\n", " ")


def markdown(d, gate_line: str | None = None) -> str:
    s = d.step
    lines = ["### ptprof diff", ""]
    if gate_line:
        lines += [gate_line, ""]
    lines += ["| | A (baseline) | B | Δ |", "| --- | --- | --- | --- |",
              f"| median step | {units.fmt_ns(d.a.median_ns)} | {units.fmt_ns(d.b.median_ns)} | "
              f"{_signed_ns(s.delta_ns)} ({s.delta_pct:+.1f} %), {d.step.verdict()} |",
              f"| steps | {d.a.steps} | {d.b.steps} | |"]
    if d.a.bound or d.b.bound:
        lines.append(f"| bound by | {d.a.bound or 'n/a'} | {d.b.bound or 'n/a'} | |")
    for r in d.per_rank:
        rs = r.step
        a = units.fmt_ns(rs.a_median_ns) if len(r.a_steps_ns) else "no steps"
        b = units.fmt_ns(rs.b_median_ns) if len(r.b_steps_ns) else "no steps"
        lines.append(f"| rank {r.rank} median step | {a} | {b} | {_signed_ns(rs.delta_ns)} ({rs.delta_pct:+.1f} %), "
                     f"{rs.verdict()} |")
    busy_a, busy_b = d.gpu_busy_pct
    if busy_a is not None and busy_b is not None:
        lines.append(f"| GPU busy | {busy_a:.1f} % | {busy_b:.1f} % | {busy_b - busy_a:+.1f} pt |")
    mem = d.memory
    if mem["a_peak_bytes"] is not None and mem["b_peak_bytes"] is not None:
        lines.append(f"| memory peak | {units.fmt_bytes(mem['a_peak_bytes'])} | {units.fmt_bytes(mem['b_peak_bytes'])} | "
                     f"{_signed_bytes(mem['b_peak_bytes'] - mem['a_peak_bytes'])} |")
    if getattr(d, "basis_note", ""):
        lines.append(f"> {d.basis_note}")
    lines += [f"> {w}" for w in d.warnings]
    changed = [r for r in d.kernels if r.delta_ns][:5]
    if changed:
        lines += ["", "| kernel | A | B | Δ | |", "| --- | --- | --- | --- | --- |"]
        lines += [f"| `{_md_cell(_short(r.name, 70))}` | {units.fmt_ns(r.a_total_ns)} | {units.fmt_ns(r.b_total_ns)} | "
                  f"{_signed_ns(r.delta_ns)} | {r.status} |" for r in changed]
    f = d.findings
    if f["fixed"] or f["new"]:
        lines.append("")
        lines += [f"- fixed: **{x['rule']}** {_md_cell(x['title'])}" for x in f["fixed"]]
        lines += [f"- new: **{x['rule']}** {_md_cell(x['title'])}" for x in f["new"]]
    return "\n".join(lines) + "\n"


def _signed_bytes(n: int) -> str:
    return ("+" if n > 0 else "-" if n < 0 else "±") + units.fmt_bytes(abs(n))


def write_csvs(d, out_dir: str) -> None:
    """kernels_diff.csv, ops_diff.csv (totals in µs per step, or whole trace without steps), steps_diff.csv
    (run a / b, rank: "all" for the run's steps, then each rank's own for a multi-rank run)."""
    from pathlib import Path

    from core.export import outdir
    from core.export.csv import write_table
    from core.export.tables import ExportTable
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    outdir.claim(out, outdir.DIFF_NAMES)  # never over the user's own files (ExportRefused, one line)
    columns = ("name", "status", "a_calls", "b_calls", "a_total_us", "b_total_us", "delta_us")
    for name, rows in (("kernels_diff", d.kernels), ("ops_diff", d.ops)):
        data = ([r.name for r in rows], [r.status for r in rows], [r.a_calls for r in rows], [r.b_calls for r in rows],
                [r.a_total_ns / 1e3 for r in rows], [r.b_total_ns / 1e3 for r in rows], [r.delta_ns / 1e3 for r in rows])
        write_table(ExportTable(name, columns, data), out / f"{name}.csv")
    # the run's steps (rank "all": a multi-rank step is its slowest rank), then each rank's own
    runs, ranks, index, step_us = [], [], [], []
    series = [("all", d.a_steps_ns, d.b_steps_ns)] + [(str(r.rank), r.a_steps_ns, r.b_steps_ns) for r in d.per_rank]
    for rank, a_ns, b_ns in series:
        for run, values in (("a", a_ns), ("b", b_ns)):
            runs += [run] * len(values)
            ranks += [rank] * len(values)
            index += list(range(len(values)))
            step_us += [ns / 1e3 for ns in values.tolist()]
    write_table(ExportTable("steps_diff", ("run", "rank", "index", "step_us"), (runs, ranks, index, step_us)),
                out / "steps_diff.csv")
