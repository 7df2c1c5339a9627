"""Frames -> ids, stacks (tuples of frame ids) -> ids, for the columns of a snapshot (load.py).

torch shares each frame dict between every stack that holds it and gives every allocation its own frames
list (py_symbolize dedups per captured traceback), and the pickle keeps that sharing. So a frames list is
first looked up by its id(), then by the ids of the frame dicts it holds (a tuple built in C: `map`); the
Python path runs once per distinct stack and once per distinct frame dict. The objects stay alive while
the unpickled snapshot does, so their ids are stable for the whole load. With the C extension built,
rows are first grouped in C by the objects their lists hold (`stack_groups`, compared by pointer): the
Python path then runs once per group (1 GB snapshot: keying 18 -> ~1 CPU s).
"""
from __future__ import annotations

from itertools import repeat
from operator import itemgetter

import numpy as np

from core.snapshot.model import StackTable
from core.trace.event_names import is_library_frame

MAX_STACK_FRAMES = 512  # deeper stacks are cut (real ones are ~40-80 frames incl. C++)
_CHUNK = 1 << 16  # distinct frames lists keyed per pass (bounds the transient tuples)


def _line(v) -> int:
    """A frame's line number as the int32 column holds it; anything else (2**31, "12", 1.5, inf) is 0 -
    line 2**31 was an OverflowError traceback (found by the slow property run)."""
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**31 else 0


def _stack_groups():
    """core.trace._scan.stack_groups (core/snapshot/_stackkeys.h), None when the extension is not built."""
    from core.trace.columns import _scan
    return getattr(_scan, "stack_groups", None) if _scan is not None else None


class Interner:
    def __init__(self) -> None:
        self._frame_ids: dict[tuple, int] = {}
        self._frame_by_obj: dict[int, int] = {}
        self._stack_ids: dict[tuple, int] = {}
        self._by_obj: dict[int, int] = {}
        self._by_frame_ids: dict[tuple, int] = {}  # the ids of a list's elements -> stack id
        self.names: list[str] = []
        self.files: list[str] = []
        self.lines: list[int] = []
        self.stacks: list[tuple[int, ...]] = []

    def stacks_of(self, frame_lists: list) -> np.ndarray:
        """Stack id of each frames list (-1: none, empty or not a list), int32. All per-row work is C
        (`map`): lists already seen by id; the others deduplicated by id, then keyed by the ids of the
        frame dicts they hold (torch shares those), so the Python path (`stack`) runs once per distinct
        stack, not once per allocation."""
        groups = _stack_groups()
        if groups is not None and type(frame_lists) is list:
            ids, reps = groups(frame_lists)  # C: rows grouped by the frame dicts their lists hold
            group = np.frombuffer(ids, np.int64)
            sids = np.fromiter(map(self.stack, reps), np.int64, len(reps))  # Python once per group
            out = np.full(len(group), -1, np.int32)
            ok = group >= 0
            out[ok] = sids[group[ok]]
            return out
        n = len(frame_lists)
        seen = np.fromiter(map(self._by_obj.get, map(id, frame_lists), repeat(-2)), np.int64, n)
        usable = np.fromiter(map(isinstance, frame_lists, repeat(list)), bool, n)
        usable &= np.fromiter(map(bool, frame_lists), bool, n)  # lists only: no __bool__ runs code
        seen[~usable] = -1
        miss = np.flatnonzero(seen == -2)
        if not len(miss):
            return seen.astype(np.int32)
        objs = [frame_lists[k] for k in miss.tolist()]
        distinct = list(dict(zip(map(id, objs), objs)).items())  # one entry per list object
        sid_of: dict[int, int] = {}
        for start in range(0, len(distinct), _CHUNK):
            part = distinct[start:start + _CHUNK]
            keys = list(map(tuple, map(map, repeat(id), map(itemgetter(1), part))))
            sids = list(map(self._by_frame_ids.get, keys))
            for j in [j for j, sid in enumerate(sids) if sid is None]:
                sids[j] = self._by_frame_ids[keys[j]] = self.stack(part[j][1])
            sid_of.update(zip(map(itemgetter(0), part), sids))
        self._by_obj.update(sid_of)
        seen[miss] = np.fromiter(map(sid_of.__getitem__, map(id, objs)), np.int64, len(objs))
        return seen.astype(np.int32)

    def stack(self, frames) -> int:
        if type(frames) is not list or not frames:
            return -1
        hit = self._by_obj.get(id(frames))
        if hit is not None:
            return hit
        cut = frames[:MAX_STACK_FRAMES]
        key = tuple(map(self._frame_by_obj.get, map(id, cut)))
        if None in key or -3 in key:  # a frame dict not seen yet, or not a dict
            key = tuple(self._frame(f) for f in cut if type(f) is dict)
        sid = self._stack_ids.get(key)
        if sid is None:
            sid = self._stack_ids[key] = len(self.stacks)
            self.stacks.append(key)
        self._by_obj[id(frames)] = sid
        return sid

    def _frame(self, f: dict) -> int:
        hit = self._frame_by_obj.get(id(f))
        if hit is not None:
            return hit
        key = (str(f.get("filename", "")), _line(f.get("line")), str(f.get("name", "")))
        fid = self._frame_ids.get(key)
        if fid is None:
            fid = self._frame_ids[key] = len(self.names)
            self.files.append(key[0])
            self.lines.append(key[1])
            self.names.append(key[2])
        self._frame_by_obj[id(f)] = fid
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
