"""straggler + core.analysis.collectives on a recorded 2-rank gloo run with a planted slow rank
(bench/multi/ddp_straggler.py: rank 1 spends 30 ms per step in `load_batch` before the all-reduce)."""
from __future__ import annotations

import numpy as np
from helpers import REPO, shared_trace

from core.analysis import collectives
from core.rules import analyze
from core.trace.loader import load

STRAGGLER = REPO / "tests" / "data" / "multi" / "straggler"


def _findings(path):
    return [f for f in analyze(load(path)).findings if f.rule == "straggler"]


def test_collectives_match_across_ranks_and_name_the_last_arrival():
    ts = load(STRAGGLER)
    models = list(ts.models)
    groups = collectives.rank_groups(models)
    assert groups == [[0, 1]]
    matched = collectives.match(models, groups[0])
    assert len(matched) == 5 and set(matched.name) == {"gloo:all_reduce"} and not matched.warnings
    assert (matched.last == 1).all()  # rank 1 arrives last every time
    assert (matched.wait_ns[:, 1] == 0).all()
    assert (matched.wait_ns[:, 0] > 25e6).all()  # rank 0 waits at least most of the planted 30 ms
    # every matched pair overlaps, and the ranks leave it much closer together than they arrived
    assert (matched.arrival_ns.max(axis=1) <= matched.end_ns.min(axis=1)).all()
    assert (np.abs(matched.end_ns[:, 0] - matched.end_ns[:, 1]) < matched.wait_ns[:, 0] / 2).all()


def test_straggler_finding_names_rank_cause_and_lost_time():
    found = _findings(STRAGGLER)
    assert len(found) == 1
    f = found[0]
    assert "rank 1 is the straggler" in f.title and "load_batch" in f.title
    assert f.facts["waiting_ranks"] == [0]  # the summary line: who waited, how long
    lost = f.facts["waited_ns"][0]
    assert lost > 5 * 25e6 and f.impact_ns == lost
    assert any(e.get("role") == "what the straggler was doing" and e["name"] == "load_batch" for e in f.evidence)
    assert f.evidence_rows and f.model_index == 1 and f.time_ranges


def test_ranks_taking_turns_are_no_straggler():
    # two DDP ranks on one GPU: who arrives last alternates, waits ~1 ms
    assert _findings(shared_trace("gpu_ddp2")) == []


def test_single_rank_traces_have_no_groups():
    ts = load(shared_trace("gpu_clean.pt.trace.json.gz"))
    assert collectives.rank_groups(list(ts.models)) == []
    assert _findings(shared_trace("gpu_clean.pt.trace.json.gz")) == []
