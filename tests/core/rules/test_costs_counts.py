"""Counts and costs the review found inflated, checked against the raw events of the real traces:
one count per collective / compile, first compiles not billed as recompiles, launch-bound runs kept
inside their loop, and costs that do not add up to more than the step time."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import shared_trace

from core.rules import analyze
from core.trace.model import Kind


def _names(m, predicate) -> np.ndarray:
    ids = m.strings.ids_matching(predicate)
    return np.flatnonzero(np.isin(m.slices.name, ids))


def test_comm_bound_counts_each_collective_once(loaded):
    ts = loaded(shared_trace("gpu_ddp2"))
    result = analyze(ts)
    for i, m in enumerate(ts.models):
        # the CPU-side c10d ops are the calls; gloo:all_reduce (CPU + GPU annotation) are the same calls again
        calls = _names(m, lambda n: n == "c10d::allreduce_")
        assert len(calls) and len(_names(m, lambda n: n.startswith("gloo:"))) > len(calls)
        comm = next(f for f in result.findings if f.rule == "comm_bound" and f.model_index == i)
        assert comm.count == len(calls)
        assert len(comm.time_ranges) == len(calls)


def _compile_ids(m) -> set[tuple[int, int]]:
    """Distinct X/Y of the compile events (`..._data: compile_id=X/Y`) in a trace."""
    import re
    out = set()
    for n in np.unique(m.slices.name).tolist():
        mt = re.search(r"compile_id=(\d+)/(\d+)", m.strings[n])
        if mt:
            out.add((int(mt.group(1)), int(mt.group(2))))
    return out


@pytest.mark.parametrize("trace", ["gpu_compile_small.pt.trace.json.gz", "cpu_compile.pt.trace.json.gz"])
def test_recompile_counts_each_compile_once_and_bills_only_recompiles(loaded, trace):
    ts = loaded(shared_trace(trace))
    m = ts.primary
    ids = _compile_ids(m)
    recompiles = {i for i in ids if i[1] > 0}
    firsts = {i for i in ids if i[1] == 0}
    entries = _names(m, lambda n: n == "entire_frame_compile")
    assert len(entries) == len(ids)  # one entire_frame_compile per compile id
    rc = next(f for f in analyze(ts).findings if f.rule == "recompile")
    assert rc.count == len(recompiles)
    for x, y in recompiles:
        assert f"{x}/{y}" in rc.title
    # the bill: recompile entries' time at least, never the first compiles'
    s = m.slices
    first_ns = 0
    if firsts:
        assert f"{len(firsts)} first compile(s)" in rc.title
        ev = next(e for e in rc.evidence if e["name"].startswith("first compiles"))
        assert ev["count"] == len(firsts)
        first_ns = ev["dur_ns"]
    total_compile = int(s.dur_ns[entries].sum())
    assert rc.impact_ns < total_compile - first_ns + 0.1 * total_compile
    if trace.startswith("cpu_compile"):
        # 4 first compiles take ~6 s of the ~8.9 s of compile time: not a recompile cost
        assert first_ns > 5e9 and rc.impact_ns < 4e9 and rc.impact_pct < 50


def test_graph_break_severity_uses_the_ordinary_step(loaded):
    """gpu_compile_small: ~0.55 ms of eager time per step between the two compiled frames is ~0.1 % of a
    total dominated by the 3.9 s recompile step, but ~17 % of an ordinary ~3 ms step: a warning."""
    from core.rules.base import RuleContext, Severity
    from core.rules.config import load_config
    ts = loaded(shared_trace("gpu_compile_small.pt.trace.json.gz"))
    gb = next(f for f in analyze(ts).findings if f.rule == "graph_break")
    ctx = RuleContext(ts, load_config())
    st = ctx.steps(0)
    durs = np.sort(st.t1_ns - st.t0_ns)
    assert durs[-1] > 100 * durs[0]  # one compile step dwarfs the others
    typical = ctx.typical_step_ns(0)
    assert typical <= durs[-2]  # the compile step is not the typical one
    per_step = gb.impact_ns / gb.count
    assert gb.impact_pct < 3.0 and 100 * per_step / typical >= 3.0
    assert gb.severity >= Severity.WARNING
