"""The H200 before/after pairs' ground truth (tests/data/device/pairs and fresh, or /work/device_pairs): each
pair's rule, ptprof's predicted saving against the measured unprofiled one (`rows`, `right`), and every bundle's
measured unprofiled step (`measured`). Used by tests/core/analysis (test_critical_path, test_fresh_pairs) and
printed by bench/whatif_pairs.py and bench/step_truth.py (tests never import bench/).

For each pair: the before bundle's finding of the fixed rule -> saving_pct (share of its effective step)
and saving_ns (recorded time; / the bundle's recording inflation when events.jsonl knows it), against
the measured unprofiled saving (saving_ns is in unprofiled time when the bundle knows its inflation).
Ground truth: pairs_timing.json (`pairs.py pairs ...`: both variants in one process, 7 interleaved rounds
of 40 steps, median of the per-round savings, with the min-max range) where present; else timings.json
(one block of steps 20..200 per variant, run one after the other: drifts between the two blocks read as a
saving, e.g. item_launch 0.97 ms there, -0.22 ms (-0.76..+0.49) interleaved).
A prediction counts as right when it is within 30 % of the measured saving, or, for a saving the
interleaved rounds cannot tell from zero (their range spans 0), when it lies inside that range.
"""
from __future__ import annotations

import json
from pathlib import Path

from core.rules import analyze
from core.trace.loader import load

REPO = Path(__file__).resolve().parents[1]

# pair -> (before, after, rule whose fix the pair makes)
PAIRS = {
    "copy": ("copy_pageable", "copy_pinned", "pageable_memcpy"),
    "item_gpu": ("item_gpubound", "gemm_bf16", "host_sync"),
    "item_launch": ("item_launchbound", "launchbound", "host_sync"),
    "precision": ("mlp_fp32", "mlp_bf16", "fp32_gemm"),
    "loader": ("loader_nw0", "loader_nw4", "dataloader_bound"),
    "compile": ("compile_break", "compile_full", "graph_break"),
    "sync": ("sync_timing", "gemm_bf16", "host_sync"),
}


# bench/device_check/fresh.py: loop shapes written after the what-ifs were tuned (tests/data/device/fresh);
# rule None: the pair's fix is one no rule should ask for (cuDNN's TF32 convolutions already use tensor cores)
FRESH = {
    "log": ("tfm_log", "tfm", "host_sync"),
    "amp": ("resnet_fp32", "resnet_amp", "fp32_gemm"),
    "h2d": ("h2d_pageable", "h2d_pinned", "pageable_memcpy"),
    "graphs": ("small_eager", "small_graphed", "launch_bound"),
    "cl": ("resnet_amp", "resnet_amp_cl", "channels_last"),
    "cl_h2d": ("h2d_pinned", "h2d_pinned_cl", "channels_last"),
}


def default_dir() -> Path:
    for p in (REPO / "tests" / "data" / "device" / "pairs", Path("/work/device_pairs")):
        if (p / "timings.json").is_file():
            return p
    raise SystemExit("no pairs folder (tests/data/device/pairs or /work/device_pairs)")


def bundle(root: Path, name: str) -> Path:
    for cand in (root / name, root / "b" / name):
        if cand.is_dir():
            return cand
    raise FileNotFoundError(name)


def rows(root: Path) -> list[dict]:
    timings, inter, pairs = {}, {}, PAIRS
    if (root / "timings.json").is_file():
        timings = {r["variant"]: r["step_ms"] for r in json.loads((root / "timings.json").read_text())["results"]}
    for name in ("pairs_timing.json", "fresh_timing.json"):
        if (root / name).is_file():
            inter |= {r["pair"]: r for r in json.loads((root / name).read_text())["results"]}
    if (root / "fresh_timing.json").is_file():
        pairs = {k: v for k, v in FRESH.items() if k in inter}
    out = []
    for pair, (before, after, rule) in pairs.items():
        a = analyze(load(bundle(root, before), use_cache=False))
        hits = [f for f in a.findings if f.rule == rule and f.saving_ns is not None]
        # the pair's fix: CUDA graphs (make_graphed_callables) -> launch_bound's CUDA-graph figure
        saving_ns = sum(dict(f.savings_by_fix).get("cuda_graphs", f.saving_ns) if pair == "graphs" else f.saving_ns
                        for f in hits)
        saving_pct = sum(f.saving_pct for f in hits)
        infl = a.summary.get("recording_inflation")
        lo = hi = None
        if pair in inter:
            r = inter[pair]
            measured_ms, unprof = r["saving_ms"], r["before_ms"]
            lo, hi = r["saving_min_ms"], r["saving_max_ms"]
        else:
            measured_ms, unprof = timings[before] - timings[after], timings[before]
        measured_pct = 100.0 * measured_ms / unprof
        out.append({"pair": pair, "rule": rule, "found": bool(hits), "step_ms": a.summary["mean_step_ns"] / 1e6,
                    "unprofiled_ms": unprof, "saving_ms": saving_ns / 1e6, "range_ms": (lo, hi),
                    "sequential_ms": timings[before] - timings[after] if before in timings else measured_ms,
                    "saving_pct": saving_pct, "measured_ms": measured_ms, "measured_pct": measured_pct,
                    "severity": hits[0].severity.label if hits else "-", "inflation": infl})
    return out


def right(r: dict) -> bool:
    lo, hi = r["range_ms"]
    if abs(r["saving_ms"] - r["measured_ms"]) <= 0.3 * abs(r["measured_ms"]):  # the criterion
        return True
    # a saving the measurement cannot tell from zero (its range spans 0): right when inside the range
    return lo is not None and lo <= 0 <= hi and lo <= r["saving_ms"] <= hi


def measured(root: Path) -> dict[str, float]:
    """variant -> unprofiled ms/step; interleaved pair timings win over single blocks."""
    out: dict[str, float] = {}
    single = root / "timings.json"
    if single.is_file():
        out |= {r["variant"]: r["step_ms"] for r in json.loads(single.read_text())["results"]}
    for name in ("pairs_timing.json", "fresh_timing.json"):
        p = root / name
        if p.is_file():
            for r in json.loads(p.read_text())["results"]:
                out[r["before"]] = r["before_ms"]
                out[r["after"]] = r["after_ms"]
    return out
