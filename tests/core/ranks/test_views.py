"""`report` and `diff` of multi-rank runs from per-rank parts (core/ranks/views.py, report_parts.py): the same
files and the same diff as from the loaded set, with no rank held by the parent."""
from __future__ import annotations

import gc
import re
import shutil

import pytest
from helpers import REPO, shared_trace

from core.analysis import diff, unprofiled
from core.export.writer import ReportOptions, load_renderer, write_report
from core.ranks.executor import InProcess, LocalPool
from core.ranks.findings_cache import findings_of
from core.ranks.inset import collect_findings
from core.ranks.views import open_view
from core.trace.loader import load
from core.trace.model import TraceModel

MULTI = REPO / "tests" / "data" / "multi" / "straggler"


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PTPROF_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _generated(tmp_path, n=4):
    import gen_ranks  # tests/gen_ranks.py (bench/multi/gen_ranks.py runs it)
    gen_ranks.generate(shared_trace("gpu_issues.pt.trace.json.gz"), n, tmp_path / "gen", slow=1, per_step=3)
    return tmp_path / "gen"


def _run(name, tmp_path):
    if name == "multi":
        run = tmp_path / "run"
        shutil.copytree(MULTI, run)  # a bundle gets stored summaries: keep tests/data clean
        return run
    if name == "ddp2":
        return shared_trace("gpu_ddp2")
    return _generated(tmp_path)


def _files(folder) -> dict[str, bytes]:
    out = {}
    for p in sorted(folder.iterdir()):
        if p.name.startswith("."):
            continue
        data = p.read_bytes()
        if p.name == "report.html":
            data = re.sub(rb"generated [^<]*", b"", data)
        out[p.name] = data
    return out


@pytest.mark.parametrize("name", ["multi", "ddp2", "generated"])
def test_report_of_a_multi_rank_run_equals_the_whole_set_report(name, cache_dir, tmp_path):
    from core.cli import main
    run = _run(name, tmp_path)
    renderer, _ = load_renderer()
    pngs = renderer is not None
    whole = load(run)
    write_report(whole, tmp_path / "old", renderer, ReportOptions(pngs=pngs, findings=collect_findings(whole)))
    del whole
    assert main(["report", str(run), "--out", str(tmp_path / "new")] + ([] if pngs else ["--no-png"])) == 0
    old, new = _files(tmp_path / "old"), _files(tmp_path / "new")
    assert sorted(old) == sorted(new)
    assert {k for k in old if old[k] != new[k]} == set()
    assert {"kernels.csv", "steps.csv", "findings.csv", "report.html"} <= set(new)


@pytest.mark.parametrize("name", ["multi", "ddp2", "generated"])
def test_diff_of_multi_rank_runs_equals_the_loaded_sets_diff(name, cache_dir, tmp_path):
    run = _run(name, tmp_path)
    other = shared_trace("gpu_ddp2")
    if name != "multi":  # a copy: a bundle gets stored summaries, tests/data stays clean
        other = tmp_path / "other"
        shutil.copytree(MULTI, other)
    for by_shape, normalize in ((False, False), (True, True)):
        ta, tb = load(run), load(other)
        old = diff.compare(ta, tb, findings_a=findings_of(ta, False), findings_b=findings_of(tb, False),
                           by_shape=by_shape, normalize_templates=normalize).to_json()
        va = open_view(run, want={"diff": {"by_shape": by_shape}}, executor=InProcess())
        vb = open_view(other, want={"diff": {"by_shape": by_shape}}, executor=InProcess())
        new = diff.compare(va, vb, findings_a=findings_of(va, False), findings_b=findings_of(vb, False),
                           by_shape=by_shape, normalize_templates=normalize).to_json()
        assert new == old
        # the unprofiled basis (taken when the runs are bound by different sides) from the workers' replays
        for inflation in (None, 1.7):
            a, b = unprofiled.run_steps_ns(ta, inflation), diff._unprofiled_steps(va, inflation)
            assert (a is None and b is None) or a.tolist() == b.tolist()


def test_the_view_holds_no_rank_and_skips_a_broken_one_as_the_loader(cache_dir, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(shared_trace("gpu_ddp2"), run)
    (run / "rank2.pt.trace.json").write_text("{not json")
    ts = load(run)
    old_warnings, old_ranks = list(ts.all_warnings), ts.ranks
    del ts
    gc.collect()
    before = {id(o) for o in gc.get_objects() if isinstance(o, TraceModel)}  # other tests' module fixtures
    ex = LocalPool(2)
    try:
        view = open_view(run, want={"diff": {"by_shape": False}}, executor=ex)
        gc.collect()
        new = [o for o in gc.get_objects() if isinstance(o, TraceModel) and id(o) not in before]
        assert not new  # parts only in this process
        assert view.all_warnings == old_warnings and view.ranks == old_ranks
        d = diff.compare(view, view).to_json()
        assert d["a"]["ranks"] == 2 and d["kernels"]
    finally:
        ex.close()


def test_diff_cli_on_multi_rank_runs(cache_dir, tmp_path, capsys):
    from core.cli import main
    run = _run("multi", tmp_path)
    assert main(["diff", str(run), str(run), "--json"]) == 0
    out = capsys.readouterr().out
    assert '"per_rank"' in out and '"ranks": 2' in out


def test_report_whose_window_needs_the_whole_run_span(cache_dir, tmp_path, monkeypatch):
    """No busiest step on the primary rank: the window is the whole run's span, so the timeline pieces take a
    second pass over the ranks; the files are still the whole-set report's."""
    from core.export import timeline_data
    from core.export.findings import wrap
    from core.ranks.report_parts import report_view
    monkeypatch.setattr(timeline_data, "busiest_step", lambda m: None)
    run = _run("ddp2", tmp_path)
    whole = load(run)
    write_report(whole, tmp_path / "old", None, ReportOptions(pngs=False, findings=collect_findings(whole)))
    del whole
    view, ra = report_view(run, executor=InProcess())
    try:
        assert all("timeline" in m.parts for m in view.models)
        write_report(view, tmp_path / "new", None, ReportOptions(pngs=False, findings=wrap(ra.analysis)))
        fig_old = timeline_data.build(load(run))
        fig_new = timeline_data.build(view)
        assert (fig_new.t0_ms, fig_new.t1_ms, fig_new.row_labels) == (fig_old.t0_ms, fig_old.t1_ms, fig_old.row_labels)
        assert "whole trace" in fig_new.header.subtitle
    finally:
        view.close()
    assert _files(tmp_path / "old") == _files(tmp_path / "new")
