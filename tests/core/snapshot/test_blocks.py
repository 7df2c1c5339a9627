"""Per-allocation layout (memory_viz's stacked blocks): blocks never overlap, the stack's top is the
drawn allocations' total, the band reaches the active curve, and a free slides the blocks above down."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import shared_trace

from core.snapshot import active_timeline, load_snapshot
from core.snapshot.blocks import block_layout, max_blocks_default
from core.snapshot.model import Action, DeviceTrace, MemorySnapshot


@pytest.fixture(scope="module")
def snap():
    return load_snapshot(shared_trace("gpu_memory.snapshot.pickle"))


def _intervals(layout, t):
    live = np.flatnonzero((layout.t0_ns <= t) & (t < layout.t1_ns))
    return sorted((layout.bottom_at(int(i), t), layout.bottom_at(int(i), t) + int(layout.size[i])) for i in live)


def test_blocks_stack_without_overlap_up_to_the_active_curve(snap):
    tl = active_timeline(snap, 0)
    layout = block_layout(snap, tl)
    assert len(layout) == min(max_blocks_default(), len(layout) + layout.n_hidden) and len(layout) > 1000
    for t in np.linspace(tl.time_ns[0], tl.time_ns[-1], 40).astype(np.int64).tolist() + [tl.peak_time_ns]:
        iv = _intervals(layout, t)
        assert all(b[0] >= a[1] for a, b in zip(iv, iv[1:])), "blocks overlap"
        assert not iv or iv[0][0] == 0  # stacked from the bottom, no holes
        assert all(b[0] == a[1] for a, b in zip(iv, iv[1:])), "a hole in the stack"
        k = int(np.searchsorted(layout.rest_t_ns, t, side="right")) - 1
        if k >= 0:
            top = iv[-1][1] if iv else 0
            assert top == layout.rest_lo_bytes[k] <= layout.rest_hi_bytes[k]
    k = int(np.searchsorted(layout.rest_t_ns, tl.peak_time_ns, side="right")) - 1
    assert layout.rest_hi_bytes[k] == tl.peak_bytes  # the band's top is the active-memory curve
    i = layout.block_at(tl.peak_time_ns, 1)
    assert i >= 0 and layout.bottom_at(i, tl.peak_time_ns) == 0
    xs, ys = layout.polygon(i)
    assert len(xs) == len(ys) >= 4 and xs.min() == layout.t0_ns[i] and ys.max() - ys.min() >= layout.size[i]


def test_the_smallest_allocations_beyond_the_limit_join_the_band(snap):
    tl = active_timeline(snap, 0)
    layout = block_layout(snap, tl, max_blocks=200)
    assert len(layout) == 200 and layout.n_hidden > 2000
    full = block_layout(snap, tl)
    assert layout.size.min() >= np.sort(full.size)[-200]  # the largest are kept


def test_a_free_slides_the_blocks_above_down():
    def trace(rows):
        a = np.array(rows, np.int64)
        return DeviceTrace(0, a[:, 0].astype(np.int8), a[:, 1], a[:, 2], np.zeros(len(a), np.int64), a[:, 3],
                           np.full(len(a), -1, np.int32))
    A, F = Action.ALLOC, Action.FREE_COMPLETED
    tr = trace([(A, 0x100, 10, 0), (A, 0x200, 20, 1), (A, 0x300, 30, 2), (F, 0x200, 20, 3), (F, 0x100, 10, 4)])
    from core.snapshot.model import BlockTable, SegmentTable, StackTable
    z = np.zeros(0, np.int64)
    snap = MemorySnapshot("x", SegmentTable(np.zeros(0, np.int32), z, z, z, z, z, np.zeros(0, bool), ()),
                          BlockTable(np.zeros(0, np.int32), z, z, z, np.zeros(0, np.int8), np.zeros(0, np.int32)),
                          (tr,), StackTable((), (), np.zeros(0, np.int32), np.zeros(1, np.int64),
                                            np.zeros(0, np.int32), np.zeros(0, np.int32)))
    layout = block_layout(snap, active_timeline(snap, 0))
    third = 2  # the 30-byte block: at 30 (t 2), 10 after the 20 is freed (t 3), 0 after the 10 (t 4)
    assert [layout.bottom_at(third, t) for t in (2, 3, 4)] == [30, 10, 0]
    assert layout.block_at(3.5, 15) == third and layout.block_at(3.5, 5) == 0 and layout.block_at(3.5, 45) == -1
