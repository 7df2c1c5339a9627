"""`report` and `diff` of a multi-rank run read each rank once (core/ranks/onepass.py), as `analyze` does: the
loads are counted on the map's loader (`mapper._load_one`: with --no-cache every load is a parse)."""
from __future__ import annotations

import collections
import shutil

import pytest
from helpers import REPO, shared_trace

from core.export.findings import wrap
from core.export.writer import ReportOptions, write_report
from core.ranks import mapper
from core.ranks.executor import InProcess
from core.ranks.findings_cache import findings_of
from core.ranks.inset import collect_findings
from core.ranks.onepass import diff_view
from core.ranks.report_parts import report_view
from core.ranks.run import analyze_run
from core.trace.loader import load

MULTI = REPO / "tests" / "data" / "multi" / "straggler"


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PTPROF_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def loads(monkeypatch):
    """path -> how many times the map's loader read it (every read of a rank by any command goes through it)."""
    counts: collections.Counter = collections.Counter()
    real = mapper._load_one

    def counted(task):
        counts[task.path] += 1
        return real(task)

    monkeypatch.setattr(mapper, "_load_one", counted)
    return counts


def _runs(tmp_path):
    run = tmp_path / "straggler"
    shutil.copytree(MULTI, run)  # a bundle gets stored summaries: keep tests/data clean
    out = [run]
    try:
        ddp2 = tmp_path / "ddp2"
        shutil.copytree(shared_trace("gpu_ddp2"), ddp2)
        out.append(ddp2)
    except pytest.skip.Exception:
        pass
    return out


def _analyze_reads(run, loads, use_cache=True) -> dict:
    loads.clear()
    analyze_run(run, InProcess(), use_cache=use_cache, stored=False)
    got = dict(loads)
    loads.clear()
    return got


@pytest.mark.parametrize("use_cache", [False, True])
def test_report_reads_each_rank_as_often_as_analyze(use_cache, cache_dir, tmp_path, loads):
    for run in _runs(tmp_path):
        n = len(load(run).models)
        expected = _analyze_reads(run, loads, use_cache)
        assert sum(expected.values()) <= n + 1  # one read per rank, + the straggler's CPU ranges
        view, ra = report_view(run, use_cache=use_cache, executor=InProcess())
        try:
            assert dict(loads) == expected, run.name  # was: every rank read twice, the primary three times
            assert all("timeline" in m.parts and "report" in m.parts for m in view.models)
        finally:
            view.close()
        shutil.rmtree(run / ".ptprof-summaries", ignore_errors=True)


def test_report_with_stored_summaries_reads_each_rank_once(cache_dir, tmp_path, loads):
    run = tmp_path / "straggler"
    shutil.copytree(MULTI, run)
    analyze_run(run, InProcess())  # stores the ranks' summaries in the bundle
    assert (run / ".ptprof-summaries").is_dir()
    loads.clear()
    analyze_run(run, InProcess())
    reduce_only = collections.Counter(loads)  # the straggler's CPU ranges only
    assert sum(reduce_only.values()) <= 1
    loads.clear()
    view, _ra = report_view(run, executor=InProcess())
    view.close()
    assert loads == reduce_only + collections.Counter({str(p): 1 for p in (run / "traces").iterdir()})


def test_diff_reads_each_rank_as_often_as_analyze(cache_dir, tmp_path, loads):
    for run in _runs(tmp_path):
        expected = _analyze_reads(run, loads, use_cache=False)
        view = diff_view(run, use_cache=False, executor=InProcess())
        try:
            assert view.diff_facts() and findings_of(view, use_cache=False)
            assert dict(loads) == expected, run.name  # was: once for the facts, once more for the findings
        finally:
            view.close()
    # with the cache: a second diff finds the run's findings cached and reads each rank once, for its facts
    run = _runs(tmp_path / "again")[0]
    view = diff_view(run, executor=InProcess())
    findings_of(view)
    view.close()
    loads.clear()
    view = diff_view(run, executor=InProcess())
    assert findings_of(view) and sorted(loads.values()) == [1, 1]
    view.close()


def test_ranks_named_out_of_order_still_give_the_whole_set_report(cache_dir, tmp_path, loads):
    """rank0's file holds rank 1 (the trace's distributedInfo wins over the name): the guessed primary is not
    the first rank, so the pieces are cut again in the real primary's window; the files are the loaded set's."""
    run = tmp_path / "swapped"
    run.mkdir()
    src = sorted((MULTI / "traces").iterdir())
    shutil.copy(src[0], run / "rank1.pt.trace.json.gz")
    shutil.copy(src[1], run / "rank0.pt.trace.json.gz")
    ts = load(run)
    assert [m.rank for m in ts.models] == [0, 1] and ts.models[0].path.endswith("rank1.pt.trace.json.gz")
    write_report(ts, tmp_path / "old", None, ReportOptions(pngs=False, findings=collect_findings(ts)))
    from core.export import timeline_data
    fig_old = timeline_data.build(ts)
    del ts
    view, ra = report_view(run, executor=InProcess())
    try:
        fig_new = timeline_data.build(view)
        write_report(view, tmp_path / "new", None, ReportOptions(pngs=False, findings=wrap(ra.analysis)))
    finally:
        view.close()
    assert (fig_new.t0_ms, fig_new.t1_ms, fig_new.row_labels) == (fig_old.t0_ms, fig_old.t1_ms, fig_old.row_labels)
    assert [(b.color, b.x0_ms.tolist(), b.x1_ms.tolist(), b.row.tolist()) for b in fig_new.bars] == \
        [(b.color, b.x0_ms.tolist(), b.x1_ms.tolist(), b.row.tolist()) for b in fig_old.bars]
    assert fig_new.texts == fig_old.texts
    for name in ("kernels.csv", "steps.csv", "ops.csv"):
        assert (tmp_path / "new" / name).read_bytes() == (tmp_path / "old" / name).read_bytes()
