"""Prices every finding with its rule's what-if (`Rule.what_if`, core/rules/base.py `WhatIf`; the shared
edit helpers and the saving of an edit: core/rules/whatif.py) and the summary's "all fixes together".

Severity follows the saving where there is one (the share of the effective step it would give back,
with rules.toml [severity]'s lines): CPU time blocked while the GPU was busy saves nothing, so it is
no loss. Hints stay info; a finding without a what-if (gpu_idle, a symptom, has none) keeps the
severity its rule gave. When a run bundle knows how much recording slowed the loop
(core/analysis/health.py `recording_inflation`: recorded vs unprofiled CPU step times), both replays run
the CPU side that much faster, so savings are in unprofiled time.
"""
from __future__ import annotations

import dataclasses
import logging

import numpy as np

from core.analysis.critical_path import Edit, composition, replay_input, validate
from core.analysis.health import recording_inflation
from core.rules.base import Finding, RuleContext, WhatIf
from core.rules.whatif import load_whatif_config, saving_of, unprofiled_step_ns

log = logging.getLogger(__name__)


def what_ifs() -> dict[str, WhatIf]:
    """Rule id -> its what-if (the rules that have one)."""
    from core.rules import all_rules
    return {r.id: r.what_if for r in all_rules() if getattr(r, "what_if", None) is not None}


def price(ctx: RuleContext, findings: list[Finding]) -> tuple[list[Finding], dict]:
    cfg = load_whatif_config()
    inflation = recording_inflation(ctx.trace_set)
    by_rule = what_ifs()
    out: list[Finding] = []
    edits: dict[int, list[Edit]] = {}
    loader: set[int] = set()  # models whose DataLoader fix is among the edits
    for f in findings:
        m = ctx.models[f.model_index]
        what_if = by_rule.get(f.rule)
        if what_if is not None and what_if.amortised is not None:
            # a rare, huge cost: amortised over the run, not a median over steps
            priced = _amortised(ctx, f, m, inflation, what_if)
            if priced is not None:
                out.append(priced)
                continue
        if what_if is None or f.hint or not m.devices:
            out.append(f)  # no what-if: hints, memory, multi-rank findings, CPU-only traces
            continue
        try:
            edit = what_if.edit(m, f, replay_input(m), cfg)
        except Exception:  # noqa: BLE001 - a broken what-if must not lose the finding
            log.exception("what-if of %s failed", f.rule)
            out.append(f)
            continue
        sv = saving_of(m, edit, inflation=inflation, loader_fix=what_if.loader_fix,
                       path=getattr(ctx.trace_set, "path", None))
        estimate = sv.estimate
        by_fix = ()
        if what_if.alternatives is not None:  # which fix the number is for, where the fixes differ
            try:
                estimate, by_fix = what_if.alternatives(m, f, cfg, inflation, sv)
            except Exception:  # noqa: BLE001
                log.exception("alternative fixes of %s failed", f.rule)
        sev = ctx.severity(sv.saving_pct, sv.saving_ns)
        out.append(dataclasses.replace(f, saving_ns=sv.saving_ns, saving_pct=sv.saving_pct, estimate=estimate,
                                       severity=sev, savings_by_fix=by_fix))
        edits.setdefault(f.model_index, []).append(edit)
        if what_if.loader_fix:
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
    return together(per_model, inflation)


def together(per_model: list[dict], inflation: float | None) -> dict:
    """The summary's `replay` (one entry per model), `all_fixes` (the median over the models of every edit
    applied together) and, with the recording inflation, the unprofiled step; {} without a replayed model.
    Also the many-rank reduce's, over the ranks' own entries (core/ranks/reduce.py)."""
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


def _amortised(ctx: RuleContext, f: Finding, m, inflation, what_if: WhatIf) -> Finding | None:
    try:
        step = unprofiled_step_ns(m, inflation) or float(np.median(ctx.steps(f.model_index).t1_ns
                                                                   - ctx.steps(f.model_index).t0_ns))
        got = what_if.amortised(ctx, f, m, float(step))
    except Exception:  # noqa: BLE001 - a broken estimate must not lose the finding
        log.exception("amortised saving of %s failed", f.rule)
        return None
    if got is None:
        return None
    saving, pct, how = got
    sev = ctx.severity(pct, saving)
    return dataclasses.replace(f, saving_ns=saving, saving_pct=pct, estimate=how, severity=sev, hint=False)
