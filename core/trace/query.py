"""Queries a timeline view needs, in numpy only: visible slices, level-of-detail spans, hit tests,
name search and launch / Python-stack lookups.

`SliceIndex` regroups a SliceTable by (track, depth): within one group slices are time ordered and,
for well nested CPU rows and GPU lanes, disjoint, so both their starts and their running-max ends are
sorted and a time window is two `searchsorted` calls. For views where a group has more slices in range
than pixels, `spans()` answers from a cached merged level (gaps below the level's resolution closed),
so a paint never touches more than a few spans per pixel whatever the trace size.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass

import numpy as np

from core.trace.model import FlowKind, TraceModel, TrackKind

RAW_LIMIT = 4096  # slices of one row in view below which spans() reads them directly
_LEVEL_BASE = 4  # merged levels at 4**k ns resolution


@dataclass(frozen=True, slots=True)
class Spans:
    """Intervals to draw for one row: merged runs of slices, each with one representative slice."""

    start_ns: np.ndarray  # int64
    end_ns: np.ndarray  # int64
    first: np.ndarray  # int64 SliceTable row representing the span (its kind/name colour the span)
    count: np.ndarray  # int64 slices merged into the span (1 = a real slice)

    def __len__(self) -> int:
        return len(self.start_ns)


_I64_MAX = np.iinfo(np.int64).max


def ns_floor(t: float) -> np.int64:
    """int64 time for searchsorted: a float key would make numpy cast the whole int64 column."""
    return np.int64(max(-_I64_MAX, min(_I64_MAX, math.floor(t))))


def ns_ceil(t: float) -> np.int64:
    return np.int64(max(-_I64_MAX, min(_I64_MAX, math.ceil(t))))


_EMPTY = Spans(*(np.zeros(0, np.int64) for _ in range(4)))


def _count_groups(n_groups: int, n_rows: int) -> bool:
    """Size SliceIndex's groups with a bincount over every possible (track, depth) id? Not when the ids
    are far more than the rows (a few tracks nested thousands deep): a bincount that long costs more."""
    return n_groups <= max(65536, 2 * n_rows)


class SliceIndex:
    """Slices of one TraceModel grouped by (track, depth), each group time ordered.

    Held per group position k (into `order`): the slice row `order[k]` (int32 below 2**31 rows), its
    start `ts_ns[k]` and the running maximum of the group's ends up to k, `run_end_ns[k]` (ends
    themselves are ts + dur of the few rows a query returns). Built from the model here, or opened
    memory-mapped from its cache entry (core/trace/index_store.py, `from_arrays`)."""

    def __init__(self, model: TraceModel) -> None:
        s = model.slices
        n_depth = int(s.depth.max(initial=0)) + 1
        n_groups = (int(s.track.max()) + 1) * n_depth if len(s) else 0
        # group id = track * n_depth + depth; rows are (track, ts) sorted already, so a stable sort by
        # group keeps each group time ordered (16-bit ids: numpy radix-sorts)
        # the narrowest id type (fewer fresh pages: 10 GB trace, 37M rows: 74 MB of uint16, not 296 of int64)
        gtype = np.uint16 if n_groups <= 65536 else np.int32 if n_groups < 2**31 else np.int64
        gid = s.track.astype(gtype)
        gid *= gtype(n_depth)
        gid += s.depth.astype(gtype)
        order = np.argsort(gid, kind="stable")
        if _count_groups(n_groups, len(s)):  # each group's size by counting its ids (no n-row gather)
            counts = np.bincount(gid, minlength=n_groups) if len(s) else np.zeros(0, np.int64)
            present = np.flatnonzero(counts)
            sizes = counts[present]
        else:  # sparse ids (a few tracks nested very deep): the ids in sorted order
            present, sizes = np.unique(gid[order], return_counts=True)
        del gid
        order = order.astype(order_dtype(len(s)), copy=False)
        ts_ns = s.ts_ns[order]
        run_end = s.dur_ns[order]
        run_end += ts_ns
        bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            np.maximum.accumulate(run_end[a:b], out=run_end[a:b])
        self._set(s, n_depth, order, ts_ns, run_end, present.astype(np.int64), bounds)

    @classmethod
    def from_arrays(cls, model: TraceModel, n_depth: int, order: np.ndarray, ts_ns: np.ndarray,
                    run_end_ns: np.ndarray, group_ids: np.ndarray, bounds: np.ndarray) -> "SliceIndex":
        """An index from its arrays (as `arrays()` gives them; checked by the caller)."""
        self = cls.__new__(cls)
        self._set(model.slices, n_depth, order, ts_ns, run_end_ns, group_ids, bounds)
        return self

    def _set(self, s, n_depth: int, order, ts_ns, run_end_ns, group_ids, bounds) -> None:
        self.n_depth = n_depth
        self.order = order
        self.ts_ns = ts_ns
        self.run_end_ns = run_end_ns
        self.group_ids = group_ids  # int64, increasing: track * n_depth + depth of each group
        self.bounds = bounds  # int64, len(group_ids) + 1: group g is positions [bounds[g], bounds[g + 1])
        self._dur_ns = s.dur_ns
        b = bounds.tolist()
        self._groups: dict[tuple[int, int], tuple[int, int]] = {
            (gi // n_depth, gi % n_depth): (b[g], b[g + 1]) for g, gi in enumerate(group_ids.tolist())}
        self._levels: dict[tuple[int, int, int], Spans] = {}
        self.stored = False  # opened from a cache entry (core/trace/index_store.py)

    def arrays(self) -> dict[str, np.ndarray]:
        """What `from_arrays` takes (besides the model and n_depth), by name: what a cache entry stores."""
        return {"order": self.order, "ts_ns": self.ts_ns, "run_end_ns": self.run_end_ns,
                "group_ids": self.group_ids, "bounds": self.bounds}

    @property
    def nbytes(self) -> int:
        return sum(int(a.nbytes) for a in self.arrays().values())

    def group(self, track: int, depth: int) -> tuple[int, int]:
        return self._groups.get((int(track), int(depth)), (0, 0))

    def window(self, track: int, depth: int, t0_ns: float, t1_ns: float) -> tuple[int, int]:
        """Positions [a, b) (into self.order) of the group's slices overlapping [t0, t1]."""
        a, b = self.group(track, depth)
        if a == b:
            return a, a
        lo = a + int(self.run_end_ns[a:b].searchsorted(ns_floor(t0_ns), side="left"))
        hi = a + int(self.ts_ns[a:b].searchsorted(ns_ceil(t1_ns), side="right"))
        return lo, max(lo, hi)

    def rows(self, track: int, depth: int, t0_ns: float, t1_ns: float) -> np.ndarray:
        """SliceTable rows of one row (track, depth) overlapping [t0, t1], time ordered (int64)."""
        lo, hi = self.window(track, depth, t0_ns, t1_ns)
        return self.order[lo:hi].astype(np.int64)

    def end_ns(self, lo: int, hi: int) -> np.ndarray:
        """Ends (ts + dur) of positions [lo, hi)."""
        return self.ts_ns[lo:hi] + self._dur_ns[self.order[lo:hi]]

    def count(self, track: int, depth: int, t0_ns: float, t1_ns: float) -> int:
        lo, hi = self.window(track, depth, t0_ns, t1_ns)
        return hi - lo

    def spans(self, track: int, depth: int, t0_ns: float, t1_ns: float, ns_per_px: float) -> Spans:
        """What to draw for row (track, depth) in [t0, t1] at `ns_per_px`: real slices when few,
        else a merged level whose resolution is below one pixel."""
        lo, hi = self.window(track, depth, t0_ns, t1_ns)
        if hi - lo <= RAW_LIMIT or ns_per_px < _LEVEL_BASE:
            rows = self.order[lo:hi].astype(np.int64)
            return Spans(self.ts_ns[lo:hi], self.ts_ns[lo:hi] + self._dur_ns[rows], rows,
                         np.ones(len(rows), np.int64))
        level = int(math.log(max(ns_per_px, 1.0), _LEVEL_BASE))
        sp = self._level(track, depth, level)
        a = int(sp.end_ns.searchsorted(ns_floor(t0_ns), side="left"))
        b = int(sp.start_ns.searchsorted(ns_ceil(t1_ns), side="right"))
        b = max(a, b)
        return Spans(sp.start_ns[a:b], sp.end_ns[a:b], sp.first[a:b], sp.count[a:b])

    def _level(self, track: int, depth: int, level: int) -> Spans:
        key = (int(track), int(depth), level)
        sp = self._levels.get(key)
        if sp is None:
            a, b = self.group(track, depth)
            sp = merge_runs(self.ts_ns[a:b], self.run_end_ns[a:b], self.order[a:b], _LEVEL_BASE ** level)
            self._levels[key] = sp
        return sp

    def at(self, track: int, depth: int, t_ns: float, tol_ns: float = 0.0) -> int:
        """SliceTable row under time t on row (track, depth) (the nearest within tol_ns), or -1."""
        lo, hi = self.window(track, depth, t_ns - tol_ns, t_ns + tol_ns)
        if lo == hi:
            return -1
        ts, end = self.ts_ns[lo:hi], self.end_ns(lo, hi)
        dist = np.maximum(0, np.maximum(ts - t_ns, t_ns - end))
        i = int(np.argmin(dist))
        return int(self.order[lo + i]) if dist[i] <= tol_ns else -1


def order_dtype(n_rows: int) -> np.dtype:
    """Row numbers below 2**31 fit int32: half the pages of int64 (148 MB at 37M rows)."""
    return np.dtype(np.int32) if n_rows < 2**31 else np.dtype(np.int64)


def merge_gaps(ts_ns: np.ndarray, end_ns: np.ndarray, rows: np.ndarray, min_gap_ns: float) -> Spans:
    """Merge time-ordered slices whose gap to the running end is below min_gap_ns into spans."""
    if len(ts_ns) == 0:
        return _EMPTY
    return merge_runs(ts_ns, np.maximum.accumulate(end_ns), rows, min_gap_ns)


def merge_runs(ts_ns: np.ndarray, run_end_ns: np.ndarray, rows: np.ndarray, min_gap_ns: float) -> Spans:
    """merge_gaps given the running maximum of the ends (what SliceIndex holds)."""
    n = len(ts_ns)
    if n == 0:
        return _EMPTY
    brk = np.flatnonzero(ts_ns[1:] - run_end_ns[:-1] >= min_gap_ns) + 1
    starts = np.concatenate(([0], brk))
    lasts = np.concatenate((brk - 1, [n - 1]))
    return Spans(ts_ns[starts], run_end_ns[lasts], rows[starts].astype(np.int64), lasts - starts + 1)


def pixel_spans(sp: Spans, t0_ns: float, ns_per_px: float, narrow_px: float = 2.0,
                group_start: np.ndarray | None = None):
    """Spans -> pixel intervals (x0, x1, representative index into sp or None for identity) with runs
    of narrow spans closer than a pixel merged into one, every interval at least one pixel wide.
    Spans of several rows can be converted at once: `group_start` marks each row's first span (no
    merging across it)."""
    n = len(sp.start_ns)
    if n == 0:
        z = np.zeros(0)
        return z, z, np.zeros(0, np.int64)
    inv = 1.0 / ns_per_px
    x0 = (sp.start_ns - t0_ns) * inv
    x1 = (sp.end_ns - t0_ns) * inv
    if n > 1:
        narrow = (x1 - x0) < narrow_px
        join = narrow[1:] & narrow[:-1]
        join &= (x0[1:] - x1[:-1]) < 1.0
        if group_start is not None:
            join &= ~group_start[1:]
        if join.any():
            keep = np.empty(n, bool)
            keep[0] = True
            np.logical_not(join, out=keep[1:])
            starts = np.flatnonzero(keep)
            x0, x1 = x0[starts], np.maximum.reduceat(x1, starts)
            np.maximum(x1, x0 + 1.0, out=x1)
            return x0, x1, starts
    np.maximum(x1, x0 + 1.0, out=x1)
    return x0, x1, None


# --- lookups ---------------------------------------------------------------------------------

def search(model: TraceModel, text: str, case: bool = False) -> np.ndarray:
    """Rows whose name contains `text`, ordered by start time."""
    if not text:
        return np.zeros(0, np.int64)
    ids = model.strings.ids_containing(text, case=case)
    if len(ids) == 0:
        return np.zeros(0, np.int64)
    rows = np.flatnonzero(np.isin(model.slices.name, ids))
    return rows[np.argsort(model.slices.ts_ns[rows], kind="stable")]


def rows_named(model: TraceModel, name: str) -> np.ndarray:
    """Rows with exactly this name, ordered by start time."""
    sid = model.strings.find(name)
    if sid < 0:
        return np.zeros(0, np.int64)
    rows = np.flatnonzero(model.slices.name == sid)
    return rows[np.argsort(model.slices.ts_ns[rows], kind="stable")]


def next_after(model: TraceModel, rows: np.ndarray, t_ns: float) -> int:
    """First of `rows` (time ordered) starting after t_ns, wrapping to the first; -1 if none."""
    if len(rows) == 0:
        return -1
    i = int(np.searchsorted(model.slices.ts_ns[rows], ns_floor(t_ns), side="right"))
    return int(rows[i % len(rows)])


def prev_before(model: TraceModel, rows: np.ndarray, t_ns: float) -> int:
    if len(rows) == 0:
        return -1
    i = int(np.searchsorted(model.slices.ts_ns[rows], ns_ceil(t_ns), side="left")) - 1
    return int(rows[i % len(rows)])


def launched_by(model: TraceModel, row: int) -> np.ndarray:
    """GPU slices launched by CPU slice `row` (and by the runtime calls nested inside it)."""
    f = model.flows
    launch = f.kind == FlowKind.LAUNCH
    s = model.slices
    t0, t1 = s.ts_ns[row], s.ts_ns[row] + s.dur_ns[row]
    src = f.src[launch]
    inside = (s.track[src] == s.track[row]) & (s.ts_ns[src] >= t0) & (s.ts_ns[src] + s.dur_ns[src] <= t1)
    return np.unique(f.dst[launch][inside])


def launcher_of(model: TraceModel, row: int) -> int:
    """CPU runtime call that launched GPU slice `row`, or -1."""
    f = model.flows
    hit = np.flatnonzero((f.dst == row) & (f.kind == FlowKind.LAUNCH))
    return int(f.src[hit[0]]) if len(hit) else -1


def enclosing(model: TraceModel, track: int, t0_ns: int, t1_ns: int) -> np.ndarray:
    """Rows of `track` that contain [t0, t1], outermost first (by depth)."""
    s = model.slices
    sl = model.track_rows(track)
    ts, end = s.ts_ns[sl], s.ts_ns[sl] + s.dur_ns[sl]
    cut = int(np.searchsorted(ts, t0_ns, side="right"))
    hit = np.flatnonzero(end[:cut] >= t1_ns)
    rows = hit + sl.start
    return rows[np.argsort(s.depth[rows], kind="stable")]


def python_track_of(model: TraceModel, track: int) -> int:
    """The PYTHON track of the thread owning `track` (python_function frames), or -1."""
    t = model.tracks
    same = np.flatnonzero((t.kind == TrackKind.PYTHON) & (t.pid == t.pid[track]) & (t.tid == t.tid[track]))
    return int(same[0]) if len(same) else -1


def python_stack(model: TraceModel, row: int) -> list[int]:
    """python_function frames enclosing slice `row` on its thread, innermost first."""
    s = model.slices
    track = int(s.track[row])
    if model.tracks.kind[track] == TrackKind.PYTHON:
        py = track
    else:
        py = python_track_of(model, track)
    if py < 0:
        return []
    rows = enclosing(model, py, int(s.ts_ns[row]), int(s.ts_ns[row] + s.dur_ns[row]))
    rows = rows[rows != row]
    return rows[::-1].tolist()


def cpu_ancestors(model: TraceModel, row: int) -> list[int]:
    """Slices on the same track enclosing `row`, outermost first (its op call chain)."""
    s = model.slices
    rows = enclosing(model, int(s.track[row]), int(s.ts_ns[row]), int(s.ts_ns[row] + s.dur_ns[row]))
    return [r for r in rows.tolist() if s.depth[r] < s.depth[row]]


def _strip_nested(s: str) -> str:
    """Drop <...> and (...) groups and {lambda...} tags: 'a::f<int>(x)::{lambda(float)#1}' -> 'a::f::'."""
    out, angle, paren, brace = [], 0, 0, 0
    for ch in s:
        if ch == "<":
            angle += 1
        elif ch == ">":
            angle = max(0, angle - 1)
        elif ch == "(":
            paren += 1
        elif ch == ")":
            paren = max(0, paren - 1)
        elif ch == "{":
            brace += 1
        elif ch == "}":
            brace = max(0, brace - 1)
        elif angle == paren == brace == 0:
            out.append(ch)
    return "".join(out)


def _template_args(s: str) -> list[str]:
    """Top-level template arguments of the first <...> group of a signature."""
    start = s.find("<")
    if start < 0:
        return []
    args, depth, cur = [], 0, []
    for ch in s[start + 1:]:
        if ch in "<({":
            depth += 1
        elif ch in ">)}":
            if depth == 0:
                break
            depth -= 1
        if ch == "," and depth == 0:
            args.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    args.append("".join(cur).strip())
    return args


_GENERIC_KERNELS = {"elementwise_kernel", "vectorized_elementwise_kernel", "unrolled_elementwise_kernel",
                    "reduce_kernel", "multi_tensor_apply_kernel", "index_elementwise_kernel"}
_WRAPPERS = ("gpu_kernel_impl",)  # template wrappers whose own argument names the functor
_PRIMITIVES = {"int", "long", "float", "double", "bool", "char", "unsigned", "short", "half", "void"}


def _functor(args: list[str], depth: int = 0) -> str | None:
    """The first template argument that names a function/functor (its last meaningful component)."""
    for arg in args:
        if not arg or arg.replace(" ", "").replace("u", "").isdigit():
            continue
        parts = [p.strip() for p in _strip_nested(arg).split("::")]
        parts = [p for p in parts if p and not p.startswith("operator")]
        if not parts or parts[-1] in _PRIMITIVES or parts[-1].startswith("std"):
            continue
        if parts[-1].startswith(_WRAPPERS) and depth < 2:
            inner = _functor(_template_args(arg), depth + 1)
            if inner:
                return inner
        return parts[-1]
    return None


def short_kernel_name(name: str) -> str:
    """Demangled kernel name without return type, template arguments and parameters:
    'void at::native::foo<8, bar<int> >(int, float*)' -> 'at::native::foo'. Generic launchers
    (elementwise / reduce / multi_tensor_apply kernels) keep the functor they run:
    'at::native::vectorized_elementwise_kernel<CUDAFunctor_add>'."""
    s = name.strip()
    if "<" not in s and not s.startswith("void "):
        return s  # not a C++ signature ("Memcpy HtoD (Pageable -> Device)", nvjet_...)
    if s.startswith("void "):
        s = s[5:]
    s = s.replace("(anonymous namespace)::", "")
    cut = len(s)
    depth = 0
    for i, ch in enumerate(s):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif ch == "(" and depth == 0:
            cut = i
            break
    head = s[:cut]
    short = _strip_nested(head).strip() or name
    if short.split("::")[-1] in _GENERIC_KERNELS:
        functor = _functor(_template_args(head))
        if functor:
            return f"{short}<{functor}>"
    return short


def distinct_kernel_names(names: list[str], width: int = 48) -> list[str]:
    """short_kernel_name of each name, made unique: where several full names share a short name
    (cutlass::Kernel2 x3, multi_tensor_apply_kernel x5), each gets the part of its full name that
    differs from the others, in brackets ('cutlass::Kernel2 [cutlass_80_tensorop_s1688gemm_64x64…]')."""
    short = [short_kernel_name(n) for n in names]
    groups: dict[str, list[int]] = {}
    for i, sh in enumerate(short):
        groups.setdefault(sh, []).append(i)
    out = list(short)
    for sh, idx in groups.items():
        if len(idx) < 2:
            continue
        full = [names[i] for i in idx]
        pre = len(os.path.commonprefix(full))
        suf = len(os.path.commonprefix([f[::-1] for f in full]))
        while pre > 0 and full[0][pre - 1] not in "<, (":  # start the difference at a token boundary
            pre -= 1
        for k, i in enumerate(idx):
            f = full[k]
            diff = _QUALIFIER.sub("", f[pre:max(pre, len(f) - suf)]).strip(" ,<>()")
            if len(diff) > width:
                diff = diff[:width - 1] + "…"
            out[i] = f"{sh} [{diff}]" if diff else sh
    same: dict[str, list[int]] = {}
    for i, name in enumerate(out):
        same.setdefault(name, []).append(i)
    for name, idx in same.items():  # still equal (the difference is past the cut): number them
        if len(idx) > 1:
            for k, i in enumerate(idx, 1):
                out[i] = f"{name} #{k}"
    return out


_QUALIFIER = re.compile(r"(?:\(anonymous namespace\)|[A-Za-z_]\w*)::")
