"""Derived series of a snapshot: active memory over time per device, its peak, and what is live at the peak.

Active memory follows PyTorch's memory_viz "Active Memory Timeline": `alloc` adds the block's size,
`free_completed` removes it (a `free_requested` block is still active until its stream work completes).
Allocations made before the trace ring began show as a constant baseline: the device's active bytes at
snapshot time (segments' `active_size`) minus the trace's net change.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.snapshot.model import Action, DeviceTrace, MemorySnapshot


@dataclass(frozen=True, slots=True)
class ActiveTimeline:
    device: int
    event: np.ndarray  # int64 index into the DeviceTrace of each step (alloc / free_completed only)
    time_ns: np.ndarray  # int64 absolute
    active_bytes: np.ndarray  # int64 active bytes after each step
    baseline_bytes: int  # active before the first traced event
    peak_bytes: int
    peak_step: int  # index into the series (-1 = empty series)

    @property
    def peak_event(self) -> int:
        return int(self.event[self.peak_step]) if self.peak_step >= 0 else -1

    @property
    def peak_time_ns(self) -> int:
        return int(self.time_ns[self.peak_step]) if self.peak_step >= 0 else 0

    def __len__(self) -> int:
        return len(self.event)


@dataclass(frozen=True, slots=True)
class LiveAllocation:
    """One block live at the peak."""

    addr: int
    size: int
    alloc_time_ns: int
    stack: int  # StackTable id, -1 = none
    user_frame: str  # `file:line in fn` of user code, "" if the stack has none
    op: str  # innermost ATen op on the stack (`aten::mm`), "" if none

    @property
    def where(self) -> str:
        return self.user_frame or (f"{self.op} (no Python frame)" if self.op else "")


def active_timeline(snap: MemorySnapshot, device: int) -> ActiveTimeline:
    tr = snap.trace(device)
    end_active = int(snap.segments.active_size[snap.segments.device == device].sum())
    if tr is None or not len(tr):
        return ActiveTimeline(device, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64),
                              end_active, end_active, -1)
    is_alloc = tr.action == Action.ALLOC
    is_free = tr.action == Action.FREE_COMPLETED
    ev = np.flatnonzero(is_alloc | is_free)
    delta = np.where(is_alloc[ev], tr.size[ev], -tr.size[ev])
    cum = np.cumsum(delta)
    net = int(cum[-1]) if len(cum) else 0
    # never below zero: a ring that lost its oldest allocs still frees them
    baseline = max(end_active - net, -int(cum.min()) if len(cum) else 0, 0)
    active = cum + baseline
    step = int(np.argmax(active)) if len(active) else -1
    peak = int(active[step]) if step >= 0 else baseline
    return ActiveTimeline(device, ev.astype(np.int64), tr.time_ns[ev], active, baseline, peak, step)


def free_event_of_allocs(tr: DeviceTrace) -> tuple[np.ndarray, np.ndarray]:
    """(alloc event indexes, index of the free_completed that ends each, or -1 if still live at the end)."""
    ev = np.flatnonzero((tr.action == Action.ALLOC) | (tr.action == Action.FREE_COMPLETED))
    order = ev[np.lexsort((ev, tr.addr[ev]))]  # by address, then event order
    is_alloc = tr.action[order] == Action.ALLOC
    nxt = np.append(order[1:], -1)
    same = np.append(tr.addr[order[1:]] == tr.addr[order[:-1]], False)
    nxt_free = same & np.append(tr.action[order[1:]] == Action.FREE_COMPLETED, False)
    allocs = order[is_alloc]
    frees = np.where(nxt_free[is_alloc], nxt[is_alloc], -1)
    srt = np.argsort(allocs, kind="stable")
    return allocs[srt], frees[srt]


def live_at(tr: DeviceTrace, event: int) -> np.ndarray:
    """Alloc event indexes whose blocks are live right after trace event `event`."""
    allocs, frees = free_event_of_allocs(tr)
    live = (allocs <= event) & ((frees < 0) | (frees > event))
    return allocs[live]


def peak_allocations(snap: MemorySnapshot, timeline: ActiveTimeline, n: int = 20) -> list[LiveAllocation]:
    """The `n` largest traced blocks live at the timeline's peak, largest first."""
    tr = snap.trace(timeline.device)
    if tr is None or timeline.peak_step < 0:
        return []
    live = live_at(tr, timeline.peak_event)
    top = live[np.argsort(-tr.size[live], kind="stable")[:n]]
    st = snap.stacks
    return [LiveAllocation(int(tr.addr[i]), int(tr.size[i]), int(tr.time_ns[i]), int(tr.stack[i]),
                           st.user_frame_text(int(tr.stack[i])), st.op_name(int(tr.stack[i]))) for i in top]
