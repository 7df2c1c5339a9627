"""core.trace.query on real traces: windows, LOD spans, hit tests, search and launch lookups."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import SAMPLE, shared_trace

from core.trace import index_cache, query
from core.trace.loader import load
from core.trace.model import Kind, TrackKind


@pytest.fixture(scope="module")
def issues():
    return load(shared_trace("gpu_issues.pt.trace.json.gz"), use_cache=False).primary


@pytest.fixture(scope="module")
def index(issues):
    return query.SliceIndex(issues)


def _brute(m, track, depth, t0, t1):
    s = m.slices
    hit = (s.track == track) & (s.depth == depth) & (s.ts_ns <= t1) & (s.ts_ns + s.dur_ns >= t0)
    return np.flatnonzero(hit)


def test_rows_match_brute_force_on_every_row(issues, index):
    m = issues
    s0, s1 = m.span_ns
    rng = np.random.default_rng(0)
    for track in range(len(m.tracks)):
        for depth in range(int(m.tracks.max_depth[track]) + 1):
            for _ in range(5):
                a, b = sorted(rng.uniform(s0, s1, 2))
                got = np.sort(index.rows(track, depth, a, b))
                assert np.array_equal(got, _brute(m, track, depth, a, b)), (track, depth)


def test_spans_cover_rows_and_merge_below_resolution(issues, index):
    m = issues
    gpu = int(np.flatnonzero(m.tracks.kind == TrackKind.GPU_STREAM)[0])
    s0, s1 = m.span_ns
    n = index.count(gpu, 0, s0, s1)
    assert n > query.RAW_LIMIT // 4
    ns_per_px = (s1 - s0) / 200  # a 200 px wide view
    sp = index.spans(gpu, 0, s0, s1, ns_per_px)
    assert 0 < len(sp) <= n
    assert sp.count.sum() <= n
    assert np.all(sp.end_ns >= sp.start_ns)
    assert np.all(sp.start_ns[1:] >= sp.end_ns[:-1])  # disjoint, ordered
    x0, x1, rep = query.pixel_spans(sp, s0, ns_per_px)
    assert len(x0) <= 2 * 200 + 2  # at most a couple of rects per pixel column
    assert np.all(x1 - x0 >= 1.0)
    # a merged level loses no time: every slice lies inside some span
    rows = index.rows(gpu, 0, s0, s1)
    lv = query.merge_gaps(index.ts_ns[:0], index.end_ns(0, 0), rows[:0], 1)
    assert len(lv) == 0
    ts, end = m.slices.ts_ns[rows], m.slices.ts_ns[rows] + m.slices.dur_ns[rows]
    merged = query.merge_gaps(np.sort(ts), end[np.argsort(ts)], rows, 10_000)
    k = np.searchsorted(merged.start_ns, ts, side="right") - 1
    assert np.all(end <= merged.end_ns[k])


def test_at_finds_the_slice_under_the_cursor(issues, index):
    m = issues
    k = int(np.flatnonzero(m.slices.kind == Kind.KERNEL)[10])
    t = m.slices.ts_ns[k] + m.slices.dur_ns[k] // 2
    assert index.at(int(m.slices.track[k]), int(m.slices.depth[k]), t) == k


def test_search_and_navigation(issues):
    rows = query.search(issues, "cudaStreamSynchronize")
    assert len(rows) >= 5 * 4  # README: 5 syncs per step
    assert np.all(np.diff(issues.slices.ts_ns[rows]) >= 0)
    assert len(query.search(issues, "CUDASTREAMSYNC")) == len(rows)  # case-insensitive
    t = float(issues.slices.ts_ns[rows[3]])
    assert query.next_after(issues, rows, t) == rows[4]
    assert query.prev_before(issues, rows, t) == rows[2]
    assert query.next_after(issues, rows, 1e18) == rows[0]  # wraps


def test_launch_lookups_and_python_stack(issues):
    m = issues
    k = int(np.flatnonzero(m.slices.kind == Kind.KERNEL)[50])
    src = query.launcher_of(m, k)
    assert src >= 0 and m.slices.kind[src] == Kind.RUNTIME
    chain = query.cpu_ancestors(m, src)
    assert chain and m.slices.kind[chain[-1]] == Kind.CPU_OP
    assert k in query.launched_by(m, chain[-1])
    s = m.slices
    # launches from a thread with python_function frames (with_stack=True) have a Python stack
    kernels = np.flatnonzero(s.kind == Kind.KERNEL)
    launchers = [query.launcher_of(m, int(x)) for x in kernels[::25]]
    on_py = [r for r in launchers if r >= 0 and query.python_track_of(m, int(s.track[r])) >= 0]
    assert len(on_py) >= 10
    with_stack = [r for r in on_py if query.python_stack(m, r)]
    assert len(with_stack) >= 0.9 * len(on_py)
    src = with_stack[0]
    frames = query.python_stack(m, src)
    for f in frames:
        assert s.kind[f] == Kind.PYTHON
        assert s.ts_ns[f] <= s.ts_ns[src] and s.ts_ns[f] + s.dur_ns[f] >= s.ts_ns[src] + s.dur_ns[src]
    assert s.depth[frames[0]] >= s.depth[frames[-1]]  # innermost first


def test_short_kernel_names():
    assert query.short_kernel_name("void at::native::foo<8, bar<int> >(int, float*)") == "at::native::foo"
    assert query.short_kernel_name("Memcpy HtoD (Pageable -> Device)") == "Memcpy HtoD (Pageable -> Device)"
    name = "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>(float*, float const*, int)"
    assert query.short_kernel_name(name) == "at::native::cunn_SoftMaxForward"
    add = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
           "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)")
    assert query.short_kernel_name(add) == "at::native::vectorized_elementwise_kernel<CUDAFunctor_add>"
    gelu = ("void at::native::vectorized_elementwise_kernel<8, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
            "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::"
            "{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, float)")
    assert query.short_kernel_name(gelu) == "at::native::vectorized_elementwise_kernel<GeluCUDAKernelImpl>"


def test_sample_index_counts_every_slice():
    m = load(SAMPLE, use_cache=False).primary
    ix = query.SliceIndex(m)
    s0, s1 = m.span_ns
    total = sum(ix.count(t, d, s0, s1) for t in range(len(m.tracks)) for d in range(int(m.tracks.max_depth[t]) + 1))
    assert total == len(m.slices)


def _index_reference(m):
    """SliceIndex as built before its groups were sized by a bincount: the (track, depth) keys gathered
    in sorted order and cut where they change."""
    s = m.slices
    n_depth = int(s.depth.max(initial=0)) + 1
    order = np.argsort(s.track.astype(np.int64) * n_depth + s.depth, kind="stable")
    keys = (s.track.astype(np.int64) * 65536 + s.depth)[order]
    end = (s.ts_ns + s.dur_ns)[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    bounds = np.r_[starts, len(keys)]
    groups, run_end = {}, np.empty_like(end)
    for g, a in enumerate(starts.tolist()):
        b = int(bounds[g + 1])
        groups[(int(keys[a]) >> 16, int(keys[a]) & 0xFFFF)] = (a, b)
        run_end[a:b] = np.maximum.accumulate(end[a:b])
    return order, s.ts_ns[order], end, run_end, groups


@pytest.mark.parametrize("counts", [True, False])
@pytest.mark.parametrize("name", ["sample", "gpu_compile_small.pt.trace.json.gz", "cpu_train.pt.trace.json.gz"])
def test_index_groups_equal_the_gathered_keys(monkeypatch, counts, name):
    monkeypatch.setattr(query, "_count_groups", lambda *_: counts)  # both ways of sizing the groups
    m = load(SAMPLE if name == "sample" else shared_trace(name), use_cache=False).primary
    ix = query.SliceIndex(m)
    order, ts, end, run_end, groups = _index_reference(m)
    assert ix.order.dtype == np.int32 and np.array_equal(ix.order, order)  # int32 below 2**31 rows
    assert np.array_equal(ix.ts_ns, ts) and np.array_equal(ix.run_end_ns, run_end)
    assert np.array_equal(ix.end_ns(0, len(order)), end)
    assert ix._groups == groups  # noqa: SLF001
    assert [(int(g) // ix.n_depth, int(g) % ix.n_depth) for g in ix.group_ids] == list(groups)
    assert ix.bounds.tolist() == [a for a, _b in groups.values()] + [len(order)]


@pytest.mark.parametrize("name", ["gpu_memory.pt.trace.json.gz", "gpu_gpt_big.pt.trace.json.gz"])
def test_distinct_kernel_names_tell_every_kernel_apart(name):
    from core.analysis.stats import kernel_table
    m = load(shared_trace(name), use_cache=False).primary
    full = m.strings.lookup(kernel_table(m, kinds=(Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET)).name)
    short = [query.short_kernel_name(n) for n in full]
    distinct = query.distinct_kernel_names(full)
    assert len(set(distinct)) == len(full) > len(set(short))  # e.g. three cutlass::Kernel2 rows
    for s, d in zip(short, distinct):
        assert d.startswith(s)
        if short.count(s) == 1:
            assert d == s  # unique names stay short


def test_distinct_kernel_names_show_the_difference():
    names = ["void cutlass::Kernel2<cutlass_80_simt_sgemm_128x256_8x4_nt_align1>(Params)",
             "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(Params)", "Memcpy HtoD (Pageable -> Device)"]
    assert query.distinct_kernel_names(names) == ["cutlass::Kernel2 [cutlass_80_simt_sgemm_128x256_8x4_nt]",
                                                  "cutlass::Kernel2 [cutlass_80_simt_sgemm_256x128_8x4_nn]",
                                                  "Memcpy HtoD (Pageable -> Device)"]


def test_view_indexes_fill_the_span_once_per_model():
    """The window's first paint asks for span_ns several times: computed once per model (in the load
    worker, by view_indexes), equal to the brute-force span."""
    ts = load(shared_trace("gpu_issues.pt.trace.json.gz"), use_cache=False)
    m = ts.primary
    s = m.slices
    indexes = index_cache.view_indexes(ts)
    assert len(indexes) == len(ts.models) and isinstance(indexes[0], query.SliceIndex)
    first = m.span_ns
    assert first is m.span_ns  # memoised: the same tuple, no second pass
    assert first == (int(s.ts_ns.min()), int((s.ts_ns + s.dur_ns).max()))
