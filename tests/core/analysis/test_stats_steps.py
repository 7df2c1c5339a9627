"""Step statistics, kernel/op tables and call-tree helpers on real traces, checked against direct counts."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import shared_trace

from core.analysis import intervals, stats, steps, tree
from core.trace.loader import load
from core.trace.model import Kind


def _model(name):
    return load(shared_trace(name), use_cache=False).primary


def test_intervals_union_covered_gaps():
    us, ue = intervals.union(np.array([0, 5, 20, 21]), np.array([10, 8, 25, 30]))
    assert us.tolist() == [0, 20] and ue.tolist() == [10, 30]
    assert intervals.covered(us, ue, np.array([0, 5, 15]), np.array([30, 25, 18])).tolist() == [20, 10, 0]
    gs, ge = intervals.gaps(us, ue, -5, 40)
    assert list(zip(gs.tolist(), ge.tolist())) == [(-5, 0), (10, 20), (30, 40)]


def test_step_stats_gpu_issues():
    m = _model("gpu_issues.pt.trace.json.gz")
    st = steps.step_stats(m)
    assert st.number.tolist() == m.steps.number.tolist()
    assert (st.dur_ns == m.steps.dur_ns).all()
    assert ((st.gpu_busy_pct > 0) & (st.gpu_busy_pct <= 100)).all()
    # kernel count per step equals kernels starting inside each step window
    s = m.slices
    k = s.kind == Kind.KERNEL
    for i in range(len(st)):
        inside = k & (s.ts_ns >= st.ts_ns[i]) & (s.ts_ns < st.ts_ns[i] + st.dur_ns[i])
        assert st.kernel_count[i] == inside.sum()
    assert (st.mem_peak_bytes > 0).all()


def test_step_stats_without_steps_is_one_window():
    m = _model("gpu_minimal_opts.pt.trace.json.gz")
    st = steps.step_stats(m)
    assert len(st) >= 1


def test_kernel_table_sums():
    m = _model("gpu_gpt_big.pt.trace.json.gz")
    kt = stats.kernel_table(m)
    for kind in (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET):  # one block of rows per kind, shares of that kind
        k = m.slices.kind == kind
        rows = kt.kind == kind
        assert kt.calls[rows].sum() == k.sum()
        assert kt.total_ns[rows].sum() == m.slices.dur_ns[k].sum()
        assert abs(kt.gpu_pct[rows].sum() - 100) < 1e-6
        assert (np.diff(kt.total_ns[rows]) <= 0).all()
    assert (np.diff(kt.kind.astype(int)) >= 0).all()  # kernels first, then memcpy, then memset
    assert (kt.min_ns <= kt.mean_ns).all() and (kt.mean_ns <= kt.max_ns).all()
    assert (kt.min_ns <= kt.p50_ns).all() and (kt.p50_ns <= kt.p95_ns).all() and (kt.p95_ns <= kt.max_ns).all()
    # against numpy on one name
    i = int(np.argmax(kt.calls))
    d = m.slices.dur_ns[(m.slices.name == kt.name[i]) & (m.slices.kind == kt.kind[i])]
    assert kt.p50_ns[i] == np.percentile(d, 50) and kt.p95_ns[i] == np.percentile(d, 95)
    assert abs(kt.stddev_ns[i] - np.std(d, ddof=1)) < 1e-6 * max(np.std(d), 1)


def test_op_table_device_time_accounts_for_all_gpu_work():
    m = _model("gpu_issues.pt.trace.json.gz")
    ot = stats.op_table(m)
    gpu = np.isin(m.slices.kind, [Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET])
    # every GPU event launched under some op is attributed once as self device time
    assert ot.device_self_ns.sum() <= m.slices.dur_ns[gpu].sum()
    assert ot.device_self_ns.sum() > 0.95 * m.slices.dur_ns[gpu].sum()
    assert (ot.host_self_ns <= ot.host_total_ns).all()
    names = [m.strings[i] for i in ot.name]
    assert "aten::item" in names and "aten::conv2d" in names
    by_shapes = stats.op_table(m, by_shapes=True)
    assert len(by_shapes) >= len(ot)
    assert by_shapes.calls.sum() == ot.calls.sum()


def _naive_parents(m) -> list[int]:
    """The definition, row by row: the latest earlier row of the same track one level up."""
    from core.trace.model import TrackKind
    s = m.slices
    gpu = {int(k) for k in (TrackKind.GPU_STREAM, TrackKind.GPU_ANNOTATION)}
    out, last = [-1] * len(s), {}
    for r, (t, d) in enumerate(zip(s.track.tolist(), s.depth.tolist())):
        if int(m.tracks.kind[t]) in gpu:
            continue
        if d > 0:
            out[r] = last.get((t, d - 1), -1)
        last[(t, d)] = r
    return out


@pytest.mark.parametrize("name", ["gpu_issues.pt.trace.json.gz", "gpu_compile_small.pt.trace.json.gz",
                                  "cpu_compile.pt.trace.json.gz"])
def test_parents_equal_the_definition(name):
    m = _model(name)
    assert tree._parents(m).tolist() == _naive_parents(m)


def test_parents_and_python_stack():
    m = _model("gpu_issues.pt.trace.json.gz")
    par = tree.parents(m)
    s = m.slices
    has = par >= 0
    assert has.any()
    # a parent starts no later and sits one level up on the same track
    assert (s.ts_ns[par[has]] <= s.ts_ns[has]).all()
    assert (s.depth[par[has]] == s.depth[has] - 1).all()
    assert (s.track[par[has]] == s.track[has]).all()
    item = int(np.flatnonzero(s.name == m.strings.find("aten::item"))[0])
    frames = [m.name(r) for r in tree.python_stack(m, item)]
    assert any("gpu_workloads.py" in f for f in frames)
    assert tree.user_frame(m, item)[0] == "gpu_workloads.py"
    assert tree.parse_frame("train.py(42): step") == ("train.py", 42, "step")
