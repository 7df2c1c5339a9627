"""Prices every finding with its what-if (core/rules/whatif.py) and the summary's "all fixes together".

Severity follows the saving where there is one (the share of the effective step it would give back,
with rules.toml [severity]'s lines): CPU time blocked while the GPU was busy saves nothing, so it is
no loss. gpu_idle stays capped (a symptom); hints stay info; a finding without a what-if keeps the
severity its rule gave. When a run bundle knows how much recording slowed the loop
(core/analysis/health.py `recording_inflation`: recorded vs unprofiled CPU step times), both replays run
the CPU side that much faster, so savings are in unprofiled time.
"""
from __future__ import annotations

import dataclasses
import logging

import numpy as np

from core.analysis.critical_path import Edit, composition, replay_input, validate
from core.rules.base import Finding, RuleContext, Severity
from core.rules.whatif import edit_for, load_whatif_config, saving_of, unprofiled_step_ns

log = logging.getLogger(__name__)


def price(ctx: RuleContext, findings: list[Finding]) -> tuple[list[Finding], dict]:
    cfg = load_whatif_config()
    inflation = _inflation(ctx)
    out: list[Finding] = []
    edits: dict[int, list[Edit]] = {}
    loader: set[int] = set()  # models whose DataLoader fix is among the edits
    for f in findings:
        m = ctx.models[f.model_index]
        if f.rule == "recompile":  # a rare, huge cost: amortised over the run, not a median over steps
            priced = _recompile(ctx, f, m, inflation)
            if priced is not None:
                out.append(priced)
                continue
        try:
            edit = edit_for(m, f, cfg, ctx)
        except Exception:  # noqa: BLE001 - a broken what-if must not lose the finding
            log.exception("what-if of %s failed", f.rule)
            edit = None
        if edit is None:
            out.append(f)
            continue
        sv = saving_of(m, edit, inflation=inflation, loader_fix=f.rule == "dataloader_bound",
                       path=getattr(ctx.trace_set, "path", None))
        estimate = sv.estimate
        by_fix = ()
        if f.rule == "launch_bound":  # which fix the number is for: compile (default) and CUDA graphs apart
            try:
                from core.rules.whatif import launch_bound_graph_edit
                g = saving_of(m, launch_bound_graph_edit(m, f, cfg, ctx), inflation=inflation)
                estimate = (f"torch.compile (default mode): {sv.saving_ns / 1e6:.2f} ms; CUDA graphs (or "
                            f"mode='reduce-overhead'): {g.saving_ns / 1e6:.2f} ms. {estimate}")
                by_fix = (("compile", sv.saving_ns), ("cuda_graphs", g.saving_ns))
            except Exception:  # noqa: BLE001
                log.exception("CUDA-graph figure of launch_bound failed")
        sev = f.severity
        if not f.hint:
            sev = ctx.severity(sv.saving_pct, sv.saving_ns)
            if f.rule == "gpu_idle":
                sev = min(sev, Severity.WARNING)
        out.append(dataclasses.replace(f, saving_ns=sv.saving_ns, saving_pct=sv.saving_pct, estimate=estimate,
                                       severity=sev, savings_by_fix=by_fix))
        edits.setdefault(f.model_index, []).append(edit)
        if f.rule == "dataloader_bound":
            loader.add(f.model_index)
    return out, _together(ctx, edits, inflation, loader)


def _together(ctx: RuleContext, edits: dict[int, list[Edit]], inflation: float | None,
              loader: set[int] = frozenset()) -> dict:
    per_model = []
    for i, m in enumerate(ctx.models):
        if not m.devices:
            continue
        rp = replay_input(m)
        if not len(rp.times):
            continue
        v = validate(m)
        entry = {"rank": m.rank, "replay_error_pct": round(v.error_pct, 3),
                 "critical_path": composition(m).mean() | {"gpu_steps": int((composition(m).path == "gpu").sum())}}
        unprofiled = unprofiled_step_ns(m, inflation)
        if unprofiled:
            entry["unprofiled_step_ns"] = unprofiled
        if i in edits:
            total = Edit()
            for e in edits[i]:
                total = total + e
            sv = saving_of(m, total, inflation=inflation, loader_fix=i in loader,
                           path=getattr(ctx.trace_set, "path", None))
            entry |= {"saving_ns": sv.saving_ns, "saving_pct": round(sv.saving_pct, 3)}
        per_model.append(entry)
    if not per_model:
        return {}
    saving = [e["saving_ns"] for e in per_model if "saving_ns" in e]
    pct = [e["saving_pct"] for e in per_model if "saving_pct" in e]
    out = {"replay": per_model,
           "all_fixes": {"saving_ns": int(np.median(saving)) if saving else 0,
                         "saving_pct": round(float(np.median(pct)), 3) if pct else 0.0,
                         "estimate": "every finding's edit applied together in one replay (median over steps)"}}
    if inflation:
        out["recording_inflation"] = round(inflation, 3)
        steps = [e["unprofiled_step_ns"] for e in per_model if "unprofiled_step_ns" in e]
        if steps:  # what the user's loop takes without the profiler (the replay, CPU side / inflation)
            out["unprofiled_step_ns"] = int(np.median(steps))
    return out


def _recompile(ctx: RuleContext, f: Finding, m, inflation) -> Finding | None:
    from core.rules.whatif_compile import amortised
    try:
        from core.rules.whatif import unprofiled_step_ns
        step = unprofiled_step_ns(m, inflation) or float(np.median(ctx.steps(f.model_index).t1_ns
                                                                   - ctx.steps(f.model_index).t0_ns))
        got = amortised(ctx, f, m, float(step))
    except Exception:  # noqa: BLE001 - a broken estimate must not lose the finding
        log.exception("recompile amortisation failed")
        return None
    if got is None:
        return None
    saving, pct, how = got
    sev = ctx.severity(pct, saving)
    return dataclasses.replace(f, saving_ns=saving, saving_pct=pct, estimate=how, severity=sev, hint=False)


def _inflation(ctx: RuleContext) -> float | None:
    try:
        from core.analysis.health import recording_inflation
    except ImportError:
        return None
    return recording_inflation(ctx.trace_set)
