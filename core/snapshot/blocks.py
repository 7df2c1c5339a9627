"""Per-allocation layout of a device's allocator trace, as PyTorch memory_viz's "Active Memory Timeline"
draws it: every traced allocation is a block from its `alloc` to its `free_completed` (or the end of the
trace), stacked in allocation order; when a block is freed, the blocks above it slide down by its size.
The top of the stack is the active memory curve (core.snapshot.timeline): the allocations not drawn
one by one (beyond `max_blocks`, the smallest first) and the blocks allocated before the trace began
fill one band between the drawn blocks and that curve.

    layout = block_layout(snapshot, timeline)   # max_blocks: resources/snapshot.toml
    layout.polygon(i)          -> (t_ns, y_bytes) outline of block i (stepped, closed)
    layout.block_at(t_ns, y)   -> block index under a point, -1 for none (hover)

No Qt: the GUI (gui/snapshot/blocks.py) turns the outlines into a few painter paths.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from core import resource_files
from core.snapshot.model import MemorySnapshot
from core.snapshot.timeline import ActiveTimeline, free_event_of_allocs


@lru_cache(maxsize=1)
def max_blocks_default() -> int:
    """resources/snapshot.toml [blocks] max_blocks (its origin is written there)."""
    return int(resource_files.load_toml("snapshot.toml")["blocks"]["max_blocks"])


@dataclass(frozen=True, slots=True)
class BlockLayout:
    device: int
    event: np.ndarray  # int64 alloc event index into the DeviceTrace, per block (allocation order)
    t0_ns: np.ndarray  # int64 alloc time
    t1_ns: np.ndarray  # int64 free time (end of the trace if never freed)
    freed: np.ndarray  # bool: freed inside the trace
    size: np.ndarray  # int64 bytes
    stack: np.ndarray  # int32 StackTable id (-1 = none)
    vert_offsets: np.ndarray  # int64 [n + 1]: block i's bottom edge is vert_t/vert_y[a:b]
    vert_t_ns: np.ndarray  # int64: from this time on ...
    vert_y_bytes: np.ndarray  # int64: ... the block's bottom sits at this height
    rest_t_ns: np.ndarray  # int64: the band of everything not drawn as a block, stepped:
    rest_lo_bytes: np.ndarray  # int64    from the drawn blocks' top
    rest_hi_bytes: np.ndarray  # int64    to the active memory curve
    n_hidden: int  # traced allocations summarised in the band
    end_ns: int  # end of the trace

    def __len__(self) -> int:
        return len(self.event)

    def bottom_at(self, i: int, t_ns: float) -> int:
        a, b = int(self.vert_offsets[i]), int(self.vert_offsets[i + 1])
        k = int(np.searchsorted(self.vert_t_ns[a:b], t_ns, side="right")) - 1
        return int(self.vert_y_bytes[a + max(k, 0)])

    def polygon(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Closed stepped outline of block i: bottom edge left to right, top edge right to left."""
        a, b = int(self.vert_offsets[i]), int(self.vert_offsets[i + 1])
        t = self.vert_t_ns[a:b]
        y = self.vert_y_bytes[a:b]
        t_end = self.t1_ns[i]
        xs = np.repeat(np.append(t, t_end), 2)[1:-1]  # t0 t1 t1 t2 t2 ... t_end
        ys = np.repeat(y, 2)
        top = ys + self.size[i]
        return (np.concatenate((xs, xs[::-1])).astype(np.int64),
                np.concatenate((ys, top[::-1])).astype(np.int64))

    def block_at(self, t_ns: float, y_bytes: float) -> int:
        """The block drawn at (t, y), -1 when the point is in the band, above the stack or off it."""
        live = np.flatnonzero((self.t0_ns <= t_ns) & (t_ns < self.t1_ns))
        for i in live.tolist():
            lo = self.bottom_at(i, t_ns)
            if lo <= y_bytes < lo + int(self.size[i]):
                return i
        return -1


def block_layout(snap: MemorySnapshot, timeline: ActiveTimeline, max_blocks: int | None = None) -> BlockLayout:
    max_blocks = max_blocks_default() if max_blocks is None else max_blocks
    tr = snap.trace(timeline.device)
    end_ns = int(tr.span_ns[1]) if tr is not None and len(tr) else 0
    if tr is None or not len(tr):
        return _empty(timeline.device, end_ns)
    allocs, frees = free_event_of_allocs(tr)
    n_all = len(allocs)
    if n_all > max_blocks:  # the largest are drawn one by one; the rest join the band
        keep = np.sort(np.argsort(-tr.size[allocs], kind="stable")[:max_blocks])
        allocs, frees = allocs[keep], frees[keep]
    size = tr.size[allocs].astype(np.int64)
    t0 = tr.time_ns[allocs].astype(np.int64)
    freed = frees >= 0
    t1 = np.where(freed, tr.time_ns[np.maximum(frees, 0)], end_ns).astype(np.int64)
    offsets, vt, vy = _stack(allocs, frees, size, tr.time_ns)
    rest_t, rest_lo, rest_hi = _rest_band(allocs, frees, size, tr, timeline)
    return BlockLayout(timeline.device, allocs.astype(np.int64), t0, t1, freed, size,
                       tr.stack[allocs].astype(np.int32), offsets, vt, vy, rest_t, rest_lo, rest_hi,
                       n_all - len(allocs), end_ns)


def _stack(allocs: np.ndarray, frees: np.ndarray, size: np.ndarray, time_ns: np.ndarray):
    """Each block's bottom edge over time: its height at alloc (the drawn blocks live then), lowered by
    the size of every older block freed while it lives. One pass over the drawn blocks' events; a free
    touches only the blocks above it (few in practice: training frees in roughly LIFO order)."""
    n = len(allocs)
    ev_index = np.concatenate((allocs, frees[frees >= 0]))
    ev_block = np.concatenate((np.arange(n), np.flatnonzero(frees >= 0)))
    ev_alloc = np.concatenate((np.ones(n, bool), np.zeros(int((frees >= 0).sum()), bool)))
    order = np.argsort(ev_index, kind="stable")
    verts_t: list[list[int]] = [[] for _ in range(n)]
    verts_y: list[list[int]] = [[] for _ in range(n)]
    live: list[int] = []  # drawn blocks now live, in allocation order (= stacking order)
    bottom = np.zeros(n, np.int64)
    top = 0
    sizes = size.tolist()
    for k in order.tolist():
        b = int(ev_block[k])
        t = int(time_ns[ev_index[k]])
        if ev_alloc[k]:
            bottom[b] = top
            verts_t[b].append(t)
            verts_y[b].append(top)
            live.append(b)
            top += sizes[b]
        else:
            i = live.index(b)
            for above in live[i + 1:]:
                bottom[above] -= sizes[b]
                verts_t[above].append(t)
                verts_y[above].append(int(bottom[above]))
            del live[i]
            top -= sizes[b]
    counts = np.fromiter((len(v) for v in verts_t), np.int64, n)
    offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    flat_t = np.fromiter((t for v in verts_t for t in v), np.int64, int(offsets[-1]))
    flat_y = np.fromiter((y for v in verts_y for y in v), np.int64, int(offsets[-1]))
    return offsets, flat_t, flat_y


def _rest_band(allocs, frees, size, tr, timeline: ActiveTimeline):
    """(t, lo, hi): the drawn blocks' total (lo) and the active curve (hi) after each alloc / free."""
    ev = timeline.event
    if not len(ev):
        z = np.zeros(0, np.int64)
        return z, z, z
    delta = np.zeros(len(tr), np.int64)
    delta[allocs] += size
    delta[frees[frees >= 0]] -= size[frees >= 0]
    drawn = np.cumsum(delta)[ev].astype(np.int64)
    active = np.maximum(timeline.active_bytes.astype(np.int64), drawn)  # a ring that lost old allocs
    return timeline.time_ns.astype(np.int64), drawn, active


def _empty(device: int, end_ns: int) -> BlockLayout:
    z = np.zeros(0, np.int64)
    return BlockLayout(device, z, z, z, np.zeros(0, bool), z, np.zeros(0, np.int32), np.zeros(1, np.int64), z, z,
                       z, z, z, 0, end_ns)
