"""STYLE.md's naming rules where issue 35 item 4 applied them (census: tests/names_census.py). A ratchet on the
modules it cleaned: no one-letter names in long functions beyond the project's two table idioms
(`s = model.slices`, a rule's `for i, m in enumerate(ctx.models)`) and no more paired start / end names than
when they were measured; and core/ passes no step windows as 4-tuples."""
from __future__ import annotations

import names_census as census

CLEANED = ("core/analysis/critical_path.py", "core/analysis/flops.py", "core/rules/gpu_time.py", "core/rules/compile.py",
           "core/analysis/step_times.py", "core/analysis/steps.py", "core/analysis/breakdown.py",
           "core/analysis/stats.py", "core/analysis/health.py")
# measured in CLEANED after the Intervals / StepWindows work: per-op / per-row start and end columns and a
# window's scalar (t0, t1), none an interval set (those are Intervals)
MAX_INTERVAL_PAIRS = 13


def test_cleaned_modules_name_what_their_variables_hold():
    rows = census.table([census.REPO / path for path in CLEANED])
    left = {path: c["other"] for path, c in rows.items() if c["other"]}
    assert not left, f"one-letter names in functions over {census.LONG} lines (python tests/names_census.py): {left}"


def test_no_new_interval_pairs_in_the_cleaned_modules():
    rows = census.table([census.REPO / path for path in CLEANED])
    pairs = sum(c["interval_pairs"] for c in rows.values())
    assert pairs <= MAX_INTERVAL_PAIRS, f"{pairs} paired start / end names (use Intervals): " + str(
        {path: c["interval_pairs"] for path, c in rows.items() if c["interval_pairs"]})


def test_no_step_window_tuples_in_core():
    rows = census.table([census.REPO / "core"])
    tuples = {path: c["window_4tuples"] for path, c in rows.items() if c["window_4tuples"]}
    assert not tuples, f"step windows passed as (number, t0, t1, synthetic) tuples, use StepWindows: {tuples}"


def test_census_counts_what_it_says(tmp_path):
    source = tmp_path / "sample.py"
    body = "\n".join(f"    v{k} = {k}" for k in range(30))
    source.write_text(
        "def long(model, ctx):\n"
        "    s = model.slices\n"
        "    for i, m in enumerate(ctx.models):\n"
        "        pass\n"
        "    x = 1\n"
        "    us, ue = union(a, b)\n"
        "    number, t0, t1, synthetic = step_windows(model)\n"
        f"{body}\n"
        "    return [y for y in range(3)]\n")
    c = census.census(source)
    assert c["one_letter"] == 4 and c["idiom"] == 3 and c["other"] == 1  # s, i, m idioms; x; y not counted
    assert c["interval_pairs"] == 2  # (us, ue) and (t0, t1)
    assert c["window_4tuples"] == 1
