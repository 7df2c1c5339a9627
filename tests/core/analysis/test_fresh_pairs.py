"""What-if savings and step times against H200 loops written after the what-ifs were tuned
(tests/data/device/fresh, bench/device_check/fresh.py; measured unprofiled in fresh_timing.json), and the
unprofiled step estimate against every H200 bundle with a measured unprofiled step."""
from __future__ import annotations

import statistics
from pathlib import Path

import pairs_truth  # tests/pairs_truth.py
import pytest

from core.rules import analyze
from core.trace.loader import load

DEVICE = Path(__file__).resolve().parents[2] / "data" / "device"
FRESH = DEVICE / "fresh"


@pytest.fixture(scope="module")
def fresh_rows():
    return {r["pair"]: r for r in pairs_truth.rows(FRESH)}


@pytest.mark.parametrize("pair", ["h2d", "graphs", "cl", "cl_h2d"])
def test_fresh_pairs_within_30_percent_of_the_measured_saving(fresh_rows, pair):
    """pageable -> pinned H2D, eager -> CUDA graphs, NCHW -> channels_last (two loops)."""
    r = fresh_rows[pair]
    assert r["found"]
    assert abs(r["saving_ms"] - r["measured_ms"]) <= 0.3 * r["measured_ms"], r


def test_logging_item_in_a_transformer_loop_is_inside_the_measured_range(fresh_rows):
    # 15 interleaved rounds could not tell the saving from zero (-1.27..+2.54 ms): ptprof's 0.66 ms lies inside
    r = fresh_rows["log"]
    lo, hi = r["range_ms"]
    assert lo < 0 < hi and lo <= r["saving_ms"] <= hi and r["saving_pct"] < 10.0, r


def test_tf32_convolutions_are_not_sold_as_fp32(fresh_rows):
    # ResNet-18 in fp32: cuDNN's convolutions already run TF32 on tensor cores, so bf16 autocast saved 0.57 ms
    # (4 %); no finding may promise more than that
    r = fresh_rows["amp"]
    assert r["saving_ms"] <= r["measured_ms"] and r["saving_pct"] < 5.0, r


def test_channels_last_what_if_keeps_the_input_conversion():
    f = next(f for f in analyze(load(FRESH / "h2d_pinned")).findings if f.rule == "channels_last")
    assert "the input's first conversion kept" in f.estimate


def test_unprofiled_step_estimate_matches_the_unprofiled_timing():
    """The replay with the CPU side / recording inflation against the same loop timed without the profiler,
    on 21 bundles. Known misses (docs/architecture.md): DataLoader workers' throughput is not in the trace
    (loader_nw4), compiled code is slowed less by recording than eager ops (compile_*)."""
    errors = {}
    for root in (DEVICE / "pairs", FRESH):
        for name, ms in pairs_truth.measured(root).items():
            s = analyze(load(root / name)).summary
            est = (s.get("unprofiled_step_ns") or s["mean_step_ns"]) / 1e6
            errors[name] = abs(est - ms) / ms
    assert len(errors) >= 20
    assert statistics.median(errors.values()) <= 0.10, errors
    eager = {k: v for k, v in errors.items() if not k.startswith(("compile_", "loader_"))}
    # misses: launchbound (-30 %) and resnet_amp_cl (-30 %): noisy inflations of 5 wait steps; small_graphed
    # (+15 %): its inflation without the optimizer source's first step, which used to be counted as recorded
    assert sum(e <= 0.12 for e in eager.values()) >= len(eager) - 3, eager


def test_analyze_headline_names_the_unprofiled_step():
    from core.commands.analyze import format_table
    text = format_table(analyze(load(FRESH / "tfm_log")))
    assert "recorded, ≈ " in text and "unprofiled" in text.splitlines()[1]
