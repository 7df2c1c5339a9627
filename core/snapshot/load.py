"""`load_snapshot(path)`: a `_dump_snapshot` pickle -> MemorySnapshot, without executing code."""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from core.analysis.tree import is_library_frame
from core.snapshot.model import (ACTION_CODES, BLOCK_STATE_CODES, Action, BlockState, BlockTable, DeviceTrace,
                                 MemorySnapshot, SegmentTable, StackTable, Window)
from core.snapshot.detect import SNAPSHOT_SUFFIXES, is_snapshot_path  # noqa: F401 (re-exported)
from core.snapshot.unpickle import read_pickle_bytes, safe_loads
from core.trace.model import TraceParseError

log = logging.getLogger(__name__)

MAX_STACK_FRAMES = 512  # deeper stacks are cut (real ones are ~40-80 frames incl. C++)
MAX_DEVICES = 1024  # distinct device ids (a node has <= 16 GPUs); more would make the per-device views quadratic
MAX_SETTING_CHARS = 1000  # an allocator setting is a short value


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
    """The unpickled object -> MemorySnapshot; anything not shaped like a snapshot -> TraceParseError."""
    if isinstance(obj, list) and all(isinstance(s, dict) and "total_size" in s for s in obj):
        obj = {"segments": obj}  # torch.cuda.memory_snapshot() (segments only)
    if not isinstance(obj, dict) or not isinstance(obj.get("segments"), list):
        raise TraceParseError(path, f"pickle holds {_kind(obj)}, not a CUDA memory snapshot (no 'segments')")
    traces_raw = obj.get("device_traces") or []
    if not isinstance(traces_raw, list):
        raise TraceParseError(path, "'device_traces' is not a list: not a CUDA memory snapshot")
    interner = _Interner()
    warnings: list[str] = []
    try:
        segments, blocks = _segments(obj["segments"], interner)
        traces = tuple(t for d, ring in enumerate(traces_raw) if (t := _trace(d, ring, interner)) is not None)
        windows = _windows(obj.get("external_annotations"))
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise TraceParseError(path, f"malformed memory snapshot ({type(exc).__name__}: {exc})") from None
    n_devices = len(np.unique(segments.device)) + len(traces)
    if n_devices > MAX_DEVICES:
        raise TraceParseError(path, f"snapshot names {n_devices:,} devices (at most {MAX_DEVICES}): "
                                    "not a real CUDA memory snapshot")
    if not traces:
        warnings.append("no allocator trace (record with torch.cuda.memory._record_memory_history() "
                        "before the snapshot): only the state at snapshot time is shown")
    settings = obj.get("allocator_settings")
    return MemorySnapshot(path, segments, blocks, traces, interner.table(),
                          _plain(settings) if isinstance(settings, dict) else {}, windows, tuple(warnings))


def _plain(value, depth: int = 0):
    """Allocator settings as plain JSON: string keys (a tuple key would break `info --json`), finite
    numbers, short strings, at most 8 levels deep (the unpickler already bounded it to MAX_DEPTH)."""
    if isinstance(value, dict):
        if depth >= 8:
            return {}
        return {_text(k): _plain(v, depth + 1) for k, v in list(value.items())[:1000]}
    if isinstance(value, (list, tuple)):
        return [] if depth >= 8 else [_plain(v, depth + 1) for v in value[:1000]]
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if abs(value) < 1 << 63 else _text(value)
    if isinstance(value, float):
        return value if np.isfinite(value) else None
    return _text(value)


def _text(value) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text[:MAX_SETTING_CHARS]


def _kind(obj) -> str:
    return f"a {type(obj).__name__}"


def _segments(raw: list, interner: _Interner) -> tuple[SegmentTable, BlockTable]:
    segs = [s for s in raw if isinstance(s, dict)]
    pool_ids = tuple(_pool_id(s.get("segment_pool_id")) for s in segs)
    table = SegmentTable(
        device=np.array([int(s.get("device", 0)) for s in segs], np.int32),
        address=np.array([int(s["address"]) for s in segs], np.int64),
        total_size=np.array([int(s["total_size"]) for s in segs], np.int64),
        allocated_size=np.array([int(s.get("allocated_size", 0)) for s in segs], np.int64),
        active_size=np.array([int(s.get("active_size", 0)) for s in segs], np.int64),
        stream=np.array([int(s.get("stream", 0)) for s in segs], np.int64),
        pool_large=np.array([s.get("segment_type") == "large" for s in segs], bool),
        pool_id=pool_ids)
    rows = [(i, b) for i, s in enumerate(segs) for b in (s.get("blocks") or []) if isinstance(b, dict)]
    other = BlockState.OTHER.value
    blocks = BlockTable(
        segment=np.array([i for i, _ in rows], np.int32),
        address=np.array([int(b.get("address", 0)) for _, b in rows], np.int64),
        size=np.array([int(b.get("size", 0)) for _, b in rows], np.int64),
        requested_size=np.array([int(b.get("requested_size", b.get("size", 0))) for _, b in rows], np.int64),
        state=np.array([BLOCK_STATE_CODES.get(b.get("state"), other) for _, b in rows], np.int8),
        stack=np.array([interner.stack(b.get("frames")) for _, b in rows], np.int32))
    return table, blocks


def _pool_id(v) -> tuple[int, int]:
    if isinstance(v, (tuple, list)) and len(v) == 2:
        return int(v[0]), int(v[1])
    return (0, 0)


def _trace(device: int, ring, interner: _Interner) -> DeviceTrace | None:
    if not isinstance(ring, list) or not ring:
        return None
    ev = [e for e in ring if isinstance(e, dict)]
    other = Action.OTHER.value
    return DeviceTrace(
        device=device,
        action=np.array([ACTION_CODES.get(e.get("action"), other) for e in ev], np.int8),
        addr=np.array([int(e.get("addr", 0)) for e in ev], np.int64),
        size=np.array([int(e.get("size", 0)) for e in ev], np.int64),
        stream=np.array([int(e.get("stream", 0)) for e in ev], np.int64),
        time_ns=np.array([int(e.get("time_us", 0)) for e in ev], np.int64) * 1000,
        stack=np.array([interner.stack(e.get("frames")) for e in ev], np.int32))


def _windows(raw) -> tuple[Window, ...]:
    """Pair START/END annotations by (name, device); unmatched starts are dropped."""
    if not isinstance(raw, list):
        return ()
    open_: dict[tuple[str, int], int] = {}
    out: list[Window] = []
    for a in raw:
        if not isinstance(a, dict) or "time_us" not in a:
            continue
        key = (str(a.get("name", "")), int(a.get("device", 0)))
        t_ns = int(a["time_us"]) * 1000
        if a.get("stage") == "START":
            open_[key] = t_ns
        elif a.get("stage") == "END" and key in open_:
            out.append(Window(key[0], key[1], open_.pop(key), t_ns))
    return tuple(sorted(out, key=lambda w: w.t0_ns))


def _line(v) -> int:
    """A frame's line number as the int32 column holds it; anything else (2**31, "12", 1.5, inf) is 0 -
    line 2**31 was an OverflowError traceback (found by the slow property run)."""
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**31 else 0


class _Interner:
    """Frames -> ids, stacks (tuples of frame ids) -> ids. Pickle memoisation shares identical frame lists,
    so a cache keyed by the list's id() skips most work (the lists stay alive in the unpickled object)."""

    def __init__(self) -> None:
        self._frame_ids: dict[tuple, int] = {}
        self._stack_ids: dict[tuple, int] = {}
        self._by_obj: dict[int, int] = {}
        self.names: list[str] = []
        self.files: list[str] = []
        self.lines: list[int] = []
        self.stacks: list[tuple[int, ...]] = []

    def stack(self, frames) -> int:
        if not isinstance(frames, list) or not frames:
            return -1
        hit = self._by_obj.get(id(frames))
        if hit is not None:
            return hit
        key = tuple(self._frame(f) for f in frames[:MAX_STACK_FRAMES] if isinstance(f, dict))
        sid = self._stack_ids.get(key)
        if sid is None:
            sid = self._stack_ids[key] = len(self.stacks)
            self.stacks.append(key)
        self._by_obj[id(frames)] = sid
        return sid

    def _frame(self, f: dict) -> int:
        key = (str(f.get("filename", "")), _line(f.get("line")), str(f.get("name", "")))
        fid = self._frame_ids.get(key)
        if fid is None:
            fid = self._frame_ids[key] = len(self.names)
            self.files.append(key[0])
            self.lines.append(key[1])
            self.names.append(key[2])
        return fid

    def table(self) -> StackTable:
        is_user = np.array([f.endswith(".py") and not is_library_frame(f) for f in self.files], bool)
        lens = np.array([len(s) for s in self.stacks], np.int64)
        offsets = np.zeros(len(self.stacks) + 1, np.int64)
        np.cumsum(lens, out=offsets[1:])
        flat = np.fromiter((f for s in self.stacks for f in s), np.int32, int(offsets[-1]))
        user = np.full(len(self.stacks), -1, np.int32)
        if len(flat):
            hit = is_user[flat]
            # innermost user frame per stack: the first hit at or after each stack's offset
            idx = np.flatnonzero(hit)
            pos = np.searchsorted(idx, offsets[:-1])
            ok = pos < len(idx)
            first = np.where(ok, idx[np.minimum(pos, max(len(idx) - 1, 0))], -1) if len(idx) else np.full(len(pos), -1)
            ok &= first < offsets[1:]
            user[ok] = flat[first[ok]]
        return StackTable(tuple(self.names), tuple(self.files), np.array(self.lines, np.int32), offsets, flat, user)
