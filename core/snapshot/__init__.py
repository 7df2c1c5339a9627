"""PyTorch CUDA memory snapshots (`torch.cuda.memory._dump_snapshot` pickles), loaded without executing code.

`load_snapshot(path) -> MemorySnapshot` (columnar, numpy); `active_timeline` / `peak_allocations` derive
the Active Memory Timeline and the largest live allocations at its peak. Qt-free.
Names are imported from their submodules when first asked for (PEP 562): `ptprof info` on a trace
only needs `is_snapshot_path`, and the rest took ~10 ms of its start.
"""
from __future__ import annotations

import importlib

_WHERE = {
    "is_snapshot_path": "detect", "load_snapshot": "load",
    "Action": "model", "DeviceTrace": "model", "MemorySnapshot": "model", "SegmentTable": "model",
    "StackTable": "model", "Window": "model",
    "ActiveTimeline": "timeline", "LiveAllocation": "timeline", "active_timeline": "timeline",
    "peak_allocations": "timeline",
    "ForbiddenPickleGlobal": "unpickle", "safe_loads": "unpickle",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
