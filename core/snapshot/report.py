"""Everything a snapshot viewer shows, computed off the UI thread: `iter_snapshot_report(path)` yields
core.trace.loader.Progress and returns a SnapshotReport (the snapshot, each device's active-memory
timeline, the largest allocations live at its peak and the per-allocation block layout)."""
from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

from core.generators import result_of
from core.snapshot.blocks import BlockLayout, block_layout
from core.snapshot.load import from_dict
from core.snapshot.model import MemorySnapshot
from core.snapshot.timeline import ActiveTimeline, LiveAllocation, active_timeline, peak_allocations
from core.snapshot.unpickle import read_pickle_bytes, safe_loads
from core.trace.loader import Progress
from core.trace.model import TraceParseError

TOP_AT_PEAK = 50


@dataclass(frozen=True, slots=True)
class DeviceReport:
    timeline: ActiveTimeline
    top_at_peak: tuple[LiveAllocation, ...]
    blocks: BlockLayout | None = None  # the per-allocation view's layout (core.snapshot.blocks)


@dataclass(frozen=True, slots=True)
class SnapshotReport:
    snapshot: MemorySnapshot
    devices: dict[int, DeviceReport]

    @property
    def path(self) -> str:
        return self.snapshot.path


def iter_snapshot_report(path: str | Path, top_n: int = TOP_AT_PEAK) -> Generator[Progress, None, SnapshotReport]:
    try:
        p = Path(path).expanduser()
    except RuntimeError:  # "~nosuchuser"
        raise TraceParseError(path, "no such user for '~' in the path") from None
    name = p.name
    if not p.is_file():
        raise TraceParseError(p, "no such file" if not p.exists() else "not a regular file")
    yield Progress("reading", 0.05, name)
    data = read_pickle_bytes(p)
    yield Progress("unpickling (no code runs)", 0.3, name)
    obj = safe_loads(data, p)
    del data
    yield Progress("building columns", 0.6, name)
    snap = from_dict(obj, str(p))
    del obj
    devices: dict[int, DeviceReport] = {}
    for i, d in enumerate(snap.devices):
        yield Progress("active memory", 0.8 + 0.2 * i / max(len(snap.devices), 1), f"cuda:{d}")
        tl = active_timeline(snap, d)
        devices[d] = DeviceReport(tl, tuple(peak_allocations(snap, tl, top_n)), block_layout(snap, tl))
    return SnapshotReport(snap, devices)


def snapshot_report(path: str | Path, top_n: int = TOP_AT_PEAK) -> SnapshotReport:
    return result_of(iter_snapshot_report(path, top_n))
