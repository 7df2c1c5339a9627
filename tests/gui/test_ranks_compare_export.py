"""Compare of multi-rank runs without the window loading them whole: the ranks are read one at a time by the
process pool (core/ranks/onepass.py), the window keeps facts, summaries and one rank per side."""
from __future__ import annotations

import shutil

from helpers import REPO

from core.trace.model import TraceModel

MULTI = REPO / "tests" / "data" / "multi" / "straggler"
PAIRS = REPO / "tests" / "data" / "device" / "pairs"


def _runs(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(MULTI, a)  # bundles get stored summaries: tests/data stays clean
    shutil.copytree(MULTI, b)
    return a, b


def _loaded_models() -> list:
    import gc
    gc.collect()
    return [o for o in gc.get_objects() if isinstance(o, TraceModel)]


def test_two_multi_rank_runs_compare_rank_by_rank(qtbot, main_window, tmp_path):
    from core.analysis import diff
    from core.ranks.executor import InProcess
    from core.ranks.findings_cache import findings_of
    from core.ranks.onepass import diff_view
    a, b = _runs(tmp_path)
    before = {id(m) for m in _loaded_models()}
    with qtbot.waitSignal(main_window.integrations.compare.sig_compare_shown, timeout=180_000) as blocker:
        job = main_window.compare_paths(str(a), str(b))
        assert job.loads == []  # nothing loaded whole in the window
    view = blocker.args[0]
    new = [m for m in _loaded_models() if id(m) not in before]
    assert len(new) == 2 and {m.rank for m in new} == {0}  # each side's primary rank, for its timeline
    assert len(view.side_a.trace_set.models) == 1 and view.side_a.trace_set.path == str(a)
    assert "rank 0 of 2" in view.side_a.findChildren(type(view.header))[0].text()
    assert main_window.tabs.tabText(main_window.tabs.currentIndex()) == "a ↔ b"
    # the same diff as `ptprof diff` gives
    va, vb = diff_view(a, executor=InProcess()), diff_view(b, executor=InProcess())
    want = diff.compare(va, vb, findings_a=findings_of(va), findings_b=findings_of(vb)).to_json()
    assert view.diff.to_json() == want and want["a"]["ranks"] == 2


def test_a_multi_rank_run_compares_with_a_single_trace(qtbot, main_window, tmp_path):
    a, _b = _runs(tmp_path)
    with qtbot.waitSignal(main_window.integrations.compare.sig_compare_shown, timeout=180_000) as blocker:
        job = main_window.compare_paths(str(a), str(PAIRS / "gemm_bf16"))
        assert len(job.loads) == 1  # only the single trace loads in the window
    view = blocker.args[0]
    assert view.diff.to_json()["a"]["ranks"] == 2 and len(view.side_b.trace_set.models) == 1


def test_cancelling_a_multi_rank_compare_ends_its_pool(qtbot, main_window, tmp_path):
    a, b = _runs(tmp_path)
    job = main_window.compare_paths(str(a), str(b))
    qtbot.waitUntil(lambda: job.worker is not None, timeout=10_000)
    main_window.cancel_loads()
    assert main_window.progress.isHidden() and job not in main_window.jobs
    qtbot.waitUntil(lambda: not job.worker.is_running, timeout=120_000)  # the worker ends by itself
    assert not any(type(main_window.tabs.widget(i)).__name__ == "CompareView" for i in range(main_window.tabs.count()))

