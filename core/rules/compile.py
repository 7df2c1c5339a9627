"""graph_break and recompile from `Torch-Compiled Region: X/Y` ranges and compile events.

X is the compiled frame (each graph break creates a resume frame with a new X), Y its recompilation
count. Several distinct X in one step = graph breaks (a fullgraph model with one region per step is
clean whatever X is). Y > 0 = the frame was recompiled; compile events (`entire_frame_compile`,
`compile_id=X/Y`, `(dynamo_timed)`) inside a step = it recompiled inside the window. The runner's
compile.json (graph_breaks / recompiles with reasons and user frames) adds the reasons when present.
"""
from __future__ import annotations

import re

import numpy as np

from core.analysis import intervals
from core.rules import common as c
from core.rules.base import RuleContext, RuleOutput, Source, rule

_REGION = re.compile(r"^Torch-Compiled Region: (\d+)/(\d+)$")
_RESUME = re.compile(r"^(.+?)\((\d+)\): torch_dynamo_resume_in_(\w+?)_at_(\d+)$")


def _regions(m) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, X, Y) of compiled-region ranges."""
    ids = c.name_ids(m, "compiled-region", lambda n: n.startswith("Torch-Compiled Region: "))
    if not len(ids):
        z = np.zeros(0, np.int64)
        return z, z, z
    xy = {int(i): _REGION.match(m.strings[int(i)]) for i in ids}
    rows = np.flatnonzero(np.isin(m.slices.name, ids))
    x = np.array([int(xy[int(n)].group(1)) if xy[int(n)] else -1 for n in m.slices.name[rows]], np.int64)
    y = np.array([int(xy[int(n)].group(2)) if xy[int(n)] else -1 for n in m.slices.name[rows]], np.int64)
    return rows, x, y


def _resume_sources(m) -> list[Source]:
    """Graph-break sites from resume frames `file.py(L): torch_dynamo_resume_in_<fn>_at_<line>`."""
    out = []
    for sid in c.name_ids(m, "resume-frames", lambda n: "torch_dynamo_resume_in_" in n).tolist():
        mt = _RESUME.match(m.strings[sid])
        if mt:
            out.append(Source(mt.group(1), int(mt.group(4)), mt.group(3)))
    return sorted(set(out), key=lambda s: (s.file, s.line))


def _compile_json(ctx: RuleContext, key: str) -> list[dict]:
    info = ctx.trace_set.compile_info
    if not isinstance(info, dict):
        return []
    items = info.get(key)
    return [d for d in items if isinstance(d, dict)] if isinstance(items, list) else []


def _src_from(d: dict | None) -> Source | None:
    if not isinstance(d, dict):
        return None
    try:
        return Source(str(d.get("file", "")), int(d.get("line", 0) or 0), str(d.get("function", "")))
    except (TypeError, ValueError):
        return None


@rule("graph_break", "torch.compile graph breaks")
def graph_break(ctx: RuleContext) -> RuleOutput:
    out = RuleOutput()
    reasons = _compile_json(ctx, "graph_breaks")
    for i, m in enumerate(ctx.models):
        rows, x, _ = _regions(m)
        if not len(rows):
            continue
        s = m.slices
        steps = ctx.steps(i)
        st = steps.index_of(s.ts_ns[rows]) if not steps.synthetic else np.zeros(len(rows), np.int64)
        keep = st >= 0
        rows, x, st = rows[keep], x[keep], st[keep]
        if not len(rows):
            continue
        pairs = np.unique(np.stack([st, x], 1), axis=0)
        frames_per_step = np.bincount(pairs[:, 0], minlength=len(steps.number))
        broken = np.flatnonzero(frames_per_step >= 2)
        if not len(broken):
            continue
        sel = np.isin(st, broken)
        g = rows[sel]
        r0, r1 = s.ts_ns[g], s.ts_ns[g] + s.dur_ns[g]
        us, ue = intervals.union(r0, r1)
        graphs = c.rows_with_names(m, "compiled-graph-calls", lambda n: n.startswith("## Call CompiledFxGraph")
                                   or n == "CompiledFunction")
        cw0, cw1 = c.compile_windows(m)
        gs, ge = intervals.union(np.concatenate([s.ts_ns[graphs], cw0]),
                                 np.concatenate([s.ts_ns[graphs] + s.dur_ns[graphs], cw1]))
        inside = int((ue - us).sum())
        eager = inside - intervals.intersect_total(us, ue, gs, ge) if len(gs) else inside
        n_breaks = int((frames_per_step[broken] - 1).sum())
        per_step = int(frames_per_step[broken].max() - 1)
        unit = "in the trace" if steps.synthetic else "per step"
        sources = [src for src in (_src_from(d.get("user_frame")) for d in reasons) if src] or _resume_sources(m)
        ev = c.evidence(m, g)
        for d in reasons[:10]:
            ev.append({"name": "reason: " + str(d.get("reason", "")), "count": d.get("count", 1),
                       "source": _src_from(d.get("user_frame")), "rank": m.rank})
        for src in sources[:10]:
            ev.append({"name": f"break site {src}", "rank": m.rank})
        why = f": {reasons[0].get('reason')}" if reasons else ""
        out.findings.append(ctx.finding(
            "graph_break", i,
            title=f"Graph breaks: {per_step + 1} compiled frames {unit} ({per_step} break(s)){why}",
            count=n_breaks, impact_ns=max(int(eager), 0), time_ranges=[(int(a), int(b)) for a, b in zip(us, ue)],
            evidence=ev, source=sources[0] if sources else None,
            fix="Remove the break: avoid data-dependent Python control flow on tensors (use torch.where / "
                "torch.cond), .item()/print()/tolist() inside the compiled function; check with "
                "torch._dynamo.explain(fn)(*args) or TORCH_LOGS=graph_breaks, then compile with fullgraph=True.",
            evidence_rows=g))
    return out


@rule("recompile", "torch.compile recompilations")
def recompile(ctx: RuleContext) -> RuleOutput:
    out = RuleOutput()
    reasons = _compile_json(ctx, "recompiles")
    for i, m in enumerate(ctx.models):
        rows, x, y = _regions(m)
        s = m.slices
        steps = ctx.steps(i)
        cw0, cw1 = c.compile_windows(m)
        ids = c.rows_with_names(m, "compile-entry", lambda n: n in ("entire_frame_compile", "dynamo")
                                or n.startswith("_compile.compile_inner"))
        if len(ids) and not steps.synthetic:
            ids = ids[steps.index_of(s.ts_ns[ids]) >= 0]
        compile_ns = int(intervals.covered(cw0, cw1, steps.t0_ns, steps.t1_ns).sum()) if len(cw0) else 0
        re_rows = rows[y > 0]
        if not steps.synthetic and len(re_rows):
            re_rows = re_rows[steps.index_of(s.ts_ns[re_rows]) >= 0]
        in_window = len(ids) > 0 and len(re_rows) > 0
        if not len(re_rows) and not reasons:
            continue
        frames = sorted({m.name(int(r)).split(": ")[-1] for r in re_rows})
        ev = c.evidence(m, np.concatenate([ids, re_rows]) if in_window else re_rows)
        for d in reasons[:10]:
            ev.append({"name": "reason: " + str(d.get("reason", "")), "count": d.get("count", 1),
                       "function": d.get("function", ""), "rank": m.rank})
        src = _src_from(reasons[0]) if reasons else None
        why = f": {reasons[0].get('reason')}" if reasons else ""
        if in_window:
            where = "window" if steps.synthetic else "steps"
            title = f"Recompiled inside the profiled {where} ({len(ids)} compile(s), frames {', '.join(frames)}){why}"
            ranges = [(int(s.ts_ns[r]), int(s.ts_ns[r] + s.dur_ns[r])) for r in ids[:50]]
        else:
            title = f"Compiled frames were recompiled before the window (regions {', '.join(frames)}){why}"
            ranges = c.ranges_of(m, re_rows[:1])
        out.findings.append(ctx.finding(
            "recompile", i, title=title, count=max(len(ids), len(frames)), impact_ns=compile_ns if in_window else 0,
            time_ranges=ranges, evidence=ev, source=src,
            fix="Find the guard that failed (TORCH_LOGS=recompiles). Typical causes: a changing batch size or "
                "sequence length (mark_dynamic / pad to fixed shapes / drop_last=True), Python scalars that change "
                "each step (pass them as tensors), switching train/eval or requires_grad.",
            evidence_rows=np.concatenate([ids, re_rows]), hint=not in_window))
    return out


RULES = (graph_break, recompile)
