"""Rank filter on the two-rank gpu_ddp2 folder: search, step bands and counter rows follow the shown rank."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import shared_trace

from core.trace import query
from core.trace.loader import load


@pytest.fixture(scope="module")
def ddp_set():
    return load(shared_trace("gpu_ddp2"))


@pytest.fixture
def view(qtbot, ddp_set):
    from gui.theme import load_theme
    from gui.trace_view import TraceView
    v = TraceView(ddp_set, None, load_theme(dark=False))
    v.resize(1400, 900)
    qtbot.addWidget(v)
    v.show()
    qtbot.waitExposed(v)
    return v


def test_search_and_step_bands_follow_the_rank_filter(view, ddp_set):
    assert len(ddp_set.models) == 2
    view.search.edit.setText("aten::")
    n_all = view.search.run()
    assert set(view.search.match_models.tolist()) == {0, 1}
    assert set(view.timeline.item.step_bands) == {0, 1}
    view.rank_filter.setCurrentIndex(2)  # rank 1 only
    n1 = len(view.search.match_rows)
    assert n1 == len(query.search(ddp_set.models[1], "aten::")) and 0 < n1 < n_all
    assert set(view.search.match_models.tolist()) == {1}
    assert set(view.timeline.item.highlights) == {1}
    view.search.next()
    assert view.timeline.item.selected[0] == 1
    assert set(view.timeline.item.step_bands) == {1}
    st = ddp_set.models[1].steps
    assert view.timeline.zoom_to_step(float(st.ts_ns[1]) + 1)
    a, b = view.timeline.view_range()
    assert a <= st.ts_ns[1] and st.ts_ns[1] + st.dur_ns[1] <= b
    view.rank_filter.setCurrentIndex(0)  # all ranks again
    assert len(view.search.match_rows) == n_all


def test_host_wide_counter_rows_sit_under_the_first_shown_rank(ddp_set):
    from gui.timeline.rows import COUNTER, CounterRow, RowState, build_rows
    c = CounterRow(-1, "NVML gpu0 util", np.array([0, 10]), np.array([1.0, 2.0]), 100.0)
    for hidden, under in ((set(), 0), ({0}, 1)):
        rows = build_rows(list(ddp_set.models), RowState(hidden_models=hidden), [c])
        assert [r.model for r in rows if r.track == COUNTER] == [under]


def test_nvml_rows_go_to_the_rank_on_that_gpu():
    from gui.trace_view import counter_rows
    ts = load(shared_trace("gpu_compile_small.pt.trace.json.gz"))  # NVML samples inside its window
    nvml = [c for c in counter_rows(ts) if c.label.startswith("NVML")]
    assert nvml and all(c.model == 0 for c in nvml)
    outside = load(shared_trace("gpu_issues.pt.trace.json.gz"))  # every sample outside the window
    assert not [c for c in counter_rows(outside) if c.label.startswith("NVML")]


def test_steps_tab_shows_communication_per_rank(qtbot, tmp_path):
    """Two-rank NCCL run: the Steps tab's Communication column is steps.csv's comm_us, and the Metrics line
    gives each rank's overlap."""
    from PySide6 import QtCore
    from synth_nccl import write_nccl_run

    from core.export import tables
    from gui.theme import load_theme
    from gui.trace_view import TraceView
    ts = load(write_nccl_run(tmp_path / "nccl"), use_cache=False)
    v = TraceView(ts, None, load_theme(dark=False))
    qtbot.addWidget(v)
    steps = v.steps
    qtbot.waitUntil(lambda: steps.ready, timeout=60_000)
    model = steps.table_model
    headers = [model.headerData(i, QtCore.Qt.Orientation.Horizontal) for i in range(model.columnCount())]
    col = headers.index("Communication")
    shown = sorted(model.data(model.index(r, col), QtCore.Qt.ItemDataRole.UserRole) for r in range(model.rowCount()))
    csv_table = tables.steps_table(ts)
    comm_us = csv_table.data[list(csv_table.columns).index("comm_us")]
    assert len(shown) == 12 and np.allclose(np.array(shown, float) / 1e3, sorted(comm_us), atol=1e-3)
    assert min(shown) > 900_000  # ns: the exposed all-reduce time of every step
    text = steps.metrics_label.text()
    assert text.count("comm overlap") == 2 and "(rank 1)" in text
