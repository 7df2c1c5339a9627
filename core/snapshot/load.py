"""`load_snapshot(path)`: a `_dump_snapshot` pickle -> MemorySnapshot, without executing code."""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from core.snapshot import columns
from core.snapshot.columns import MAX_DEVICES
from core.snapshot.detect import SNAPSHOT_SUFFIXES, is_snapshot_path  # noqa: F401 (re-exported)
from core.snapshot.intern import MAX_STACK_FRAMES, Interner  # noqa: F401 (re-exported)
from core.snapshot.model import MemorySnapshot
from core.snapshot.unpickle import read_pickle_bytes, safe_loads
from core.trace.model import TraceParseError

log = logging.getLogger(__name__)

MAX_SETTING_CHARS = 1000  # an allocator setting is a short value
MAX_SETTING_VALUES = 10_000  # values kept from the allocator settings (real ones: ~10)


def load_snapshot(path: str | Path) -> MemorySnapshot:
    try:
        p = Path(path).expanduser()
    except RuntimeError:  # "~nosuchuser"
        raise TraceParseError(path, "no such user for '~' in the path") from None
    if not p.exists():
        raise TraceParseError(p, "no such file or directory")
    if not p.is_file():
        raise TraceParseError(p, "not a regular file")
    obj = safe_loads(read_pickle_bytes(p), p)
    return from_dict(obj, str(p))


def from_dict(obj, path: str) -> MemorySnapshot:
    """The unpickled object -> MemorySnapshot; anything not shaped like a snapshot -> TraceParseError.
    Columns are read a field at a time in C (`map` + `np.fromiter`), checked for range, and what shared
    references could multiply (device rings, block lists) is bounded before it is read (columns.py)."""
    if isinstance(obj, list) and obj and all(isinstance(s, dict) and "total_size" in s for s in obj[:1000]):
        obj = {"segments": obj}  # torch.cuda.memory_snapshot() (segments only)
    if not isinstance(obj, dict) or not isinstance(obj.get("segments"), list):
        raise TraceParseError(path, f"pickle holds {_kind(obj)}, not a CUDA memory snapshot (no 'segments')")
    traces_raw = obj.get("device_traces") or []
    if not isinstance(traces_raw, list):
        raise TraceParseError(path, "'device_traces' is not a list: not a CUDA memory snapshot")
    with columns.no_gc():
        return _from_dict(obj, traces_raw, path)


def _from_dict(obj: dict, traces_raw: list, path: str) -> MemorySnapshot:
    interner = Interner()
    warnings: list[str] = []
    try:
        columns.check_rows(obj["segments"], traces_raw)
        segments, blocks = columns.segments(obj["segments"], interner, warnings)
        traces = tuple(t for d, ring in enumerate(traces_raw)
                       if (t := columns.trace(d, ring, interner, warnings)) is not None)
        windows = columns.windows(obj.get("external_annotations"), warnings)
    except columns.Malformed as exc:
        raise TraceParseError(path, f"malformed memory snapshot: {exc}") from None
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise TraceParseError(path, f"malformed memory snapshot ({type(exc).__name__}: {str(exc)[:200]})") from None
    n_devices = len(np.unique(segments.device)) + len(traces)
    if n_devices > MAX_DEVICES:
        raise TraceParseError(path, f"snapshot names {n_devices:,} devices (at most {MAX_DEVICES}): "
                                    "not a real CUDA memory snapshot")
    if not traces:
        warnings.append("no allocator trace (record with torch.cuda.memory._record_memory_history() "
                        "before the snapshot): only the state at snapshot time is shown")
    settings = obj.get("allocator_settings")
    budget = [MAX_SETTING_VALUES]
    return MemorySnapshot(path, segments, blocks, traces, interner.table(),
                          _plain(settings, budget) if isinstance(settings, dict) else {}, windows, tuple(warnings))


def _plain(value, budget: list, depth: int = 0):
    """Allocator settings as plain JSON: string keys (a tuple key would break `info --json`), finite
    numbers, short strings, at most 8 levels deep and MAX_SETTING_VALUES values in all (shared references
    cannot multiply the walk)."""
    budget[0] -= 1
    if budget[0] < 0:
        return None
    if isinstance(value, dict):
        if depth >= 8:
            return {}
        return {_text(k): _plain(v, budget, depth + 1) for k, v in list(value.items())[:1000]}
    if isinstance(value, (list, tuple)):
        return [] if depth >= 8 else [_plain(v, budget, depth + 1) for v in value[:1000]]
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if abs(value) < 1 << 63 else _text(value)
    if isinstance(value, float):
        return value if np.isfinite(value) else None
    return _text(value)


def _text(value) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        return f"<an integer of {value.bit_length()} bits>"  # str() of one past 4,300 digits raises
    text = value if isinstance(value, str) else repr(value)
    return text[:MAX_SETTING_CHARS]


def _kind(obj) -> str:
    return f"a {type(obj).__name__}"
