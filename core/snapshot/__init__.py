"""PyTorch CUDA memory snapshots (`torch.cuda.memory._dump_snapshot` pickles), loaded without executing code.

`load_snapshot(path) -> MemorySnapshot` (columnar, numpy); `active_timeline` / `peak_allocations` derive
the Active Memory Timeline and the largest live allocations at its peak. Qt-free.
"""
from core.snapshot.load import is_snapshot_path, load_snapshot
from core.snapshot.model import Action, DeviceTrace, MemorySnapshot, SegmentTable, StackTable, Window
from core.snapshot.timeline import ActiveTimeline, LiveAllocation, active_timeline, peak_allocations
from core.snapshot.unpickle import ForbiddenPickleGlobal, safe_loads

__all__ = ["Action", "ActiveTimeline", "DeviceTrace", "ForbiddenPickleGlobal", "LiveAllocation", "MemorySnapshot",
           "SegmentTable", "StackTable", "Window", "active_timeline", "is_snapshot_path", "load_snapshot",
           "peak_allocations", "safe_loads"]
