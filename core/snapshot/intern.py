"""Frames -> ids, stacks (tuples of frame ids) -> ids, for the columns of a snapshot (load.py).

torch shares each frame dict between every stack that holds it and gives every allocation its own frames
list (py_symbolize dedups per captured traceback), and the pickle keeps that sharing. So a stack is first
looked up by its list's id(), then each frame by its dict's id(), both in C (`map`); the Python path per
frame runs once per distinct frame dict, the tuple key once per distinct frames list. The objects stay
alive while the unpickled snapshot does, so their ids are stable for the whole load.
"""
from __future__ import annotations

from itertools import chain, repeat

import numpy as np

from core.analysis.tree import is_library_frame
from core.snapshot.model import StackTable

MAX_STACK_FRAMES = 512  # deeper stacks are cut (real ones are ~40-80 frames incl. C++)
_W1, _W2 = np.random.default_rng(37).integers(1, 2**63, (2, MAX_STACK_FRAMES), dtype=np.uint64) | np.uint64(1)


def _line(v) -> int:
    """A frame's line number as the int32 column holds it; anything else (2**31, "12", 1.5, inf) is 0 -
    line 2**31 was an OverflowError traceback (found by the slow property run)."""
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**31 else 0


class Interner:
    def __init__(self) -> None:
        self._frame_ids: dict[tuple, int] = {}
        self._frame_by_obj: dict[int, int] = {}
        self._stack_ids: dict[tuple, int] = {}
        self._by_obj: dict[int, int] = {}
        self.names: list[str] = []
        self.files: list[str] = []
        self.lines: list[int] = []
        self.stacks: list[tuple[int, ...]] = []

    def stacks_of(self, frame_lists: list) -> np.ndarray:
        """Stack id of each frames list (-1: none, empty or not a list), int32. Vectorised: the lists not
        seen yet are flattened in C, their frames looked up by id in C, and equal stacks grouped by a
        64-bit hash pair over numpy, checked element by element (a collision falls back to `stack`)."""
        n = len(frame_lists)
        seen = np.fromiter(map(self._by_obj.get, map(id, frame_lists), repeat(-2)), np.int64, n)
        truthy = np.fromiter(map(bool, frame_lists), bool, n)  # plain data only: no __bool__ runs code
        seen[~truthy] = -1
        miss = np.flatnonzero(seen == -2)
        if len(miss):
            objs = [frame_lists[k] for k in miss.tolist()]
            _, first, inverse = np.unique(np.fromiter(map(id, objs), np.int64, len(objs)), return_index=True,
                                          return_inverse=True)
            distinct = [objs[i] for i in first.tolist()]
            seen[miss] = self._intern_lists(distinct)[inverse.ravel()]
        return seen.astype(np.int32)

    def _intern_lists(self, lists: list) -> np.ndarray:
        ids = np.full(len(lists), -1, np.int64)
        is_list = np.fromiter(map(isinstance, lists, repeat(list)), bool, len(lists))
        rows = np.flatnonzero(is_list)
        cut = [lists[i] if len(lists[i]) <= MAX_STACK_FRAMES else lists[i][:MAX_STACK_FRAMES] for i in rows.tolist()]
        lens = np.fromiter(map(len, cut), np.int64, len(cut))
        flat = list(chain.from_iterable(cut))
        by_id = dict(zip(map(id, flat), flat))  # in C: one entry per distinct element (frame dicts are shared)
        fbo = self._frame_by_obj
        for key in [k for k in by_id if k not in fbo]:  # frames not seen yet; -3: not a dict (dropped)
            f = by_id[key]
            fbo[key] = self._frame(f) if type(f) is dict else -3
        fid = np.fromiter(map(fbo.__getitem__, map(id, flat)), np.int64, len(flat))
        if len(fid):
            keep = fid != -3
            if not keep.all():
                row_of = np.repeat(np.arange(len(cut)), lens)
                lens = np.bincount(row_of[keep], minlength=len(cut)).astype(np.int64)
                fid = fid[keep]
        offsets = np.zeros(len(cut) + 1, np.int64)
        np.cumsum(lens, out=offsets[1:])
        pos = np.arange(len(fid)) - np.repeat(offsets[:-1], lens)
        row_of = np.repeat(np.arange(len(cut)), lens)
        h1 = np.zeros(len(cut), np.uint64)
        h2 = np.zeros(len(cut), np.uint64)
        filled = np.flatnonzero(lens > 0)
        if len(filled):  # rows are contiguous in fid: one reduceat per hash (uint64 wraps, as a hash should)
            value = fid.astype(np.uint64) + np.uint64(1)
            h1[filled] = np.add.reduceat(value * _W1[pos], offsets[filled])
            h2[filled] = np.add.reduceat(value * _W2[pos], offsets[filled])
        keys = np.stack([lens.astype(np.uint64), h1, h2], axis=1)
        _, rep, group = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        group = group.ravel()
        rep_row = rep[group]  # each row's representative
        same = fid == fid[offsets[rep_row][row_of] + pos] if len(fid) else np.zeros(0, bool)
        if not same.all():  # a hash collision (never seen): the exact path
            for r, i in enumerate(rows.tolist()):
                ids[i] = self.stack(lists[i])
            return ids
        group_ids = np.empty(len(rep), np.int64)
        for g, r in enumerate(rep.tolist()):
            a, b = int(offsets[r]), int(offsets[r + 1])
            key = tuple(fid[a:b].tolist())
            if not key:
                group_ids[g] = -1
                continue
            sid = self._stack_ids.get(key)
            if sid is None:
                sid = self._stack_ids[key] = len(self.stacks)
                self.stacks.append(key)
            group_ids[g] = sid
        ids[rows] = group_ids[group]
        for i, sid in zip(rows.tolist(), ids[rows].tolist()):
            self._by_obj[id(lists[i])] = sid
        return ids

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
