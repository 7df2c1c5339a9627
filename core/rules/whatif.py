"""What-ifs: the replay edit each finding's fix makes (core.analysis.critical_path), and its saving.

Each rule's hook is its entry in `EDITS` (rule id -> edit from the finding); the rules stay unaware.

Per rule (`EDITS`), from the finding's evidence rows:
  host_sync         the syncs no longer block (the copy of the value still happens; data dependencies stay)
  sync_memcpy       the blocking cudaMemcpy calls no longer block (async from pinned memory)
  pageable_memcpy   each copy priced at pinned bandwidth (the trace's own pinned copies of that direction,
                    else resources/interconnect.toml by GPU) and its call made async
  launch_bound      torch.compile (default): pointwise kernels fused between the heavy ones, each kernel
                    left keeps one launch call; the CUDA-graph figure (one launch per run: the CPU time between
                    the end of the run's first and last launch calls leaves the CPU path) in the estimate text
  dataloader_bound  DataLoader __next__ overlapped with the previous step (its CPU time leaves the step,
                    [dataloader] handoff_ns stays per call)
  graph_break       the eager CPU time inside the broken steps' compiled frames (outside the compiled
                    graphs and compilation) removed; their GPU work stays
  recompile         the compile time inside the steps removed
  fp32_gemm         the GEMM kernels divided by the tensor-core factor of the architecture
  channels_last     the conversion kernels removed, but for each step's first NCHW -> NHWC one (the batch)
  non_contiguous_input  the copy ops (their CPU time and the GPU work they launch) removed
  zero_grad_not_none    the aten::zero_ ops removed (set_to_none)
  single_tensor_optimizer  fused estimate: the optimizer step's CPU time but the share a fused step
                    keeps removed (the per-parameter loop), the optimizer's kernels back to back
Saving = replayed step - replayed step with the edit, per step; a finding carries the median over steps,
clipped to [0, step]. Numbers: resources/whatif.toml (each with its origin).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.analysis import intervals
from core.analysis.critical_path import Edit, Replay, replay_input, simulate
from core.compat import tomllib
from core.trace import event_names
from core.trace.model import FlowKind, Kind, TraceModel

TOML = Path(__file__).resolve().parents[2] / "resources" / "whatif.toml"


def load_whatif_config() -> dict:
    try:
        with open(TOML, "rb") as fh:
            return tomllib.load(fh)
    except OSError:
        return {}


@dataclass(frozen=True, slots=True)
class Saving:
    saving_ns: int  # median over steps of the per-step saving
    saving_pct: float  # of the median effective step
    per_step_ns: np.ndarray
    estimate: str


def _rows(finding) -> np.ndarray:
    return np.asarray(finding.evidence_rows, np.int64)


def _of_kind(model: TraceModel, rows: np.ndarray, *kinds: Kind) -> np.ndarray:
    return rows[np.isin(model.slices.kind[rows], np.asarray(kinds, np.int8))] if len(rows) else rows


def _launched_inside(model: TraceModel, cut_s: np.ndarray, cut_e: np.ndarray, rp: Replay) -> np.ndarray:
    """GPU rows of the replay whose launch call lies inside the cut CPU intervals."""
    if not len(cut_s) or not len(rp.op_rows):
        return np.zeros(0, np.int64)
    us, ue = intervals.union(cut_s, cut_e)
    j = np.searchsorted(us, rp.op_launch_ns, side="right") - 1
    inside = (j >= 0) & (rp.op_launch_ns < ue[np.maximum(j, 0)])
    return rp.op_rows[inside]


def _remove_cpu(model: TraceModel, rows: np.ndarray, rp: Replay, label: str) -> Edit:
    s = model.slices
    cut_s, cut_e = intervals.union(s.ts_ns[rows], s.ts_ns[rows] + s.dur_ns[rows])
    gone = _launched_inside(model, cut_s, cut_e, rp)
    return Edit(label=label, scale_rows=gone, scale=np.zeros(len(gone)), cut_start_ns=cut_s, cut_end_ns=cut_e)


def _unblock(model, finding, rp, cfg, ctx) -> Edit:
    rows = _of_kind(model, _rows(finding), Kind.RUNTIME)
    return Edit(label="syncs no longer block", unblock_rows=rows[np.isin(rows, rp.sync_rows)])


def _pinned_bandwidth(model: TraceModel, direction: str, cfg: dict) -> tuple[float, str]:
    """Bytes per ns of pinned copies in that direction: the trace's own (median of copies >= 64 KiB),
    else resources/whatif.toml by GPU name."""
    s = model.slices
    ids = model.strings.ids_matching(lambda n: event_names.is_pinned_copy(n, direction))
    rows = s.present_rows("bytes")  # copies and sets carry bytes: no pass over every slice's bytes
    nbytes = s.at("bytes", rows)
    keep = np.isin(s.name[rows], ids) & (s.kind[rows] == Kind.MEMCPY) & (nbytes >= 65536) & (s.dur_ns[rows] > 0)
    if int(keep.sum()) >= 3:
        return float(np.median(nbytes[keep] / s.dur_ns[rows[keep]])), "this trace's pinned copies"
    names = [str(p.get("name", "")) for p in model.meta.device_properties]
    table = cfg.get("pinned_gbps", {})
    for key, gbps in table.items():
        if key != "default" and any(key.lower() in n.lower() for n in names):
            return float(gbps), f"{key} pinned bandwidth (resources/whatif.toml)"
    return float(table.get("default", 20.0)), "default pinned bandwidth (resources/whatif.toml)"


def _pageable(model, finding, rp, cfg, ctx) -> Edit:
    s = model.slices
    rows = _rows(finding)
    copies = _of_kind(model, rows, Kind.MEMCPY)
    scale = np.ones(len(copies))
    how = ""
    for direction in ("HtoD", "DtoH"):
        sel = np.array(["" if direction not in model.name(int(r)) else direction for r in copies]) == direction
        if not sel.any():
            continue
        bw, how = _pinned_bandwidth(model, direction, cfg)
        pinned_ns = np.maximum(s.at("bytes", copies[sel]), 0) / max(bw, 1e-9)
        scale[sel] = np.minimum(pinned_ns / np.maximum(s.dur_ns[copies[sel]], 1), 1.0)
    calls = _of_kind(model, rows, Kind.RUNTIME)
    return Edit(label=f"copies at pinned bandwidth ({how}), async", scale_rows=copies, scale=scale,
                unblock_rows=calls[np.isin(calls, rp.sync_rows)])


def _launch_bound(model, finding, rp, cfg, ctx) -> Edit:
    """The run fused or captured in a CUDA graph (the fix the finding suggests): one launch instead of one
    per kernel - the CPU time from the end of the run's first launch call to the end of its last leaves
    the CPU path - and the kernels back to back. Keeping every launch on the CPU path (kernels merely
    'back to back') cannot save anything in a launch-bound run: no kernel can start before its launch."""
    rows = set(_rows(finding).tolist())
    runs = []
    if ctx is not None:
        from core.rules.gpu_time import launch_runs
        runs = [r for r in launch_runs(ctx, finding.model_index) if int(r.kernels[0]) in rows]
    if not runs:
        return Edit()
    s, f = model.slices, model.flows
    launch = f.kind == FlowKind.LAUNCH
    call_of = np.full(len(s), -1, np.int64)
    call_of[f.dst[launch]] = f.src[launch]
    chain, group, cut_s, cut_e = [], [], [], []
    for gid, run in enumerate(runs):
        chain.append(run.kernels)
        group.append(np.full(len(run.kernels), gid, np.int64))
        calls = call_of[run.kernels]
        calls = calls[calls >= 0]
        if len(calls) > 1:
            ends = s.ts_ns[calls] + s.dur_ns[calls]
            cut_s.append(int(ends.min()))
            cut_e.append(int(ends.max()))
    return Edit(label="run fused / one CUDA graph launch, kernels back to back", chain_rows=np.concatenate(chain),
                chain_group=np.concatenate(group), cut_start_ns=np.asarray(cut_s, np.int64),
                cut_end_ns=np.asarray(cut_e, np.int64))


_HEAVY = ("gemm", "conv", "cutlass", "cublas", "xmma", "nvjet", "cudnn", "flash", "fmha", "attention", "sm80_",
          "sm90_", "sm100_", "reduce", "softmax", "norm", "nccl", "memcpy", "memset")


def _launch_bound_compiled(model, finding, rp, cfg, ctx) -> Edit:
    """torch.compile (default mode): Inductor fuses the pointwise kernels between two GEMM / conv / reduction
    kernels into one, but every kernel left is still launched on its own (H100: a launch-bound eager MLP kept
    ~80 short kernels a step compiled; the one-CUDA-graph figure predicted 2.81 ms for a measured 1.65 ms).
    Per run: kernels left = its heavy kernels + one per group of pointwise ones between them; the run's launch
    CPU time is cut but for one launch call (the run's median) per kernel left; kernels back to back."""
    graph = _launch_bound(model, finding, rp, cfg, ctx)
    if not len(graph.chain_rows):
        return graph
    s, f = model.slices, model.flows
    launch = f.kind == FlowKind.LAUNCH
    call_of = np.full(len(s), -1, np.int64)
    call_of[f.dst[launch]] = f.src[launch]
    cut_s, cut_e, left_total = [], [], 0
    for gid in np.unique(graph.chain_group).tolist():
        kern = graph.chain_rows[graph.chain_group == gid]
        heavy = np.array([any(w in model.name(int(k)).lower() for w in _HEAVY) for k in kern], bool)
        groups = int(((~heavy) & np.concatenate([[True], heavy[:-1]])).sum())
        left = int(heavy.sum()) + groups
        calls = call_of[kern]
        calls = calls[calls >= 0]
        if len(calls) < 2:
            continue
        ends = s.ts_ns[calls] + s.dur_ns[calls]
        per_launch = float(np.median(s.dur_ns[calls]))
        c0, c1 = int(ends.min()), int(ends.max() - max(left - 1, 0) * per_launch)
        if c1 > c0:
            cut_s.append(c0)
            cut_e.append(c1)
        left_total += left
    return Edit(label=f"torch.compile (default mode): pointwise kernels fused, {left_total} kernel launches left",
                chain_rows=graph.chain_rows, chain_group=graph.chain_group,
                cut_start_ns=np.asarray(cut_s, np.int64), cut_end_ns=np.asarray(cut_e, np.int64))


def launch_bound_graph_edit(model, finding, cfg, ctx=None) -> Edit:
    """The CUDA-graph figure of a launch_bound finding (one launch per run)."""
    return _launch_bound(model, finding, replay_input(model), cfg, ctx)


def _dataloader(model, finding, rp, cfg, ctx) -> Edit:
    s = model.slices
    rows = _of_kind(model, _rows(finding), Kind.CPU_OP, Kind.ANNOTATION, Kind.OTHER, Kind.PYTHON)
    handoff = int(cfg.get("dataloader", {}).get("handoff_ns", 100_000))
    t0 = s.ts_ns[rows] + np.minimum(s.dur_ns[rows], handoff)
    t1 = s.ts_ns[rows] + s.dur_ns[rows]
    return Edit(label="loading overlapped with the previous step", cut_start_ns=t0, cut_end_ns=t1)


def _graph_break(model, finding, rp, cfg, ctx) -> Edit:
    """The eager time inside the compiled frames of the broken steps (what graph_break bills: the regions
    minus the compiled graphs' calls and compile time) leaves the CPU path; their GPU work stays."""
    from core.rules import common as c
    s = model.slices
    rows = _of_kind(model, _rows(finding), Kind.ANNOTATION, Kind.CPU_OP, Kind.OTHER)
    if not len(rows):
        return Edit()
    us, ue = intervals.union(s.ts_ns[rows], s.ts_ns[rows] + s.dur_ns[rows])
    graphs = c.rows_with_names(model, "compiled-graph-calls", event_names.is_compiled_graph_call)
    cw0, cw1 = c.compile_windows(model)
    gs, ge = intervals.union(np.concatenate([s.ts_ns[graphs], cw0]),
                             np.concatenate([s.ts_ns[graphs] + s.dur_ns[graphs], cw1]))
    es, ee = intervals.subtract(us, ue, gs, ge) if len(gs) else (us, ue)
    # launch calls inside the eager code stay (the compiled graph launches that work too)
    return Edit(label="eager code between compiled graphs removed", cut_start_ns=es, cut_end_ns=ee)


def _recompile(model, finding, rp, cfg, ctx) -> Edit:
    from core.rules.common import compile_windows
    w0, w1 = compile_windows(model)
    return Edit(label="compile time removed", cut_start_ns=np.asarray(w0, np.int64), cut_end_ns=np.asarray(w1, np.int64))


def tensor_core_factor(model: TraceModel, cfg: dict) -> tuple[float, str]:
    table = cfg.get("tensor_core_factor", {})
    for p in model.meta.device_properties:
        cc = f"sm_{p.get('computeMajor', '')}{p.get('computeMinor', '')}"
        if cc in table:
            return float(table[cc]), cc
    return float(table.get("default", 4.0)), "default"


def _fp32(model, finding, rp, cfg, ctx) -> Edit:
    rows = _of_kind(model, _rows(finding), Kind.KERNEL)
    factor, arch = tensor_core_factor(model, cfg)
    return Edit(label=f"GEMMs / {factor:g} (tensor cores, {arch})", scale_rows=rows,
                scale=np.full(len(rows), 1.0 / factor))


def _channels_last(model, finding, rp, cfg, ctx) -> Edit:
    """The conversion kernels removed, except each step's first NCHW -> NHWC conversion: the batch itself
    still has to be converted once (`x.to(memory_format=torch.channels_last)`, a copy of the same size).
    Without that, the H200 two-conv loop (tests/data/device/fresh h2d_pinned) was promised 1.75 ms for a
    measured 0.97 ms: its input conversion is most of the conversion time."""
    rows = _of_kind(model, _rows(finding), Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET)
    keep = np.zeros(len(rows), bool)
    if len(rows) and len(rp.op_rows):
        order = np.argsort(rp.op_rows)
        pos = np.searchsorted(rp.op_rows, rows, sorter=order)
        pos = np.minimum(pos, len(order) - 1)
        known = rp.op_rows[order[pos]] == rows
        step = np.where(known, rp.op_step[order[pos]], -1)
        to_nhwc = np.array(["nchwtonhwc" in model.name(int(r)).lower() for r in rows], bool)
        ts = model.slices.ts_ns[rows]
        for st in np.unique(step[known & to_nhwc]):
            cand = np.flatnonzero(known & to_nhwc & (step == st))
            keep[cand[np.argmin(ts[cand])]] = True
    rows = rows[~keep]
    label = "conversion kernels removed (the input's first conversion kept)" if keep.any() else \
        "conversion kernels removed"
    return Edit(label=label, scale_rows=rows, scale=np.zeros(len(rows)))


def _remove_ops(label: str):
    def edit(model, finding, rp, cfg, ctx) -> Edit:
        rows = _of_kind(model, _rows(finding), Kind.CPU_OP)
        if finding.rule == "zero_grad_not_none":
            rows = rows[np.array([model.name(int(r)) in ("aten::zero_", "aten::_foreach_zero_") for r in rows],
                                 bool)] if len(rows) else rows
            # with the gradients None, backward's AccumulateGrad takes the new gradient instead of adding it
            # into the zeroed one: its aten::add_ goes too (H100 zero_none: 96 adds a step, most of the saving)
            rows = np.concatenate([rows, _accumulate_adds(model)])
        else:  # the copies, not the ops that asked for them
            rows = rows[np.array([model.name(int(r)) in ("aten::clone", "aten::contiguous", "aten::copy_")
                                  for r in rows], bool)] if len(rows) else rows
        return _remove_cpu(model, rows, rp, label)
    return edit


def _accumulate_adds(model: TraceModel) -> np.ndarray:
    """aten::add_ ops directly under torch::autograd::AccumulateGrad (backward adding into an existing .grad)."""
    from core.rules import common as c
    adds = c.rows_with_names(model, "aten::add_", c.exact("aten::add_"), [Kind.CPU_OP])
    if not len(adds):
        return adds
    par = c.parents(model)[adds]
    acc = c.name_ids(model, "accumulate-grad", c.exact("torch::autograd::AccumulateGrad"))
    ok = par >= 0
    ok[ok] = np.isin(model.slices.name[par[ok]], acc)
    return adds[ok]


def _fused_optimizer(model, finding, rp, cfg, ctx) -> Edit:
    """Fused / multi-tensor step: the per-parameter Python loop leaves the CPU path - each optimizer step's
    CPU time but the share a fused step keeps ([optimizer] fused_cpu_share) - and the optimizer's kernels
    run back to back. Cutting only the launch calls (the first what-if) predicted 5.8 ms for a measured
    27.1 ms (H100, Adam foreach=False -> fused, 300 parameter tensors): the loop's own CPU time stayed."""
    s = model.slices
    rows = _rows(finding)
    kern = _of_kind(model, rows, Kind.KERNEL)
    ann = _of_kind(model, rows, Kind.ANNOTATION)
    keep = float(cfg.get("optimizer", {}).get("fused_cpu_share", 0.08))
    a0, a1 = s.ts_ns[ann], s.ts_ns[ann] + s.dur_ns[ann]
    cut_s = a0 + (keep * (a1 - a0)).astype(np.int64)
    a_step = np.searchsorted(a0, s.ts_ns[kern], side="right") - 1 if len(ann) else np.zeros(len(kern), np.int64)
    return Edit(label=f"fused optimizer step: the per-parameter loop's CPU time out (a fused step keeps "
                      f"{100 * keep:.0f} %), kernels back to back", cut_start_ns=cut_s, cut_end_ns=a1,
                chain_rows=kern, chain_group=np.maximum(a_step, 0).astype(np.int64))


EDITS = {
    "host_sync": _unblock,
    "sync_memcpy": _unblock,
    "pageable_memcpy": _pageable,
    "launch_bound": _launch_bound_compiled,
    "dataloader_bound": _dataloader,
    "graph_break": _graph_break,
    "recompile": _recompile,
    "fp32_gemm": _fp32,
    "channels_last": _channels_last,
    "non_contiguous_input": _remove_ops("layout copies removed"),
    "zero_grad_not_none": _remove_ops("zero-fills removed (set_to_none)"),
    "single_tensor_optimizer": _fused_optimizer,
}


def edit_for(model: TraceModel, finding, cfg: dict, ctx=None) -> Edit | None:
    """The replay edit of a finding's fix; None when its rule has no what-if (hints, memory, multi-rank)."""
    fn = EDITS.get(finding.rule)
    if fn is None or finding.hint or not model.devices:
        return None
    return fn(model, finding, replay_input(model), cfg, ctx)


def saving_of(model: TraceModel, edit: Edit, inflation: float | None = None, *, loader_fix: bool = False,
              path: str | None = None) -> Saving:
    """Per-step saving of an edit: replayed step - replayed step with the edit, in unprofiled time when the
    bundle knows its recording inflation (> 1: both replays run the CPU side that much faster; the GPU side as
    recorded), both held at the DataLoader workers' period (core.analysis.unprofiled) - after the fix, at the
    period the fixed loader delivers (`loader_fix`, whatif_data.py). The finding carries the mean over the
    window (periodic stalls are the cost; a median over steps dropped them). A per-event overhead model (the
    profiler's cost per recorded op) was tried and matched the H200 pairs worse (README of tests/data/device)."""
    from core.analysis import unprofiled
    floor = unprofiled.data_period_ns(model)
    base = unprofiled.steps_ns(model, inflation, floor=floor)
    how = ""
    after_floor = floor
    if loader_fix:
        from core.rules.whatif_data import period_after_fix
        after_floor, how = period_after_fix(model, path)
    edited = unprofiled.steps_ns(model, inflation, edit, floor=after_floor)
    per_step = np.clip(base - edited, 0, base).astype(np.int64)
    # a loop the workers pace: the mean (its periodic stalls are the cost); else the median over steps (robust
    # to one odd step: the mean lost 0.5 ms of the measured 3.5 ms on the H200 CUDA-graphs pair)
    stat = np.mean if floor or loader_fix else np.median
    step = float(stat(base)) if len(base) else 0.0
    if stat is np.mean:  # the window's mean against the mean: the workers' period holds over a round, not per step
        mean = min(max(step - float(edited.mean()), 0.0), step) if len(edited) else 0.0
    else:
        mean = float(np.median(per_step)) if len(per_step) else 0.0
    pct = 100.0 * mean / step if step > 0 else 0.0
    total = int(per_step.sum())
    where = (f"unprofiled replay (CPU side / {inflation:.2f}: this run's recorded vs unprofiled steps)"
             if inflation and inflation > 1.0 else "replay")
    paced = f"; {how}" if how else ("; the DataLoader workers pace the loop (a batch every "
                                    f"{_ms(floor)})" if floor else "")
    return Saving(int(mean), pct, per_step, f"{where} with {edit.label}: step {_ms(step)} -> {_ms(step - mean)} "
                                           f"({'mean' if stat is np.mean else 'median'} of {len(per_step)} steps; {_ms(total)} over the window)"
                                           f"{paced}")


def unprofiled_step_ns(model: TraceModel, inflation: float | None) -> int | None:
    """The step the loop would take without the profiler (core.analysis.unprofiled): the mean replayed step
    with the CPU side 1 / inflation faster, held at the DataLoader workers' period. None without steps, or
    without a known inflation > 1 on a loop the workers do not pace."""
    from core.analysis import unprofiled
    return unprofiled.unprofiled_step_ns(model, inflation)


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.2f} ms"
