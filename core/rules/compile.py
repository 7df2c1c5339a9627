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
from core.rules import compile_info as ci
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


def _wall_end_ns(ctx: RuleContext, m) -> int | None:
    """Wall-clock end of a model's window, when the trace has a wall-clock base (run bundles do)."""
    base = ctx.trace_set.base_unix_ns
    return base + m.span_ns[1] if base > 10**18 else None


def _recompiles_until(ctx: RuleContext, m) -> list[ci.Recompile]:
    """compile.json recompiles that happened before this model's window ended (all when times are unknown):
    a later trace cycle's recompile does not explain an earlier cycle."""
    end = _wall_end_ns(ctx, m)
    return [r for r in ci.recompiles(ctx.trace_set.compile_info)
            if end is None or r.t_ns is None or r.t_ns < 10**18 or r.t_ns <= end]


_BREAK_FIX = ("Remove the break: avoid data-dependent Python control flow on tensors (use torch.where / "
              "torch.cond), .item()/print()/tolist() inside the compiled function; check with "
              "torch._dynamo.explain(fn)(*args) or TORCH_LOGS=graph_breaks, then compile with fullgraph=True.")


@rule("graph_break", "torch.compile graph breaks")
def graph_break(ctx: RuleContext) -> RuleOutput:
    out = RuleOutput()
    breaks = ci.graph_breaks(ctx.trace_set.compile_info)
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
        sources = [b.source for b in breaks if b.source] or _resume_sources(m)
        ev = c.evidence(m, g)
        for b in breaks[:10]:
            ev.append({"name": f"reason: {b.reason}", "explanation": b.explanation, "count": b.count,
                       "source": b.source, "rank": m.rank})
        for src in _resume_sources(m)[:10]:
            ev.append({"name": f"break site {src}", "rank": m.rank})
        why = ""
        if breaks and breaks[0].reason:
            at = f" at {_short(breaks[0].source)}" if breaks[0].source else ""
            why = f": {breaks[0].reason}{at}"
        hints = [h for b in breaks[:3] for h in b.hints if "fundamental" not in h]
        fix = (f"torch says: {' '.join(dict.fromkeys(hints))} " if hints else "") + _BREAK_FIX
        out.findings.append(ctx.finding(
            "graph_break", i,
            title=f"Graph breaks: {per_step + 1} compiled frames {unit} ({per_step} break(s)){why}",
            count=n_breaks, impact_ns=max(int(eager), 0), time_ranges=[(int(a), int(b)) for a, b in zip(us, ue)],
            evidence=ev, source=sources[0] if sources else None, fix=fix, evidence_rows=g))
    return out


def _short(src: Source) -> str:
    return f"{src.file.rsplit('/', 1)[-1]}:{src.line}"


@rule("recompile", "torch.compile recompilations")
def recompile(ctx: RuleContext) -> RuleOutput:
    out = RuleOutput()
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
        re_mask = y > 0
        if not steps.synthetic and len(rows):
            re_mask &= steps.index_of(s.ts_ns[rows]) >= 0
        re_rows, re_x = rows[re_mask], x[re_mask]
        in_window = len(ids) > 0 and len(re_rows) > 0
        recs = _recompiles_until(ctx, m)
        if len(rows) and not len(re_rows):
            continue  # the trace shows its compiled frames and none of them was recompiled
        if not len(re_rows) and not recs:
            continue
        # failed guards of the frames this window shows ("0/0: ..." is frame 0), else every one
        shown = set(re_x.tolist())
        matched = [r for r in recs if shown & set(r.frames)] or recs
        frames = sorted({m.name(int(r)).split(": ")[-1] for r in re_rows})
        count = max(len(ids), len(frames)) if len(re_rows) else len(matched)
        if count < 1:
            continue
        ev = c.evidence(m, np.concatenate([ids, re_rows]) if in_window else re_rows)
        for r in matched[:10]:
            for reason in r.reasons[:3] or ("",):
                ev.append({"name": f"guard failed: {reason}" if reason else "recompiled",
                           "function": ci.readable_function(r.function), "source": r.source, "rank": m.rank})
        reason = next((x for r in matched for x in r.reasons if x), "")
        src = next((r.source for r in matched if r.source), None)
        why = f": {reason}" if reason else ""
        what = f"frames {', '.join(frames)}" if frames else ", ".join(sorted({ci.readable_function(r.function)
                                                                              for r in matched}))
        if in_window:
            where = "window" if steps.synthetic else "steps"
            title = f"Recompiled inside the profiled {where} ({len(ids)} compile(s), {what}){why}"
            ranges = [(int(s.ts_ns[r]), int(s.ts_ns[r] + s.dur_ns[r])) for r in ids[:50]]
        else:
            title = f"Compiled code was recompiled before the profiled window ({what}){why}"
            ranges = c.ranges_of(m, re_rows[:1])
        out.findings.append(ctx.finding(
            "recompile", i, title=title, count=count, impact_ns=compile_ns if in_window else 0,
            time_ranges=ranges, evidence=ev, source=src, fix=ci.recompile_fix(reason),
            evidence_rows=np.concatenate([ids, re_rows]), hint=not in_window))
    return out


RULES = (graph_break, recompile)
