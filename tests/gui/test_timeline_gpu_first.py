"""GPU first: on a big trace and on a compiled one (20+ CPU levels) a GPU stream row is inside the first
viewport of a window the size of a 1920x1080 screen; sparse side streams fold into one group row."""
from __future__ import annotations

import pytest
from helpers import shared_trace

from core.trace.model import TrackKind


def _first_viewport_kinds(qtbot, main_window, open_and_wait, path):
    main_window.resize(1904, 1040)
    open_and_wait(main_window, path)
    view = main_window.current_view()
    qtbot.wait(50)
    tl = view.timeline
    top, bottom = tl.vb.viewRange()[1]
    shown = [r for i, r in enumerate(tl.rows) if top - 0.01 <= i and i + 1 <= bottom + 0.01]
    return view, [r.kind for r in shown]


@pytest.mark.parametrize("name", ["gpu_gpt_big.pt.trace.json.gz", "gpu_compile_small.pt.trace.json.gz"])
def test_a_gpu_row_is_inside_the_first_viewport(qtbot, main_window, open_and_wait, name):
    view, kinds = _first_viewport_kinds(qtbot, main_window, open_and_wait, shared_trace(name))
    assert TrackKind.GPU_STREAM in kinds
    assert view.timeline.height() >= 250  # the timeline is not squeezed by the plots under it
    gpu_row = next(i for i, r in enumerate(view.timeline.rows) if r.kind == TrackKind.GPU_STREAM)
    assert gpu_row <= 2  # right under the steps band


def test_the_compiled_steps_deep_stack_starts_folded(qtbot, main_window, open_and_wait):
    view, _ = _first_viewport_kinds(qtbot, main_window, open_and_wait,
                                    shared_trace("gpu_compile_small.pt.trace.json.gz"))
    tl = view.timeline
    m = view.models[0]
    main = next(r for r in tl.rows if r.kind == TrackKind.CPU_THREAD)
    assert int(m.tracks.max_depth[main.track]) + 1 > 20
    assert sum(1 for r in tl.rows if r.track == main.track) == tl.theme.depth_cap


def test_sparse_gpu_streams_fold_into_one_group(qtbot, main_window, open_and_wait):
    from gui.timeline.rows import GROUP
    view, _ = _first_viewport_kinds(qtbot, main_window, open_and_wait, shared_trace("gpu_ddp2"))
    tl = view.timeline
    groups = [r for r in tl.rows if r.track == GROUP]
    assert len(groups) == 2 and all(r.collapsed for r in groups)  # one per rank
    labels = [r.label for r in tl.rows if r.kind == TrackKind.GPU_STREAM]
    assert labels == ["GPU 0 · stream 7", "GPU 0 · stream 7"]  # the empty-looking 52..72 are folded
    n = len(tl.rows)
    tl.toggle_track(groups[0].model, GROUP)
    assert len(tl.rows) == n + 12  # 6 streams + their annotation rows of rank 0
    assert any(r.label == "GPU 0 · stream 52" for r in tl.rows)


def test_nvml_without_samples_in_the_window_is_a_line_of_text(qtbot, main_window, open_and_wait):
    view, _ = _first_viewport_kinds(qtbot, main_window, open_and_wait,
                                    shared_trace("gpu_issues.pt.trace.json.gz"))
    mem = view.memory
    assert "none inside the profiled window" in mem.nvml_note
    assert mem.nvml_plot is None or not mem.nvml_plot.isVisible()
    assert not any(r.label.startswith("NVML") for r in view.timeline.rows)
    assert view.memory_box.wanted_height() < 140  # memory plot + the note, compact
    view.memory_box.set_folded(True)
    assert view.memory_box.wanted_height() == 20 and not mem.isVisible()


def test_the_layout_does_not_jump_after_a_trace_opened(qtbot, main_window, open_and_wait):
    """The splitter is fitted before the first paint; nothing that finishes later (analysis, tables)
    moves it: the sizes right after the tab appeared are the sizes once everything has settled."""
    main_window.resize(1904, 1040)
    path = shared_trace("gpu_compile_small.pt.trace.json.gz")
    with qtbot.waitSignal(main_window.integrations.issues.sig_analysis_finished, timeout=120_000):
        open_and_wait(main_window, path)
        view = main_window.current_view()
        first = view.split.sizes()
        qtbot.wait(20)
        table = main_window.integrations.issues.table
        table_top = table.mapTo(main_window, table.rect().topLeft()).y()
    for panel in view.stats_panels():
        qtbot.waitUntil(lambda p=panel: p.ready, timeout=60_000)
    qtbot.wait(200)
    assert view.split.sizes() == first
    # neither the Issues rules nor the tables built a dense array of a sparse arg column
    assert view.trace_set.primary.slices.sparse_names()
    assert all(m.slices.materialized() == [] for m in view.trace_set.models)
    # the findings table stays where it was when the analysis ends (its Cancel button hides)
    assert table.mapTo(main_window, table.rect().topLeft()).y() == table_top
