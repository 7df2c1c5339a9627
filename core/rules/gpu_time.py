"""launch_bound and gpu_idle: the GPU waits for the CPU.

launch_bound: runs of >= min_run consecutive short kernels on a stream, each preceded by a GPU idle gap
at least as long as itself (launch overhead dominates), costed by the idle inside the runs and named by
the record_function range or user frame that launched them.
gpu_idle: GPU idle share of the steps above max_idle_pct, split HTA-style (core.analysis.breakdown);
its cost is the idle not already explained by dataloader_bound / host_sync (host wait + kernel wait).
"""
from __future__ import annotations

import numpy as np

from core.analysis.breakdown import idle_gaps, step_breakdown
from core.analysis.tree import ancestor_with_kind
from core.rules import common as c
from core.rules.base import CheckNotRun, RuleContext, RuleOutput, Severity, rule
from core.trace.model import FlowKind, Kind, TrackKind
from core.units import fmt_pct


MAX_KERNEL_EVIDENCE = 200  # kernels considered for the evidence list (the longest MAX_EVIDENCE are shown)


def _runs(flag: np.ndarray, min_run: int) -> list[tuple[int, int]]:
    """[start, stop) index ranges of consecutive True values at least min_run long."""
    if not len(flag):
        return []
    d = np.diff(np.concatenate([[0], flag.astype(np.int8), [0]]))
    starts, stops = np.flatnonzero(d == 1), np.flatnonzero(d == -1)
    keep = stops - starts >= min_run
    return list(zip(starts[keep].tolist(), stops[keep].tolist()))


@rule("launch_bound", "Launch-bound kernel sequences")
def launch_bound(ctx: RuleContext) -> RuleOutput:
    out = RuleOutput()
    cfg = ctx.cfg("launch_bound")
    short_ns, min_run = int(cfg.get("short_kernel_ns", 10_000)), int(cfg.get("min_run", 32))
    for i, m in enumerate(ctx.models):
        s = m.slices
        f = m.flows
        launch = f.kind == FlowKind.LAUNCH
        src_of = np.full(len(s), -1, np.int64)
        src_of[f.dst[launch]] = f.src[launch]
        groups: dict[str, dict] = {}
        for t in np.flatnonzero(m.tracks.kind == TrackKind.GPU_STREAM).tolist():
            r = m.track_rows(t)
            rows = np.arange(r.start, r.stop)
            rows = rows[s.kind[rows] == Kind.KERNEL]
            if len(rows) < min_run:
                continue
            rows = rows[np.argsort(s.ts_ns[rows], kind="stable")]
            ts, end = s.ts_ns[rows], s.ts_ns[rows] + s.dur_ns[rows]
            prev_end = np.concatenate([[ts[0]], np.maximum.accumulate(end)[:-1]])
            gap = np.maximum(ts - prev_end, 0)
            starved = (s.dur_ns[rows] < short_ns) & (gap >= s.dur_ns[rows])
            for a, b in _runs(starved, min_run):
                run = rows[a:b]
                launches = src_of[run]
                anc = ancestor_with_kind(m, launches[launches >= 0], (Kind.ANNOTATION,))
                label = ""
                if len(anc) and (anc >= 0).any():
                    names, counts = np.unique(s.name[anc[anc >= 0]], return_counts=True)
                    if counts.max() * 2 >= len(anc):  # the range that launched most of the run
                        label = m.strings[int(names[np.argmax(counts)])]
                g = groups.setdefault(label, {"kernels": [], "launches": [], "idle": 0, "ranges": []})
                g["kernels"].append(run)
                g["launches"].append(launches[launches >= 0])
                g["idle"] += int(gap[a + 1:b].sum())
                g["ranges"].append((int(ts[a]), int(end[b - 1])))
        steps = ctx.steps(i)
        for label, g in groups.items():
            k = np.concatenate(g["kernels"])
            ln = np.concatenate(g["launches"])
            if not steps.synthetic:
                inside = steps.index_of(s.ts_ns[k]) >= 0
                if not inside.any():
                    continue
            gpu_ns, cpu_ns = int(s.dur_ns[k].sum()), int(s.dur_ns[ln].sum())
            where = f" in {label}" if label else ""
            src = c.source_of(m, int(ln[0])) if len(ln) else None
            ev = c.evidence(m, k[:MAX_KERNEL_EVIDENCE])
            ev.insert(0, {"name": "summary", "kernels": len(k), "gpu_kernel_ns": gpu_ns, "cpu_launch_ns": cpu_ns,
                          "runs": len(g["ranges"]), "rank": m.rank})
            out.findings.append(ctx.finding(
                "launch_bound", i,
                title=f"Launch-bound{where}: {len(k)} short kernels (mean {gpu_ns / len(k) / 1e3:.1f} µs) with the "
                      f"GPU idle between them; CPU launch time {cpu_ns / 1e6:.2f} ms vs GPU time {gpu_ns / 1e6:.2f} ms",
                count=len(k), impact_ns=g["idle"], time_ranges=g["ranges"][:c.MAX_RANGES], evidence=ev, source=src,
                fix="Fuse the small ops: torch.compile the loop/function (or vectorise the Python loop into one "
                    "tensor op), or capture it with CUDA graphs (torch.cuda.graphs / mode='reduce-overhead'); "
                    "larger batches also amortise launch overhead.",
                evidence_rows=np.concatenate([k, ln])))
    return out


@rule("gpu_idle", "GPU idle during steps")
def gpu_idle(ctx: RuleContext) -> RuleOutput:
    out = RuleOutput()
    cfg = ctx.cfg("gpu_idle")
    max_idle = float(cfg.get("max_idle_pct", 40.0))
    kw = int(cfg.get("kernel_wait_max_ns", 30_000))
    for i, m in enumerate(ctx.models):
        b = step_breakdown(m, kw)
        if not b.has_gpu:
            out.not_run.append(CheckNotRun("gpu_idle", f"no GPU activity in the trace ({c.no_gpu_words(m)})"))
            continue
        tot = b.totals()
        dur = max(tot["dur_ns"], 1)
        idle = int(b.idle_ns.sum())
        if 100.0 * idle / dur < max_idle:
            continue
        parts = {"host wait": tot["host_wait_ns"], "kernel wait": tot["kernel_wait_ns"],
                 "sync wait": tot["sync_wait_ns"], "DataLoader": tot["dataloader_ns"], "compile": tot["compile_ns"],
                 "collectives": tot["comm_wait_ns"]}
        split = ", ".join(f"{k} {fmt_pct(100 * v / dur)}" for k, v in parts.items() if v)
        unexplained = tot["host_wait_ns"] + tot["kernel_wait_ns"]
        worst = int(np.argmax(b.idle_ns))
        gs, ge = idle_gaps(m, int(b.ts_ns[worst]), int(b.ts_ns[worst] + b.dur_ns[worst]))
        big = np.argsort(-(ge - gs))[:c.MAX_EVIDENCE]
        ev = [{"name": f"step {int(n)}", "ts_ns": int(t), "dur_ns": int(d), "idle_ns": int(x), "rank": m.rank,
               "busy_pct": round(100.0 * (c0 + c1) / max(d, 1), 1)}
              for n, t, d, x, c0, c1 in zip(b.number, b.ts_ns, b.dur_ns, b.idle_ns, b.compute_ns, b.memcpy_ns)]
        ev += [{"name": "idle gap", "ts_ns": int(gs[j]), "dur_ns": int(ge[j] - gs[j]), "rank": m.rank} for j in big]
        if parts["host wait"] >= parts["kernel wait"]:
            fix = ("The CPU does not queue work fast enough (host wait): look at the CPU ops between kernels; "
                   "use torch.compile / CUDA graphs to cut Python and launch overhead, a larger batch, and move "
                   "logging, data preparation and syncs out of the step.")
        else:
            fix = ("Many short gaps between kernels (kernel wait): the step is a long chain of small kernels; "
                   "fuse them with torch.compile or CUDA graphs and raise the batch size.")
        cap = Severity.parse(str(cfg.get("max_severity", "warning")))
        sev = min(ctx.severity(ctx.pct(i, unexplained), unexplained), cap)
        out.findings.append(ctx.finding(
            "gpu_idle", i, severity=sev, title=f"GPU idle {fmt_pct(100 * idle / dur)} of step time ({split})",
            count=len(b), impact_ns=unexplained, time_ranges=[(int(a), int(z)) for a, z in zip(gs[big], ge[big])],
            evidence=ev, source=None, fix=fix))
    return out


RULES = (launch_bound, gpu_idle)
