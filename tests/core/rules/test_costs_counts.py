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
        assert rc.facts["first_compiles"] == len(firsts)  # the summary line, not an evidence row
        assert rc.facts["first_compile_ids"] == sorted(f"{x}/0" for x, _y in firsts)
        first_ns = rc.facts["first_compile_time_not_billed_ns"]
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


def _launch_src(m) -> np.ndarray:
    from core.trace.model import FlowKind
    f = m.flows
    out = np.full(len(m.slices), -1, np.int64)
    sel = f.kind == FlowKind.LAUNCH
    out[f.dst[sel]] = f.src[sel]
    return out


def test_launch_bound_stays_inside_the_loop(loaded):
    """gpu_issues: 200 tiny `t + 1.0` kernels per step in record_function("tiny_kernel_loop"). The finding
    counts the short kernels that loop launched, its ranges stay inside the loop (not log_metrics, not the
    next step's pageable copy) and its idle is the GPU idle between them."""
    from core.analysis import intervals
    from core.analysis.steps import gpu_busy_union
    from core.analysis.tree import ancestor_with_kind
    ts = loaded(shared_trace("gpu_issues.pt.trace.json.gz"))
    m = ts.primary
    s = m.slices
    lb = [f for f in analyze(ts).findings if f.rule == "launch_bound"]
    assert len(lb) == 1 and "tiny_kernel_loop" in lb[0].title
    f = lb[0]
    # raw truth: short kernels whose launch lies inside a tiny_kernel_loop range
    k = np.flatnonzero((s.kind == Kind.KERNEL) & (s.dur_ns < 10_000))
    src = _launch_src(m)[k]
    anc = ancestor_with_kind(m, src[src >= 0], (Kind.ANNOTATION,))
    in_loop = k[src >= 0][(anc >= 0) & (s.name[np.maximum(anc, 0)] == m.strings.find("tiny_kernel_loop"))]
    assert len(in_loop) >= 1000
    assert f.count == len(in_loop)
    # every range lies inside the GPU projection of a tiny_kernel_loop range (none reaches log_metrics
    # or the next step), and no copy runs inside one
    loop_gpu = _names(m, lambda n: n == "tiny_kernel_loop")
    loop_gpu = loop_gpu[s.kind[loop_gpu] == Kind.GPU_ANNOTATION]
    ls, le = s.ts_ns[loop_gpu], s.ts_ns[loop_gpu] + s.dur_ns[loop_gpu]
    copies = np.flatnonzero(np.isin(s.kind, [Kind.MEMCPY, Kind.MEMSET]))
    for a, b in f.time_ranges:
        assert ((ls <= a) & (b <= le + 1_000)).any(), (a, b)
        assert not ((s.ts_ns[copies] >= a) & (s.ts_ns[copies] < b)).any()
    # examples come from the run itself
    rows = [e["row"] for e in f.evidence if "row" in e]
    assert rows and set(rows) <= set(in_loop.tolist())
    # cost: the GPU idle inside the ranges (each run's first gap excluded), nothing more
    bs, be = gpu_busy_union(m)
    idle = sum(int((b - a) - intervals.covered(bs, be, a, b)) for a, b in f.time_ranges)
    assert 0.9 * idle <= f.impact_ns <= idle
    assert f.impact_pct < 35  # the review's 44 % included log_metrics, a pageable copy and the next step


# Findings whose costs are disjoint slices of the step timeline: GPU idle by cause (launch-bound runs,
# syncs, copies, DataLoader, compile, collectives, the rest in gpu_idle) and the CPU blocked in syncs/copies.
# The others measure work that overlaps those by nature and are excluded: CPU op time (non_contiguous_input,
# zero_grad_not_none, zeros_then_overwrite, single_tensor_optimizer, allocator_churn, graph_break's eager
# time, which is also the host wait it causes) and GPU kernel time (fp32_gemm, channels_last); memory
# findings cost nothing (impact 0).
DISJOINT = {"gpu_idle", "launch_bound", "host_sync", "pageable_memcpy", "sync_memcpy", "dataloader_bound",
            "recompile", "comm_bound"}
ALL_TRACES = ["gpu_issues.pt.trace.json.gz", "gpu_clean.pt.trace.json.gz", "gpu_dataloader.pt.trace.json.gz",
              "gpu_memory.pt.trace.json.gz", "gpu_compile_small.pt.trace.json.gz", "gpu_minimal_opts.pt.trace.json.gz",
              "cpu_train.pt.trace.json.gz", "cpu_compile.pt.trace.json.gz", "gpu_ddp2", "gpu_gpt_big.pt.trace.json.gz"]


@pytest.mark.parametrize("trace", ALL_TRACES)
def test_disjoint_costs_do_not_exceed_step_time(loaded, trace):
    ts = loaded(shared_trace(trace))
    result = analyze(ts)
    from core.rules.base import RuleContext
    from core.rules.config import load_config
    ctx = RuleContext(ts, load_config())
    for i in range(len(ts.models)):
        total = ctx.steps(i).total_ns
        mine = [f for f in result.findings if f.model_index == i and not f.hint]
        disjoint = sum(f.impact_ns for f in mine if f.rule in DISJOINT)
        assert disjoint <= total, {f.rule: f.impact_ns for f in mine}


def test_idle_split_follows_hta(loaded):
    """HTA's idle time breakdown: an idle gap is host wait when the next kernel's runtime call started after
    the previous kernel ended. Computed here by hand on gpu_issues (HTA itself reports host wait 99 %, kernel
    wait 1 % on this trace); the breakdown and gpu_idle must agree."""
    from core.analysis.breakdown import step_breakdown
    ts = loaded(shared_trace("gpu_issues.pt.trace.json.gz"))
    m = ts.primary
    s = m.slices
    src = _launch_src(m)
    host = kern = 0
    for stream in np.unique(s.track[s.kind == Kind.KERNEL]):
        k = np.flatnonzero((s.kind == Kind.KERNEL) & (s.track == stream))
        k = k[np.argsort(s.ts_ns[k])]
        prev_end = (s.ts_ns[k] + s.dur_ns[k])[:-1]
        gap = s.ts_ns[k][1:] - prev_end
        launch = s.ts_ns[np.maximum(src[k[1:]], 0)]
        is_host = (src[k[1:]] >= 0) & (launch > prev_end)
        host += int(gap[is_host & (gap > 0)].sum())
        kern += int(gap[~is_host & (gap > 0)].sum())
    assert host > 10 * kern  # by hand: host wait dominates, like HTA's 99 %
    b = step_breakdown(m).totals()
    assert b["host_wait_ns"] > 10 * b["kernel_wait_ns"]
    idle = next(f for f in analyze(ts).findings if f.rule == "gpu_idle")
    assert "host wait" in idle.fix and "kernel wait" not in idle.fix
    # gpu_idle's cost excludes what launch_bound already bills
    lb = next(f for f in analyze(ts).findings if f.rule == "launch_bound")
    assert idle.impact_ns + lb.impact_ns <= b["host_wait_ns"] + b["kernel_wait_ns"] + b["other_idle_ns"]


def test_cpu_boolean_mask_indexing_is_a_sync_hint(loaded):
    """cpu_train: `x[mask]` is aten::index with an aten::nonzero child (3 steps); it is reported as
    boolean-mask indexing, apart from the plain nonzero().tolist() calls."""
    ts = loaded(shared_trace("cpu_train.pt.trace.json.gz"))
    m = ts.primary
    s = m.slices
    from core.rules import common as c
    nz = _names(m, lambda n: n == "aten::nonzero")
    par = c.parents(m)
    under_index = int((s.name[np.maximum(par[nz], 0)] == m.strings.find("aten::index"))[par[nz] >= 0].sum())
    assert under_index >= 1
    syncs = [f for f in analyze(ts).findings if f.rule == "host_sync"]
    mask = [f for f in syncs if f.title.startswith("boolean-mask indexing")]
    assert len(mask) == 1 and mask[0].count == under_index and mask[0].hint
    plain = next(f for f in syncs if f.title.startswith("aten::nonzero"))
    assert plain.count == len(nz) - under_index


@pytest.mark.parametrize("trace,rule", [("gpu_memory.pt.trace.json.gz", "fp32_gemm"),
                                        ("gpu_dataloader.pt.trace.json.gz", "channels_last")])
def test_kernel_rules_name_the_launching_code(loaded, trace, rule):
    """fp32_gemm / channels_last carry the user frame of the op that launched their costliest kernel."""
    from core.rules import common as c
    ts = loaded(shared_trace(trace))
    m = ts.primary
    f = next(f for f in analyze(ts).findings if f.rule == rule)
    assert f.source is not None and f.source.file.endswith(".py") and f.source.line > 0
    rows = np.asarray(f.evidence_rows)
    k = rows[m.slices.kind[rows] == Kind.KERNEL]
    assert f.source == c.kernel_source(m, int(k[np.argmax(m.slices.dur_ns[k])]))
