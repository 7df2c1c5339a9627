"""What-if savings against the H200 before/after pairs, measured unprofiled with both variants interleaved in one
process (tests/pairs_truth.py): the pairs the what-ifs were tuned on (tests/data/device/pairs, bench/device_pairs,
pairs_timing.json) and loops written after that (tests/data/device/fresh, bench/device_check/fresh.py,
fresh_timing.json); and the unprofiled step estimate against every H200 bundle with a measured unprofiled step."""
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


@pytest.fixture(scope="module")
def pair_rows():
    return {r["pair"]: r for r in pairs_truth.rows(DEVICE / "pairs")}


def _rows(request, folder: str) -> dict:
    return request.getfixturevalue("pair_rows" if folder == "pairs" else "fresh_rows")


# pairs: copy, precision, loader, sync, item_gpu, compile; fresh: pageable -> pinned H2D, eager -> CUDA graphs,
# NCHW -> channels_last (two loops)
@pytest.mark.parametrize("folder, pair", [("pairs", p) for p in ("copy", "precision", "loader", "sync", "item_gpu",
                                                                 "compile")]
                         + [("fresh", p) for p in ("h2d", "graphs", "cl", "cl_h2d")])
def test_pairs_within_30_percent_of_the_measured_saving(request, folder, pair):
    r = _rows(request, folder)[pair]
    assert r["found"]
    assert abs(r["saving_ms"] - r["measured_ms"]) <= 0.3 * r["measured_ms"], r


# pairs item_launch: two loss.item() in a launch-bound loop, -0.22 ms (-0.76..+0.49) over 7 interleaved rounds;
# fresh log: 15 interleaved rounds could not tell the saving from zero (-1.27..+2.54 ms): ptprof's 0.66 ms inside
@pytest.mark.parametrize("folder, pair, max_pct", [("pairs", "item_launch", 2.0), ("fresh", "log", 10.0)])
def test_a_saving_the_measurement_cannot_tell_from_zero_is_predicted_inside_its_range(request, folder, pair,
                                                                                      max_pct):
    r = _rows(request, folder)[pair]
    lo, hi = r["range_ms"]
    assert lo < 0 < hi and lo <= r["saving_ms"] <= hi and r["saving_pct"] < max_pct, r


def test_pairs_small_savings_stay_small(pair_rows):
    # removing a sync from a GPU-bound loop: measured 1.5 %; the old cost called it most of the step
    for pair in ("item_gpu", "sync"):
        assert pair_rows[pair]["saving_pct"] < 5.0 and pair_rows[pair]["severity"] == "info"


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
