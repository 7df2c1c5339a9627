"""Issue 35's safety net: what a user sees of every trace (every model column, finding, saving, CSV export)
is the same as the golden digests in tests/data/equivalence35*.json (tests/equivalence.py writes them).

A change that is meant to change what a user sees (a finding's title, a fixed saving) regenerates them with
`python tests/equivalence.py --write` (and `--shared` with PTPROF_SHARED_TRACES set) and the reviewer reads
`git diff tests/data/equivalence35*.json` (docs/testing.md). A refactor regenerates nothing.
"""
from __future__ import annotations

import json
import os

import equivalence as eq
import pytest

GOLDEN = json.loads(eq.GOLDEN.read_text())
_ALL = os.environ.get("PTPROF_EQUIV_ALL") == "1"
LOCAL = [u for u in eq.units(eq.DATA) if _ALL or eq.unit_bytes(u) <= eq.SMALL_BYTES]


def _check(unit, root, golden: dict) -> None:
    key = eq.key_of(unit, root)
    assert key in golden, (f"{key} is not in the golden file: run `python tests/equivalence.py --write` "
                           "(a new trace in tests/data) and commit the file")
    diff = eq.differences(golden[key], eq.digest(unit))
    assert not diff, (f"{key}: {len(diff)} difference(s) from the golden digest (a user would see other "
                      "numbers); if the change is meant, regenerate: `python tests/equivalence.py --write`\n  "
                      + "\n  ".join(diff[:40]))


def test_small_traces_are_most_of_the_data():
    """The default run covers the small traces (PTPROF_EQUIV_ALL=1 all of them): a fast run still checks
    every kind of input (bundles, multi-rank folders, single files, an OOM bundle without a trace)."""
    keys = {eq.key_of(u, eq.DATA) for u in LOCAL}
    assert len(keys) >= 40
    assert {"bundles/c1", "traces/gpu_ddp2", "multi/straggler" if _ALL else "bundles/oom_a_batch_doubles",
            "device/try/mlp.tries/compile-reduce-overhead", "cpu_flops.pt.trace.json.gz"} <= keys
    # every unit of tests/data has its golden digest (a new trace needs `python tests/equivalence.py --write`)
    assert {eq.key_of(u, eq.DATA) for u in eq.units(eq.DATA)} == set(GOLDEN)


@pytest.mark.parametrize("unit", LOCAL, ids=[eq.key_of(u, eq.DATA) for u in LOCAL])
def test_same_as_golden(unit):
    _check(unit, eq.DATA, GOLDEN)


def test_shared_traces_same_as_golden():
    root = eq.shared_root()
    if root is None:
        pytest.skip("PTPROF_SHARED_TRACES is not set (or not a folder): the shared traces' digests are "
                    "checked only where they are")
    golden = json.loads(eq.GOLDEN_SHARED.read_text())
    local_names = {eq.key_of(u, eq.DATA).removeprefix("traces/") for u in eq.units(eq.DATA)}
    units = [u for u in eq.units(root) if eq.key_of(u, root) not in local_names or _ALL]  # tests/data/traces
    if not units:  # holds copies of the small ones: checked above
        pytest.skip(f"no trace in {root} beyond the copies in tests/data/traces")
    for unit in units:
        _check(unit, root, golden)


def test_a_changed_number_is_reported():
    """The comparison names what changed (not only 'differs'): a reviewer reads it in the failure."""
    key = "bundles/s1"
    got = json.loads(json.dumps(GOLDEN[key]))
    got["findings"][0]["saving_ns"] = (got["findings"][0]["saving_ns"] or 0) + 1
    got["models"][0]["slices"]["dur_ns"] = "0" * 16
    diff = eq.differences(GOLDEN[key], got)
    assert len(diff) == 2
    assert diff[0].startswith("findings[0].saving_ns: ")
    assert diff[1].startswith("models[0].slices.dur_ns: ")


def test_a_new_order_is_one_line():
    """A new sort key reorders findings: the comparison says so once, then compares each with its match."""
    key = next(k for k, v in GOLDEN.items() if len(v.get("findings", ())) >= 3)
    got = json.loads(json.dumps(GOLDEN[key]))
    got["findings"].reverse()
    diff = eq.differences(GOLDEN[key], got)
    assert diff == [f"findings: the same {len(got['findings'])} findings in another order"]
