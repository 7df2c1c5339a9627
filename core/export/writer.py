"""Write a report folder: PNGs, CSVs and report.html. A generator with progress, like the loader.

    gen = iter_write_report(trace_set, out_dir, renderer)
    for progress in gen: ...          # ExportProgress(stage, fraction); stop iterating to cancel
    result = (StopIteration value)    # ReportResult: files written, figures skipped and why

`renderer` paints figures (core.export.figures.Renderer); None writes everything but the PNGs and says
so in the page. `load_renderer()` finds the Qt renderer by module name, so core never imports Qt.
"""
from __future__ import annotations

import importlib
import logging
from collections.abc import Generator
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

from core.atomic import atomic_write, atomic_write_text
from core.export import breakdown_data, findings as findings_src, outdir, plots_data, tables, timeline_data
from core.export.csv import write_table
from core.export.figures import FIGURE_NAMES, FigureSpec, NoteFigure, Renderer, header
from core.export.report import ReportContext, build_html
from core.generators import result_of
from core.trace.model import TraceSet

log = logging.getLogger(__name__)
RENDERER_MODULE = "gui.report.renderer"  # has create() -> Renderer


@dataclass(frozen=True, slots=True)
class ExportProgress:
    stage: str  # "findings", "tables", "figures", "html"
    fraction: float  # 0..1
    detail: str = ""


@dataclass(frozen=True, slots=True)
class ReportOptions:
    spec: FigureSpec = FigureSpec()  # size / scale of every PNG; window or step for the timeline
    findings: findings_src.FindingsResult | None = None  # None: run the rules now (one model only)
    pngs: bool = True
    csvs: bool = True


@dataclass(slots=True)
class ReportResult:
    out_dir: Path
    files: list[Path] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # file -> why it was not written
    findings_note: str = ""


def load_renderer() -> tuple[Renderer | None, str]:
    """(renderer, "") or (None, why): the Qt renderer when PySide6/pyqtgraph import and a platform starts."""
    try:
        return importlib.import_module(RENDERER_MODULE).create(), ""
    except Exception as exc:  # noqa: BLE001 - missing Qt or no platform plugin: report without PNGs
        log.warning("no PNG renderer: %s", exc)
        return None, f"no PNG renderer ({type(exc).__name__}: {exc})"


def figures_for(ts: TraceSet, spec: FigureSpec) -> dict[str, object]:
    """name -> figure data (or NoteFigure); gpu only when NVML samples exist."""
    out: dict[str, object] = {"timeline": timeline_data.build(ts, spec)}
    mem = plots_data.memory(ts, spec)
    out["memory"] = mem or NoteFigure(header(ts, "memory", "no [memory] events"), replace(spec, height_px=0),
                                      "No memory events in this trace: record with profile_memory=True to see memory.")
    gpu = plots_data.gpu(ts, spec)
    if gpu is not None:
        out["gpu"] = gpu
    out["breakdown"] = breakdown_data.build(ts, spec)
    return out


def iter_write_report(ts: TraceSet, out_dir: str | Path, renderer: Renderer | None,
                      options: ReportOptions | None = None) -> Generator[ExportProgress, None, ReportResult]:
    opts = options or ReportOptions()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    outdir.claim(out)  # never over a file ptprof did not write (ExportRefused, an OSError, says which)
    result = ReportResult(out)
    yield ExportProgress("findings", 0.02, "running rules")
    fr = opts.findings if opts.findings is not None else findings_src.run_rules(ts)
    result.findings_note = fr.note
    yield ExportProgress("tables", 0.2, "kernels, ops, steps")
    kern, ops, steps_t = tables.kernels(ts), tables.ops(ts), tables.steps_table(ts)
    from core.analysis.metrics import trace_metrics
    metrics = trace_metrics(ts)
    all_tables = [kern, ops, steps_t, tables.metrics_table(ts), tables.findings_table(fr.findings, ts)]
    nv = tables.nvml(ts)
    if nv is not None:
        all_tables.append(nv)
    else:
        result.skipped["nvml.csv"] = "no NVML samples (no bundle nvml.csv or sibling *.nvml.csv)"
    if opts.csvs:
        for t in all_tables:
            result.files.append(write_table(t, out / f"{t.name}.csv"))
    png: dict[str, bytes] = {}
    skipped: dict[str, str] = {}
    captions: dict[str, str] = {}
    if opts.pngs:
        figs = figures_for(ts, opts.spec)
        captions = {"timeline": figs["timeline"].header.subtitle}  # which window was chosen
        if "gpu" not in figs:
            skipped["gpu"] = "no NVML samples in this trace set"
            result.skipped["gpu.png"] = skipped["gpu"]
        for i, (name, fig) in enumerate(figs.items()):
            yield ExportProgress("figures", 0.3 + 0.6 * i / len(figs), f"{name}.png")
            if fig is None:
                skipped[name] = "nothing to draw"
            elif renderer is None:
                skipped[name] = "no PNG renderer available (PySide6/pyqtgraph missing)"
            else:
                png[name] = renderer.render(fig)
                path = out / f"{name}.png"
                atomic_write(path, png[name])
                result.files.append(path)
            if name in skipped:
                result.skipped.setdefault(f"{name}.png", skipped[name])
    else:
        skipped = {n: "not rendered (PNG output turned off)" for n in FIGURE_NAMES}
    yield ExportProgress("html", 0.95, "report.html")
    ctx = ReportContext(trace_set=ts, findings=fr, kernels=kern, ops=ops, steps=steps_t, metrics=metrics,
                        breakdown=breakdown_data.breakdowns(ts), png=png, skipped=skipped,
                        files=[p.name for p in result.files], captions=captions,
                        generated=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                        health=getattr(ts, "health", None))  # a run view brings the run's checks
    page = out / "report.html"
    atomic_write_text(page, build_html(ctx))
    result.files.append(page)
    yield ExportProgress("done", 1.0, str(page))
    return result


def write_report(ts: TraceSet, out_dir: str | Path, renderer: Renderer | None,
                 options: ReportOptions | None = None) -> ReportResult:
    return result_of(iter_write_report(ts, out_dir, renderer, options))
