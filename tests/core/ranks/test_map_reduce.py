"""Map / reduce over ranks (core/ranks) gives the findings of the whole-set path (core.rules.analyze)."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from helpers import REPO, shared_trace

from core.ranks import analyze_run, is_multi
from core.ranks.executor import InProcess, LocalPool
from core.rules import analyze
from core.trace.loader import load

ROOT = REPO
MULTI = REPO / "tests" / "data" / "multi" / "straggler"


def _gen():
    import gen_ranks  # tests/gen_ranks.py (bench/multi/gen_ranks.py runs it)
    return gen_ranks


def _key(a):
    return [(f.rule, f.title, f.severity, f.saving_ns) for f in a.findings]


def _same(old, new) -> None:
    assert _key(new) == _key(old)
    assert [(f.time_ranges, f.model_index, f.count, f.impact_ns, getattr(f, "savings_by_fix", None))
            for f in new.findings] == \
        [(f.time_ranges, f.model_index, f.count, f.impact_ns, getattr(f, "savings_by_fix", None))
         for f in old.findings]
    assert [(n.rule, n.reason) for n in new.not_run] == [(n.rule, n.reason) for n in old.not_run]
    drop = ("analysis_s",)
    assert {k: v for k, v in new.summary.items() if k not in drop} == \
        {k: v for k, v in old.summary.items() if k not in drop}


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PTPROF_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.parametrize("name", ["multi", "ddp2"])
def test_same_findings_as_the_whole_set(name, cache_dir, tmp_path):
    src = MULTI if name == "multi" else shared_trace("gpu_ddp2")
    run = tmp_path / "run"
    shutil.copytree(src, run)  # a bundle gets stored summaries: keep tests/data clean
    assert is_multi(run)
    old = analyze(load(run))
    new = analyze_run(run, InProcess())
    _same(old, new.analysis)
    assert new.mapped == 2 and len(new.summaries) == 2
    pooled = analyze_run(run, LocalPool(2), stored=False)
    _same(old, pooled.analysis)


def test_generated_run_finds_the_straggler_and_its_cause(cache_dir, tmp_path):
    gen = _gen()
    info = gen.generate(shared_trace("gpu_issues.pt.trace.json.gz"), 4, tmp_path / "run", slow=2, per_step=3)
    run = tmp_path / "run"
    old = analyze(load(run))
    ex = LocalPool(2)
    try:
        new = analyze_run(run, ex)
    finally:
        ex.close()
    _same(old, new.analysis)
    strag = [f for f in new.analysis.findings if f.rule == "straggler"]
    assert len(strag) == 1 and strag[0].title.startswith(f"[rank {info['slow_rank']}] rank {info['slow_rank']} is the")
    assert "slow_rank_data_prep" in strag[0].title
    # the collectives carry Kineto's process group + sequence number, and the reduce matched by them
    assert all(s.colls.keyed() for s in new.summaries)
    assert sorted(set(new.summaries[0].colls.seq.tolist())) == list(range(info["collectives"]))


def test_seq_matching_survives_a_dropped_collective(cache_dir, tmp_path):
    """Keyed by (process group, Seq): one rank missing an operation loses that collective only; by name + order
    every later operation of that name would pair wrongly."""
    from core.analysis.collectives import CollRows, match_rows
    names = np.asarray(["ar"] * 4)
    a = CollRows(names, np.asarray([0, 100, 200, 300]), np.full(4, 50), np.arange(4), np.asarray(["0"] * 4),
                 np.arange(4))
    b = CollRows(names[:3], np.asarray([10, 210, 310]), np.full(3, 45), np.arange(3), np.asarray(["0"] * 3),
                 np.asarray([0, 2, 3]))
    m = match_rows([a, b], [0, 1])
    assert m.by_seq and len(m) == 3 and m.warnings
    assert m.arrival_ns.tolist() == [[0, 10], [200, 210], [300, 310]]


def test_stored_summaries_make_the_second_analysis_reduce_only(cache_dir, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(MULTI, run)
    first = analyze_run(run, InProcess())
    assert first.mapped == 2
    stored = sorted((run / ".ptprof-summaries").iterdir())
    assert [p.name for p in stored] == ["rank0.cycle1.pt.trace.json.gz.rank-summary",
                                        "rank1.cycle1.pt.trace.json.gz.rank-summary"]
    second = analyze_run(run, InProcess())
    assert second.mapped == 0
    _same(first.analysis, second.analysis)
    # a stale one (its trace changed) or a broken one is mapped again, never trusted
    doc = json.loads(stored[0].read_text())
    doc["summary"]["findings"] = "junk"
    stored[0].write_text(json.dumps(doc))
    third = analyze_run(run, InProcess())
    assert third.mapped == 1
    _same(first.analysis, third.analysis)


def test_a_broken_rank_is_skipped_with_a_warning(cache_dir, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(shared_trace("gpu_ddp2"), run)
    (run / "rank2.pt.trace.json").write_text("{not json")
    ra = analyze_run(run, InProcess())
    assert any("rank2.pt.trace.json: not loaded" in w for w in ra.analysis.summary["warnings"])
    assert ra.analysis.summary["ranks"] == 2


def test_cycles_in_a_plain_folder_are_not_workers(cache_dir, tmp_path):
    run = tmp_path / "plain"
    run.mkdir()
    for p in (MULTI / "traces").iterdir():
        shutil.copy(p, run / p.name.replace("rank1", "rank0").replace("cycle1", "cycle2") if "rank1" in p.name
                    else run / p.name)
    ts = load(run)
    assert not any("share one rank" in w for w in ts.warnings)
    ra = analyze_run(run, InProcess())
    assert not any("share one rank" in w for w in ra.analysis.summary["warnings"])


def test_cli_analyze_multi_rank_json_matches(cache_dir, tmp_path, capsys):
    from core.cli import main
    run = tmp_path / "run"
    shutil.copytree(shared_trace("gpu_ddp2"), run)
    assert main(["analyze", "--json", "--workers", "2", str(run)]) == 0
    doc = json.loads(capsys.readouterr().out)
    old = analyze(load(run))
    assert [(f["rule"], f["title"]) for f in doc["findings"]] == [(f.rule, f.title) for f in old.findings]
    assert len(doc["metrics"]) == 2 and doc["health"] is not None


@pytest.mark.parametrize("name", ["multi", "ddp2", "generated"])
def test_the_window_analysis_of_a_loaded_set_is_the_same(name, cache_dir, tmp_path):
    """gui/issues: a multi-rank set in memory is analyzed rank by rank (core.ranks.inset), same findings."""
    from core.ranks.inset import iter_analyze_set
    from core.rules import analyze as whole
    if name == "generated":
        src = tmp_path / "gen"
        _gen().generate(shared_trace("gpu_issues.pt.trace.json.gz"), 3, src, slow=1, per_step=3)
    else:
        src = MULTI if name == "multi" else shared_trace("gpu_ddp2")
    ts = load(src)
    old = whole(ts)
    gen = iter_analyze_set(ts)
    fractions = []
    while True:
        try:
            fractions.append(next(gen)[0])
        except StopIteration as stop:
            new = stop.value
            break
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    _same(old, new)


def test_the_launcher_summarises_a_finished_bundle(cache_dir, tmp_path, capsys):
    """core/commands/recording.py calls this after the run (the ranks' interpreters have no ptprof analysis)."""
    from core.commands.recording import _summarise
    from core.ranks.run import summarise_bundle
    run = tmp_path / "run"
    shutil.copytree(MULTI, run)
    _summarise(run, quiet=False)
    assert "2 rank summaries written" in capsys.readouterr().err
    assert summarise_bundle(run) == 0  # all valid: nothing to do
    ra = analyze_run(run, InProcess())
    assert ra.mapped == 0 and ra.analysis.findings
    plain = tmp_path / "plain"
    shutil.copytree(shared_trace("gpu_ddp2"), plain)
    assert summarise_bundle(plain) == 0 and not (plain / ".ptprof-summaries").exists()  # not a bundle: not ours


@pytest.mark.parametrize("poison", ["fifo", "symlink", "deep", "huge", "types", "nan", "binary"])
def test_a_poisoned_stored_summary_is_mapped_again(poison, cache_dir, tmp_path):
    """A bundle's stored summaries are untrusted input: anything but a valid one of this code is a miss."""
    import os
    run = tmp_path / "run"
    shutil.copytree(MULTI, run)
    first = analyze_run(run, InProcess())
    p = sorted((run / ".ptprof-summaries").iterdir())[0]
    doc = json.loads(p.read_text())
    p.unlink()
    if poison == "fifo":
        os.mkfifo(p)
    elif poison == "symlink":
        good = tmp_path / "elsewhere.json"
        good.write_text(json.dumps(doc))
        p.symlink_to(good)
    elif poison == "deep":
        p.write_text('{"digest": ' + json.dumps(doc["digest"]) + ', "summary": ' + "[" * 100_000 + "]" * 100_000 + "}")
    elif poison == "huge":
        with open(p, "wb") as fh:
            fh.truncate(64 << 20)
    elif poison == "types":
        doc["summary"]["step_t0_ns"] = {"a": 1}
        doc["summary"]["colls"]["ts_ns"] = ["x"]
        p.write_text(json.dumps(doc))
    elif poison == "nan":
        p.write_text(json.dumps(doc).replace('"base_unix_ns":', '"base_unix_ns": NaN, "x":', 1))
    else:
        p.write_bytes(os.urandom(4096))
    again = analyze_run(run, InProcess())
    assert again.mapped == 1
    _same(first.analysis, again.analysis)
