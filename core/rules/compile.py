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

from core.analysis.critical_path import Edit
from core.analysis.intervals import Intervals
from core.rules import common, compile_info as ci, whatif, whatif_compile
from core.rules.base import RuleContext, RuleOutput, Source, WhatIf, rule
from core.trace import event_names
from core.trace.model import Kind

_REGION = re.compile(r"^Torch-Compiled Region: (\d+)/(\d+)$")
_RESUME = re.compile(r"^(.+?)\((\d+)\): torch_dynamo_resume_in_(\w+?)_at_(\d+)$")


def _regions(m) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, X, Y) of compiled-region ranges."""
    ids = common.name_ids(m, "compiled-region", event_names.is_compiled_region)
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
    for sid in common.name_ids(m, "resume-frames", lambda n: "torch_dynamo_resume_in_" in n).tolist():
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


def _graph_break(model, finding, rp, cfg) -> Edit:
    """The eager time inside the compiled frames of the broken steps (what graph_break bills: the regions
    minus the compiled graphs' calls and compile time) leaves the CPU path; their GPU work stays."""
    s = model.slices
    rows = whatif.of_kind(model, whatif.fix_rows(finding), Kind.ANNOTATION, Kind.CPU_OP, Kind.OTHER)
    if not len(rows):
        return Edit()
    frames = Intervals.union_of(s.ts_ns[rows], s.ts_ns[rows] + s.dur_ns[rows])
    graphs = _graphs_and_compiling(model)
    eager = frames.subtract(graphs) if len(graphs) else frames
    # launch calls inside the eager code stay (the compiled graph launches that work too)
    return Edit(label="eager code between compiled graphs removed", cut_start_ns=eager.start_ns,
                cut_end_ns=eager.end_ns)


def _graphs_and_compiling(model) -> Intervals:
    """Where the compiled graphs run (their calls) or torch.compile compiles: not eager code."""
    s = model.slices
    graphs = common.rows_with_names(model, "compiled-graph-calls", event_names.is_compiled_graph_call)
    compiling = common.compile_windows(model)
    return Intervals.union_of(np.concatenate([s.ts_ns[graphs], compiling.start_ns]),
                              np.concatenate([s.ts_ns[graphs] + s.dur_ns[graphs], compiling.end_ns]))


def _recompile(model, finding, rp, cfg) -> Edit:
    compiling = common.compile_windows(model)
    return Edit(label="compile time removed", cut_start_ns=np.asarray(compiling.start_ns, np.int64),
                cut_end_ns=np.asarray(compiling.end_ns, np.int64))


@rule("graph_break", "torch.compile graph breaks",
      what_if=WhatIf(_graph_break, "the eager CPU time inside the broken steps' compiled frames (outside the "
                     "compiled graphs "
                     "and compilation) removed; their GPU work stays"), doc="""
several torch.compile frames per step (`Torch-Compiled Region: X/Y`), eager time between them, reasons from
compile.json""")
def graph_break(ctx: RuleContext) -> RuleOutput:
    out = RuleOutput()
    info = ctx.trace_set.compile_info
    breaks = ci.graph_breaks(info)
    if isinstance(info, dict) and isinstance(info.get("graph_breaks"), list) and not breaks:
        # the runner watched dynamo for the whole run and saw no graph break: several compiled frames per step
        # are separate compiled functions (a compiled loss, a second model), not breaks (issue 28: "2 breaks"
        # in both variants of a pair whose compile.json said no graph breaks and one graph)
        return out
    for i, m in enumerate(ctx.models):
        rows, frame, _ = _regions(m)
        if not len(rows):
            continue
        s = m.slices
        steps = ctx.steps(i)
        step = steps.index_of(s.ts_ns[rows]) if not steps.synthetic else np.zeros(len(rows), np.int64)
        keep = step >= 0
        rows, frame, step = rows[keep], frame[keep], step[keep]
        if not len(rows):
            continue
        pairs = np.unique(np.stack([step, frame], 1), axis=0)
        frames_per_step = np.bincount(pairs[:, 0], minlength=len(steps.number))
        broken = np.flatnonzero(frames_per_step >= 2)
        if not len(broken):
            continue
        broken_rows = rows[np.isin(step, broken)]
        frames = Intervals.union_of(s.ts_ns[broken_rows], s.ts_ns[broken_rows] + s.dur_ns[broken_rows])
        graphs = _graphs_and_compiling(m)
        inside = frames.total_ns()
        eager = inside - frames.overlap_ns(graphs) if len(graphs) else inside
        n_breaks = int((frames_per_step[broken] - 1).sum())
        per_step = int(frames_per_step[broken].max() - 1)
        unit = "in the trace" if steps.synthetic else "per step"
        sources = [brk.source for brk in breaks if brk.source] or _resume_sources(m)
        ev = common.evidence(m, broken_rows)
        facts = {}
        if breaks:
            facts["break_reasons"] = [_break_text(brk) for brk in breaks[:10]]
        if _resume_sources(m):
            facts["break_sites"] = [str(src) for src in _resume_sources(m)[:10]]
        why = ""
        if breaks and breaks[0].reason:
            at = f" at {_short(breaks[0].source)}" if breaks[0].source else ""
            why = f": {breaks[0].reason}{at}"
        hints = [hint for brk in breaks[:3] for hint in brk.hints if "fundamental" not in hint]
        fix = (f"torch says: {' '.join(dict.fromkeys(hints))} " if hints else "") + _BREAK_FIX
        # severity by the eager time one broken step pays against an ordinary step: the share of total
        # step time is diluted by compile steps lasting seconds
        per_step_eager = max(int(eager), 0) / max(len(broken), 1)
        sev = ctx.per_step_severity(i, per_step_eager) if not steps.synthetic else None
        out.findings.append(ctx.finding(
            "graph_break", i, severity=sev,
            title=f"Graph breaks: {per_step + 1} compiled frames {unit} ({per_step} break(s)){why}",
            count=n_breaks, impact_ns=max(int(eager), 0),
            time_ranges=[(int(start), int(end)) for start, end in zip(frames.start_ns, frames.end_ns)],
            evidence=ev, source=sources[0] if sources else None, fix=fix, evidence_rows=broken_rows,
            fix_rows=broken_rows, facts=facts))
    return out


def _break_text(brk: ci.GraphBreak) -> str:
    """"Data-dependent branching (2×) at /tmp/comp.py:8 (forward): Detected data-dependent branching ..."."""
    at = f" at {brk.source}" if brk.source else ""
    return f"{brk.reason} ({brk.count}×){at}" + (f": {brk.explanation}" if brk.explanation else "")


def _guard_text(rec: ci.Recompile, reason: str) -> str:
    """"tensor 'x' size mismatch at index 0. expected 64, actual 96 in forward (/tmp/comp.py:6)"."""
    at = f" ({rec.source.file}:{rec.source.line})" if rec.source else ""
    return f"{reason or 'recompiled'} in {ci.readable_function(rec.function)}{at}"


def _short(src: Source) -> str:
    return f"{src.file.rsplit('/', 1)[-1]}:{src.line}"


_COMPILE_ID = re.compile(r"compile_id=\[?(\d+)/(\d+)")
_ENTRY_NAMES = ("entire_frame_compile", "_compile.compile_inner (dynamo_timed)", "dynamo")


def _compile_attempts(model) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, X, Y) of frame compilations: one row per compile. Dynamo nests `dynamo` >
    `_compile.compile_inner` > `entire_frame_compile` for every compile, so only the first of those
    names the trace has is used (outermost when one nests in another). X/Y come from the
    `..._data: compile_id=X/Y` events inside each compile (-1 when the trace has none)."""
    s = model.slices
    rows = np.zeros(0, np.int64)
    for name in _ENTRY_NAMES:
        rows = common.rows_with_names(model, f"compile-entry:{name}", common.exact(name))
        if len(rows):
            break
    none = np.zeros(0, np.int64)
    if not len(rows):
        return rows, none, none
    top = common.outermost_chain(model, rows, np.unique(s.name[rows]))
    rows = np.unique(np.where(top >= 0, top, rows))
    frame = np.full(len(rows), -1, np.int64)
    count = np.full(len(rows), -1, np.int64)
    ids = common.name_ids(model, "compile-id", lambda n: "compile_id=" in n)
    if len(ids):
        tagged = np.flatnonzero(np.isin(s.name, ids))
        tagged = tagged[np.argsort(s.ts_ns[tagged], kind="stable")]
        order = np.argsort(s.ts_ns[rows], kind="stable")
        compile_t0, compile_t1 = s.ts_ns[rows][order], s.ts_ns[rows][order] + s.dur_ns[rows][order]
        within = np.searchsorted(compile_t0, s.ts_ns[tagged], side="right") - 1  # the compile each tag is in
        ok = ((within >= 0) & (s.ts_ns[tagged] < compile_t1[np.maximum(within, 0)])
              & (s.track[tagged] == s.track[rows][order][np.maximum(within, 0)]))
        parsed = {int(n): _COMPILE_ID.search(model.strings[int(n)]) for n in np.unique(s.name[tagged[ok]])}
        for compile_at, row in zip(within[ok].tolist(), tagged[ok].tolist()):
            match = parsed[int(s.name[row])]
            attempt = order[compile_at]
            if match and frame[attempt] < 0:  # the first tagged event inside a compile names it
                frame[attempt], count[attempt] = int(match.group(1)), int(match.group(2))
    return rows, frame, count


def _first_compile_intervals(m, rows, y) -> Intervals:
    """Where first compiles (Y == 0) run: their compile entries and any event tagged compile_id=X/0."""
    s = m.slices
    first = rows[y == 0]
    tagged = common.rows_with_names(m, "compile-id-first", lambda n: (mt := _COMPILE_ID.search(n)) is not None
                               and mt.group(2) == "0")
    sel = np.concatenate([first, tagged])
    return Intervals.union_of(s.ts_ns[sel], s.ts_ns[sel] + s.dur_ns[sel])


@rule("recompile", "torch.compile recompilations",
      what_if=WhatIf(_recompile, "the compile time inside the steps removed; a recompile in the window is a one-off "
                     "cost "
                     "amortised over the run (whatif_compile.py)", amortised=whatif_compile.amortised), doc="""
compiled frames with Y > 0, compile events inside the steps (cost = compile time)""")
def recompile(ctx: RuleContext) -> RuleOutput:
    out = RuleOutput()
    for i, m in enumerate(ctx.models):
        rows, frame, count_y = _regions(m)
        s = m.slices
        steps = ctx.steps(i)
        compiling = common.compile_windows(m)
        att, att_frame, att_y = _compile_attempts(m)
        if len(att) and not steps.synthetic:
            keep = steps.index_of(s.ts_ns[att]) >= 0
            att, att_frame, att_y = att[keep], att_frame[keep], att_y[keep]
        # Y > 0 is a recompile; an attempt without a compile_id (older torch) counts as one when the
        # compiled regions show a recompiled frame, as before
        re_att = att_y > 0
        firsts = att[att_y == 0]
        re_mask = count_y > 0
        if not steps.synthetic and len(rows):
            re_mask &= steps.index_of(s.ts_ns[rows]) >= 0
        re_rows, re_frame = rows[re_mask], frame[re_mask]
        if len(re_rows):
            re_att |= att_y < 0
        ids = att[re_att]
        # cost: compile activity inside the steps that is not a first compile
        first_compiles = _first_compile_intervals(m, att, att_y)
        billed = compiling.subtract(first_compiles) if len(compiling) else compiling
        compile_ns = int(billed.covered(steps.t0_ns, steps.t1_ns).sum()) if len(billed) else 0
        first_ns = int(first_compiles.covered(steps.t0_ns, steps.t1_ns).sum()) if len(first_compiles) else 0
        in_window = len(ids) > 0 and (len(re_rows) > 0 or bool((att_y[re_att] > 0).any()))
        recs = _recompiles_until(ctx, m)
        if len(rows) and not len(re_rows) and not in_window:
            continue  # the trace shows its compiled frames and none of them was recompiled
        if not len(re_rows) and not in_window and not recs:
            continue
        # failed guards of the frames this window shows ("0/0: ..." is frame 0), else every one
        shown = set(re_frame.tolist()) | set(att_frame[re_att].tolist())
        matched = [rec for rec in recs if shown & set(rec.frames)] or recs
        tagged = sorted({f"{x}/{y}" for x, y in zip(att_frame[re_att].tolist(), att_y[re_att].tolist()) if y > 0})
        frames = tagged or sorted({m.name(int(row)).split(": ")[-1] for row in re_rows})
        count = len(ids) if in_window else (len(frames) if len(re_rows) else len(matched))
        if count < 1:
            continue
        ev = common.evidence(m, np.concatenate([ids, re_rows]) if in_window else re_rows)
        facts = {}
        if len(firsts):  # first compiles: not recompiles, not billed
            facts.update(first_compiles=len(firsts),
                         first_compile_ids=sorted({f"{x}/0" for x in att_frame[att_y == 0].tolist()}),
                         first_compile_time_not_billed_ns=first_ns)
        if matched:
            facts["guards_failed"] = [_guard_text(rec, reason) for rec in matched[:10]
                                      for reason in rec.reasons[:3] or ("",)]
        reason = next((text for rec in matched for text in rec.reasons if text), "")
        src = next((rec.source for rec in matched if rec.source), None)
        why = f": {reason}" if reason else ""
        what = f"frames {', '.join(frames)}" if frames else ", ".join(sorted({ci.readable_function(rec.function)
                                                                              for rec in matched}))
        if in_window:
            where = "window" if steps.synthetic else "steps"
            also = (f"; plus {len(firsts)} first compile(s), {first_ns / 1e9:.2f} s, not counted" if len(firsts)
                    else "")
            title = f"Recompiled inside the profiled {where} ({len(ids)} recompile(s), {what}{also}){why}"
            ranges = [(int(s.ts_ns[row]), int(s.ts_ns[row] + s.dur_ns[row])) for row in ids[:50]]
        else:
            title = f"Compiled code was recompiled before the profiled window ({what}){why}"
            ranges = common.ranges_of(m, re_rows[:1])
        out.findings.append(ctx.finding(
            "recompile", i, title=title, count=count, impact_ns=compile_ns if in_window else 0,
            time_ranges=ranges, evidence=ev, source=src, fix=ci.recompile_fix(reason),
            evidence_rows=np.concatenate([ids, re_rows]), hint=not in_window, facts=facts))
    return out


RULES = (graph_break, recompile)
