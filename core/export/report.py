"""report.html: one self-contained page (inline CSS, PNGs as data: URIs, no scripts, nothing fetched).

`build_html(ctx)` is pure: it returns the page text from data the writer collected. Every value is
escaped; the only links are relative ones to the CSV/PNG files written next to the page.
"""
from __future__ import annotations

import base64
import html
from dataclasses import dataclass, field

import numpy as np

from core import units
from core.analysis import vocab
from core.analysis.vocab import one_off_text
from core.export import summary
from core.export.breakdown_data import BreakdownBars
from core.export.findings import FindingsResult, as_dict, facts_text
from core.export.html_style import CSS
from core.export.tables import ExportTable
from core.terminal import printable
from core.trace.model import TraceSet

TOP_N = 15
EVIDENCE_N = 6  # evidence lines shown per finding (findings.csv has them all)
FIGURE_CAPTIONS = {
    "timeline": "CPU threads collapsed to their top levels, GPU streams one row each; dashed lines are step edges.",
    "breakdown": "Where step time goes, per step.",
    "memory": "Allocated (solid) and reserved (dashed) memory per device; shaded bands are ProfilerSteps.",
    "gpu": "NVML samples over the run; the shaded band is the profiled window.",
}


@dataclass(slots=True)
class ReportContext:
    trace_set: TraceSet
    findings: FindingsResult
    kernels: ExportTable
    ops: ExportTable
    steps: ExportTable
    breakdown: list[BreakdownBars]
    metrics: list = field(default_factory=list)  # core.analysis.metrics.RankMetrics per rank
    png: dict[str, bytes] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # figure -> reason it is missing
    files: list[str] = field(default_factory=list)  # names written next to report.html
    captions: dict[str, str] = field(default_factory=dict)  # figure -> what it shows (e.g. "busiest step 3 · ...")
    generated: str = ""  # "2026-11-29 18:00 UTC"
    health: list | None = None  # Health.to_json() items; None: checked on trace_set (a run view brings its own)


def esc(v) -> str:
    """HTML-escaped, and control / bidi-override characters from the trace shown as \\x1b, \\u202e."""
    return html.escape(printable("" if v is None else str(v)), quote=True)


def _table(head: list[str] | None, rows: list[list], num_from: int = 1, cls: str = "") -> str:
    th = "".join(f"<th{' class=num' if i >= num_from else ''}>{esc(h)}</th>" for i, h in enumerate(head or ()))
    body = "".join("<tr>" + "".join(f"<td{' class=num' if i >= num_from else ''}>{c}</td>" for i, c in enumerate(r))
                   + "</tr>" for r in rows)
    thead = f"<thead><tr>{th}</tr></thead>" if head else ""
    return f"<table class='{cls}'>{thead}<tbody>{body}</tbody></table>"


def _img(ctx: ReportContext, name: str) -> str:
    png = ctx.png.get(name)
    if png is None:
        why = ctx.skipped.get(name, "not rendered")
        return f"<p class=muted>{esc(name)}.png: {esc(why)}</p>"
    data = base64.b64encode(png).decode("ascii")
    img = f"<img alt='{esc(name)}' src='data:image/png;base64,{data}'>"
    if f"{name}.png" in ctx.files:  # full-size file next to the page
        img = f"<a href='{esc(name)}.png'>{img}</a>"
    return (f"<figure>{img}"
            f"<figcaption>{esc(' — '.join(filter(None, (ctx.captions.get(name), FIGURE_CAPTIONS.get(name)))))}"
            "</figcaption></figure>")


def _ms(us) -> str:
    return "" if us is None or (isinstance(us, float) and np.isnan(us)) else f"{float(us) / 1000:.3f}"


def _not_run(fr: FindingsResult) -> str:
    items = fr.extra.get("not_run") or []
    if not items:
        return ""
    li = "".join(f"<li><code>{esc(rule)}</code> {esc(reason)}</li>" for rule, reason in items)
    return f"<h3>Checks not run</h3><ul class='muted notrun'>{li}</ul>"


def _health(ctx: ReportContext) -> str:
    items = getattr(ctx, "health", None)
    if items is None:
        from core.analysis.health import check
        items = [h.to_json() for h in check(ctx.trace_set)]
    if not items:
        return "<p class=muted>no problems found in the trace itself</p>"
    rows = "".join(f"<li class='{esc(h['severity'])}'><b>{esc(h['severity'])}</b> <code>{esc(h['code'])}</code> "
                   f"{esc(h['message'])}</li>" for h in items)
    return f"<ul class=warnings>{rows}</ul>"


def _findings(ctx: ReportContext) -> str:
    fr = ctx.findings
    if not fr.findings:
        return f"<p class=muted>{esc(fr.note or 'no findings')}</p>" + _not_run(fr)
    t_base = 0
    cards = []
    from core.tryfix.store import measured_for_rule, measured_text, tried_for
    tried = tried_for(getattr(ctx.trace_set, "path", None))  # what `ptprof try` measured on this run
    for f in fr.findings:
        d = as_dict(f)
        sev = esc(d.get("severity") or "info")
        src = d.get("source")
        where = (f"<code>{esc(src.get('file'))}:{esc(src.get('line'))}</code> in <code>{esc(src.get('function'))}</code>"
                 if src and src.get("file") else "<span class=muted>source not known</span>")
        if src and src.get("library"):
            where = f"<code>{esc(src['library'])}</code> &larr; " + where
        ranges = d.get("time_ranges") or []
        first = (f"first at {(ranges[0][0] - t_base) / 1e6:.3f}–{(ranges[0][1] - t_base) / 1e6:.3f} ms"
                 f" ({len(ranges)} range{'s' if len(ranges) != 1 else ''})") if ranges else ""
        facts = facts_text(d.get("facts"))
        evidence = d.get("evidence") or []
        ev = "".join(f"<li title='{esc(e)}'>{esc(e)}</li>" for e in evidence[:EVIDENCE_N])
        if len(evidence) > EVIDENCE_N:
            ev += f"<li class=muted>{len(evidence) - EVIDENCE_N} more in findings.csv</li>"
        once = one_off_text(d)
        cost = (f"<b>{esc(vocab.lost_text(d))}</b>" if once else f"{vocab.LOST} <b>{esc(vocab.lost_text(d))}</b>")
        saving = ""
        if d.get("saving_ns") is not None:
            saving = (f"<div class=fmeta>{vocab.SAVES} <b>{esc(vocab.saves_text(d))}</b> · "
                      f"{esc(d.get('estimate') or '')}</div>")
        hit = measured_for_rule(tried, str(d.get("rule"))) if tried else None
        if hit:
            saving += f"<div class=fmeta><b>{esc(measured_text(hit[1]))}</b> · ptprof try --fix {esc(hit[0])}</div>"
        cards.append(
            f"<div class='finding {sev}'><div class=fhead><span class='badge {sev}'>{sev}</span> "
            + ("<span class='badge oneoff'>one-off</span> " if once else "") +
            f"<b>{esc(d.get('title'))}</b> <code class=rule>{esc(d.get('rule'))}</code></div>"
            f"<div class=fmeta>{cost} · {esc(d.get('count'))}× · {where} · {esc(first)}</div>" + saving
            + (f"<div class=facts>{esc(facts)}</div>" if facts else "")
            + (f"<ul class=evidence>{ev}</ul>" if ev else "")
            + (f"<div class=fix><b>Fix:</b> {esc(d.get('fix'))}</div>" if d.get("fix") else "") + "</div>")
    return "".join(cards) + _not_run(fr)


def _steps(ctx: ReportContext) -> str:
    st = ctx.steps
    col = {c: i for i, c in enumerate(st.columns)}
    bd = {(b.rank, int(n)): (b.categories, b.values_ns[i]) for b in ctx.breakdown for i, n in enumerate(b.steps.tolist())}
    cats = ctx.breakdown[0].categories if ctx.breakdown else ()
    # only the parts that occur (a table of zeros hides the ones that matter)
    used = [j for j in range(len(cats)) if any(b.values_ns[:, j].any() for b in ctx.breakdown if b.categories == cats)]
    gpu = any(m.devices for m in ctx.trace_set.models)
    flops = "tflops" in col and any(np.isfinite(np.asarray(st.data[col["tflops"]], dtype=float)))
    mfu = flops and any(np.isfinite(np.asarray(st.data[col["mfu_pct"]], dtype=float)))
    head = (["rank", "step", "CPU ms"] + (["GPU ms", "step ms", "bound", "GPU busy %", "kernels"] if gpu else [])
            + [f"{cats[j][0]} ms" for j in used] + (["TFLOP/s"] if flops else []) + (["MFU %"] if mfu else []))
    rows = []
    for i in range(len(st)):
        rank, step = int(st.data[col["rank"]][i]), int(st.data[col["step"]][i])
        vals = bd.get((rank, step), (cats, np.zeros(len(cats))))[1]
        gpu_cells = [_ms(st.data[col["gpu_span_us"]][i]), _ms(st.data[col["effective_us"]][i]),
                     esc(st.data[col["bound"]][i]), f"{float(st.data[col['gpu_busy_pct']][i]):.1f}",
                     esc(st.data[col["kernel_count"]][i])] if gpu else []
        rows.append([esc(rank), esc(step if step >= 0 else "whole trace"), _ms(st.data[col["dur_us"]][i])] + gpu_cells
                    + [f"{vals[j] / 1e6:.3f}" for j in used]
                    + ([_num(st.data[col["tflops"]][i], 2)] if flops else [])
                    + ([_num(st.data[col["mfu_pct"]][i], 1)] if mfu else []))
    return f"<div class=scroll>{_table(head, rows, num_from=2)}</div>"


def _num(v, digits: int) -> str:
    return "" if v is None or not np.isfinite(float(v)) else f"{float(v):.{digits}f}"


def _metrics(ctx: ReportContext) -> str:
    """Per-rank parity metrics (core.analysis.metrics; metrics.csv has every number)."""
    if not ctx.metrics:
        return "<p class=muted>no metrics</p>"
    rows = []
    for rm in ctx.metrics:
        d = rm.launch_delay_us
        queue = ", ".join(f"s{q['stream']} {q['mean']:.2f}/{q['max']}" for q in rm.queue_length)
        copies = ", ".join(f"{c['direction']} {c['memory']} {c['gbps']:.1f}" for c in rm.memcpy_gbps
                           if c["gbps"] is not None)
        rows.append([esc(rm.rank), esc(rm.device or "–"), _num(rm.tflops if rm.tflops is not None else np.nan, 2),
                     _num(rm.mfu_pct if rm.mfu_pct is not None else np.nan, 1),
                     _num(rm.overlap_pct if rm.overlap_pct is not None else np.nan, 1),
                     esc(f"{d['p50']:.1f} / {d['p95']:.1f}" if d else ""),
                     esc(rm.kernels_shorter_than_launch if d else ""), esc(queue), esc(copies)])
    note = ("<p class=muted>TFLOP/s and MFU from recorded shapes (empty without record_shapes; MFU needs a known "
            "device: resources/device_peaks.toml); overlap: communication kernel time overlapped by compute; "
            "queue: mean / max outstanding GPU operations per stream; launch delay: GPU start after the launch "
            "call ended (HTA's definitions).</p>")
    return _table(["rank", "device", "TFLOP/s", "MFU %", "comm overlap %", "launch delay p50 / p95 µs",
                   "GPU work shorter than its launch", "queue length mean/max", "memcpy GB/s"], rows, num_from=2) + note


def _top(table: ExportTable, cols: list[tuple[str, str, str]], sort_by: str, multi_rank: bool = False) -> str:
    """The TOP_N rows by `sort_by` (across ranks). cols: (column, header, format: ms | pct | int | text)."""
    idx = {c: i for i, c in enumerate(table.columns)}
    if multi_rank:
        cols = [("rank", "rank", "int")] + cols
    order = np.argsort(-np.asarray(table.data[idx[sort_by]], dtype=np.float64), kind="stable")[:TOP_N] \
        if len(table) else []
    rows = []
    for r in order:
        out = []
        for c, _, fmt in cols:
            v = table.data[idx[c]][r]
            if fmt == "ms":
                out.append(_ms(v))
            elif fmt == "pct":
                out.append(f"{float(v):.1f}")
            elif fmt == "text":
                out.append(f"<span class=name title='{esc(v)}'>{esc(v)}</span>")
            else:
                out.append(esc(v))
        rows.append(out)
    if not rows:
        return f"<p class=muted>no {esc(table.name)} in this trace</p>"
    more = f"<p class=muted>{len(table) - TOP_N} more rows in {table.name}.csv</p>" if len(table) > TOP_N else ""
    first_num = 2 if multi_rank else 1
    return _table([h for _, h, _ in cols], rows, num_from=first_num, cls="top") + more


def _memory(ctx: ReportContext) -> str:
    from core.export.plots_data import memory_peak

    peaks = memory_peak(ctx.trace_set)
    if not peaks:
        return "<p class=muted>no [memory] events: record with profile_memory=True to see memory.</p>"
    rows = []
    for p in peaks:
        total = p.get("total_bytes")
        share = f"{100 * p['peak_allocated_bytes'] / total:.1f}" if total else ""
        rows.append([esc(p["rank"]), esc("CPU" if p["device"] < 0 else f"GPU {p['device']}"),
                     esc(units.fmt_bytes(p["peak_allocated_bytes"])),
                     esc(units.fmt_bytes(p["peak_reserved_bytes"]) if p["peak_reserved_bytes"] else "–"),
                     esc(units.fmt_bytes(total) if total else ""), share, f"{p['at_ns'] / 1e6:.3f}"])
    return _table(["rank", "device", "peak allocated", "peak reserved", "device memory", "% of device", "at ms"], rows,
                  num_from=2)


def build_html(ctx: ReportContext) -> str:
    ts = ctx.trace_set
    from core.export.figures import trace_name

    name = trace_name(ts)
    meta = _table(None, [[esc(k), esc(v)] for k, v in summary.metadata(ts)], num_from=99, cls="meta")
    cards = "".join(f"<div class=card><div class=cv>{esc(v)}</div><div class=ck>{esc(k)}</div></div>"
                    for k, v in summary.headline(ts) + [("findings", str(len(ctx.findings.findings)))])
    warnings = "".join(f"<li>{esc(w)}</li>" for w in ts.all_warnings)
    files = " · ".join(f"<a href='{esc(f)}'>{esc(f)}</a>" for f in ctx.files)
    multi = len(ts.models) > 1
    kernels = _top(ctx.kernels, [("name", "kernel", "text"), ("kind", "kind", "text"), ("calls", "calls", "int"),
                                 ("total_us", "total ms", "ms"), ("mean_us", "mean ms", "ms"),
                                 ("p95_us", "p95 ms", "ms"), ("gpu_pct", "% of kind", "pct")], "total_us", multi)
    ops = _top(ctx.ops, [("name", "op", "text"), ("calls", "calls", "int"), ("host_total_us", "CPU total ms", "ms"),
                         ("host_self_us", "CPU self ms", "ms"), ("device_us", "GPU ms", "ms")], "host_total_us", multi)
    has_gpu = any(m.devices for m in ts.models) or "gpu" in ctx.png
    gpu = f"<section><h2>GPU (NVML)</h2>{_img(ctx, 'gpu')}</section>" if has_gpu else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ptprof report — {esc(name)}</title>
<style>{CSS}</style></head>
<body><main>
<header><h1>{esc(name)}</h1><p class=muted>ptprof report · generated {esc(ctx.generated)}</p></header>
<div class=cards>{cards}</div>
<section><h2>Trace</h2>{meta}{f'<ul class=warnings>{warnings}</ul>' if warnings else ''}</section>
<section><h2>Can I trust this trace?</h2>{_health(ctx)}</section>
<section><h2>Findings</h2>{_findings(ctx)}</section>
<section><h2>Step breakdown</h2>{_img(ctx, 'breakdown')}{_steps(ctx)}</section>
<section><h2>Metrics</h2><div class=scroll>{_metrics(ctx)}</div></section>
<section><h2>Timeline</h2>{_img(ctx, 'timeline')}</section>
<section><h2>Memory</h2>{_memory(ctx)}{_img(ctx, 'memory')}</section>
{gpu}
<section><h2>Top kernels</h2>{kernels}</section>
<section><h2>Top ops</h2>{ops}</section>
<footer><p>Files: {files}</p></footer>
</main></body></html>
"""
