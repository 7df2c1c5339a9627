"""Columnar model of a CUDA memory snapshot: segments, blocks, per-device allocator traces, interned stacks."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np


class Action(IntEnum):
    """`device_traces[d][i]["action"]` of the CUDA caching allocator (c10 TraceEntry::Action)."""

    ALLOC = 0
    FREE_REQUESTED = 1
    FREE_COMPLETED = 2
    SEGMENT_ALLOC = 3
    SEGMENT_FREE = 4
    SEGMENT_MAP = 5
    SEGMENT_UNMAP = 6
    SNAPSHOT = 7
    OOM = 8
    OTHER = 9


ACTION_CODES = {a.name.lower(): a.value for a in Action}


class BlockState(IntEnum):
    ACTIVE_ALLOCATED = 0
    ACTIVE_PENDING_FREE = 1
    INACTIVE = 2
    OTHER = 3


BLOCK_STATE_CODES = {s.name.lower(): s.value for s in BlockState}


@dataclass(frozen=True, slots=True)
class StackTable:
    """Interned frames and stacks. Stack `s` = frame ids `frames[offsets[s]:offsets[s+1]]`, innermost first.

    `user_frame[s]` is the innermost frame of user code (Python, not torch/site-packages), or -1.
    """

    frame_name: tuple[str, ...]
    frame_file: tuple[str, ...]
    frame_line: np.ndarray  # int32 per frame
    offsets: np.ndarray  # int64, len = stacks + 1
    frames: np.ndarray  # int32 frame ids
    user_frame: np.ndarray  # int32 per stack, -1 = none

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def stack(self, s: int) -> list[int]:
        if s < 0:
            return []
        return [int(f) for f in self.frames[self.offsets[s]:self.offsets[s + 1]]]

    def describe_frame(self, f: int) -> str:
        """`file:line in name` (C++ frames without a file: just the name)."""
        if f < 0:
            return ""
        file, line, name = self.frame_file[f], int(self.frame_line[f]), self.frame_name[f]
        if not file or file == "??":
            return name
        return f"{file}:{line} in {name}" if line else f"{file} in {name}"

    def user_frame_text(self, s: int) -> str:
        return self.describe_frame(int(self.user_frame[s])) if s >= 0 else ""

    def op_name(self, s: int) -> str:
        """The innermost ATen operator on a stack (`aten::nll_loss_backward`), "" if none: what allocated,
        for stacks without Python frames (the autograd engine's backward thread)."""
        for f in self.stack(s):
            name = self.frame_name[f]
            i = name.find("at::_ops::")
            if i >= 0:
                op = name[i + 10:].split("::", 1)[0]
                return f"aten::{op}"
        return ""

    def where(self, s: int) -> str:
        """User frame if the stack has one, else the ATen op it ran in."""
        return self.user_frame_text(s) or (f"{op} (no Python frame)" if (op := self.op_name(s)) else "")


@dataclass(frozen=True, slots=True)
class SegmentTable:
    """One row per cudaMalloc'd segment at snapshot time."""

    device: np.ndarray  # int32
    address: np.ndarray  # int64
    total_size: np.ndarray  # int64 bytes reserved
    allocated_size: np.ndarray  # int64 bytes in live tensors
    active_size: np.ndarray  # int64 allocated + pending free
    stream: np.ndarray  # int64
    pool_large: np.ndarray  # bool: segment_type == "large"
    pool_id: tuple[tuple[int, int], ...]  # segment_pool_id ((0, 0) = default pool)

    def __len__(self) -> int:
        return len(self.address)


@dataclass(frozen=True, slots=True)
class BlockTable:
    """Blocks inside segments at snapshot time (`segments[i]["blocks"]`)."""

    segment: np.ndarray  # int32 row in SegmentTable
    address: np.ndarray  # int64
    size: np.ndarray  # int64
    requested_size: np.ndarray  # int64
    state: np.ndarray  # int8 BlockState
    stack: np.ndarray  # int32 into StackTable, -1 = none

    def __len__(self) -> int:
        return len(self.address)


@dataclass(frozen=True, slots=True)
class DeviceTrace:
    """The allocator's trace ring of one device, in event order."""

    device: int
    action: np.ndarray  # int8 Action
    addr: np.ndarray  # int64
    size: np.ndarray  # int64 bytes
    stream: np.ndarray  # int64
    time_ns: np.ndarray  # int64, absolute (time_us * 1000)
    stack: np.ndarray  # int32 into StackTable, -1 = none

    def __len__(self) -> int:
        return len(self.action)

    @property
    def span_ns(self) -> tuple[int, int]:
        if not len(self.time_ns):
            return (0, 0)
        return int(self.time_ns.min()), int(self.time_ns.max())


@dataclass(frozen=True, slots=True)
class Window:
    """A START/END pair of `external_annotations` (e.g. `ProfilerStep#3`, `Optimizer.step#AdamW.step`)."""

    name: str
    device: int
    t0_ns: int
    t1_ns: int


@dataclass(frozen=True, slots=True)
class MemorySnapshot:
    path: str
    segments: SegmentTable
    blocks: BlockTable
    traces: tuple[DeviceTrace, ...]  # only devices whose ring has events
    stacks: StackTable
    allocator_settings: dict = field(default_factory=dict)
    windows: tuple[Window, ...] = ()  # annotated ranges, in start order
    warnings: tuple[str, ...] = ()

    @property
    def devices(self) -> list[int]:
        return sorted({int(d) for d in self.segments.device} | {t.device for t in self.traces})

    def steps(self, device: int | None = None) -> list[Window]:
        """`ProfilerStep#N` windows (from a torch.profiler run), in time order."""
        return [w for w in self.windows if w.name.startswith("ProfilerStep#") and device in (None, w.device)]

    def trace(self, device: int) -> DeviceTrace | None:
        return next((t for t in self.traces if t.device == device), None)  # <= MAX_DEVICES (load.py)

    def reserved_bytes(self, device: int | None = None) -> int:
        m = self._dev_mask(device)
        return int(self.segments.total_size[m].sum())

    def allocated_bytes(self, device: int | None = None) -> int:
        m = self._dev_mask(device)
        return int(self.segments.allocated_size[m].sum())

    def _dev_mask(self, device: int | None) -> np.ndarray:
        d = self.segments.device
        return np.ones(len(d), bool) if device is None else d == device
