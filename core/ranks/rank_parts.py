"""One rank's share of a multi-rank `ptprof report`, computed in that rank's worker (`core/ranks/views.py`
`_rank_view` calls these for the `want` keys "report" and "timeline").

`rank_report` puts the rank on the time base it is given (the rank's own: core/ranks/onepass.py) and computes
its share of every table and figure with the functions the whole-set report uses (core/export: kernels_part,
steps_part, model_memory_peak, memory_curves, timeline_data.model_piece, ...). The driver that asks for them and
gathers the run's view is core/ranks/report_parts.py `report_view`.
"""
from __future__ import annotations


def rank_report(ts, opts: dict) -> dict:
    """One rank's parts (`ts`: the rank alone, on its own clock). opts: base (the run's base_unix_ns),
    width_px, multi (the run has several models)."""
    from core.analysis.metrics import rank_metrics
    from core.export import breakdown_data, plots_data, summary, tables, timeline_data
    m = _on_run_base(ts.models[0], opts["base"])
    peaks = plots_data.model_memory_peak(m)
    width = int(opts["width_px"])
    return {"kernels": tables.kernels_part(m), "ops": tables.ops_part(m), "steps": tables.steps_part(m),
            "metrics": rank_metrics(m), "breakdown": breakdown_data.step_breakdown(m), "memory_peak": peaks,
            "memory_curves": (plots_data.memory_curves(m, peaks, width),
                              plots_data.memory_curves(m, [p for p in peaks if p["is_cuda"]], width)),
            "busiest": timeline_data.busiest_step(m), "headline": summary.primary_headline(m)}


def rank_timeline(ts, opts: dict) -> tuple:
    """One rank's piece of timeline.png in the window the primary rank chose (opts: base, v0, v1, px_ns, multi)."""
    from core.export import timeline_data
    m = _on_run_base(ts.models[0], opts["base"])
    return timeline_data.model_piece(m, opts["v0"], opts["v1"], opts["px_ns"], bool(opts["multi"]))


def _on_run_base(m, base: int):
    """The model shifted as core.trace.loader.assemble shifts it into the run."""
    from core.trace.loader import shift_model
    delta = m.meta.base_unix_ns - base if m.meta.base_unix_ns and base else 0
    return shift_model(m, delta) if delta else m
