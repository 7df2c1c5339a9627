"""Shared helpers for rules: name lookups, call-tree walks, source lines, evidence, GPU gaps.

Everything works on whole columns; per-row Python only touches the few rows a finding reports.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable

import numpy as np

from core.analysis.breakdown import compile_windows  # noqa: F401 - the rules' name for it
from core.analysis.derived import cached
from core.analysis.intervals import Intervals
from core.analysis.steps import gpu_busy_union
from core.analysis.tree import parents, parse_frame
from core.rules.base import Source
from core.trace import event_names
from core.trace.model import GPU_KINDS, Kind, TraceModel, TrackKind

MAX_EVIDENCE = 20  # evidence dicts per finding (the rows to highlight are all kept)
MAX_RANGES = 50  # time ranges per finding


def name_ids(model: TraceModel, key: str, predicate: Callable[[str], bool]) -> np.ndarray:
    """String ids whose text satisfies predicate (cached per model under `key`)."""
    return cached(model, f"ids:{key}", lambda: model.strings.ids_matching(predicate))


def rows_with_names(model: TraceModel, key: str, predicate: Callable[[str], bool],
                    kinds: Iterable[Kind] | None = None) -> np.ndarray:
    s = model.slices
    ids = name_ids(model, key, predicate)
    if not len(ids):
        return np.zeros(0, np.int64)
    m = np.isin(s.name, ids)
    if kinds is not None:
        m &= np.isin(s.kind, np.asarray(list(kinds), dtype=np.int8))
    return np.flatnonzero(m)


def exact(*names: str) -> Callable[[str], bool]:
    wanted = frozenset(names)
    return lambda s: s in wanted


def regex(pattern: str, flags: int = 0) -> Callable[[str], bool]:
    rx = re.compile(pattern, flags)
    return lambda s: rx.search(s) is not None


def cpu_rows(model: TraceModel) -> np.ndarray:
    """Bool per slice: on a CPU thread track (not python, steps, GPU, spans)."""
    t = model.tracks.kind == TrackKind.CPU_THREAD
    return t[model.slices.track]


def gpu_event_count(model: TraceModel) -> int:
    return int(np.isin(model.slices.kind, np.asarray(GPU_KINDS, dtype=np.int8)).sum())


def ancestor_matching(model: TraceModel, rows: np.ndarray, ids: np.ndarray, max_levels: int = 64) -> np.ndarray:
    """Innermost ancestor of each row whose name id is in `ids` (-1 if none)."""
    par = parents(model)
    name = model.slices.name
    rows = np.asarray(rows, np.int64)
    out = np.full(len(rows), -1, np.int64)
    if not len(rows) or not len(ids):
        return out
    cur = par[rows]
    for _ in range(max_levels):
        live = np.flatnonzero((cur >= 0) & (out < 0))
        if not len(live):
            break
        hit = np.isin(name[cur[live]], ids)
        out[live[hit]] = cur[live[hit]]
        cur[live] = par[cur[live]]
    return out


def outermost_chain(model: TraceModel, rows: np.ndarray, ids: np.ndarray, max_levels: int = 64) -> np.ndarray:
    """Walk up from each row while the parent's name id is in `ids`; the last such ancestor (or -1)."""
    par = parents(model)
    name = model.slices.name
    rows = np.asarray(rows, np.int64)
    out = np.full(len(rows), -1, np.int64)
    cur = rows.copy()
    live = np.ones(len(rows), bool)
    for _ in range(max_levels):
        idx = np.flatnonzero(live)
        if not len(idx):
            break
        p = par[cur[idx]]
        ok = p >= 0
        ok[ok] = np.isin(name[p[ok]], ids)
        out[idx[ok]] = p[ok]
        cur[idx[ok]] = p[ok]
        live[idx[~ok]] = False
    return out


def inside(model: TraceModel, rows: np.ndarray, spans: Intervals) -> np.ndarray:
    """Bool per row: its start lies inside one of the intervals."""
    return spans.contains(model.slices.ts_ns[np.asarray(rows, np.int64)])


def gpu_gap_after(model: TraceModel, t_ns: np.ndarray, limit_ns: np.ndarray | None = None,
                  device: int | None = None) -> np.ndarray:
    """GPU idle time from each t_ns until the next GPU activity starts (0 when the GPU is busy at t_ns)."""
    busy = gpu_busy_union(model, device)
    t_ns = np.asarray(t_ns, np.int64)
    if not len(busy):
        return np.zeros(len(t_ns), np.int64)
    after = np.searchsorted(busy.start_ns, t_ns, side="right")  # busy intervals starting at or before t
    busy_now = (after > 0) & (busy.end_ns[np.maximum(after - 1, 0)] > t_ns)
    nxt = np.where(after < len(busy), busy.start_ns[np.minimum(after, len(busy) - 1)], t_ns)
    gap = np.where(busy_now, 0, np.maximum(nxt - t_ns, 0))
    if limit_ns is not None:
        gap = np.minimum(gap, np.maximum(np.asarray(limit_ns, np.int64) - t_ns, 0))
    return gap


def parse_call_stack(text: str) -> Source | None:
    """First user frame of a verbose "Call stack" arg ("file.py(12): fn;..." innermost first)."""
    for part in text.replace("\n", ";").split(";"):
        part = part.strip()
        if not part or event_names.is_library_frame(part):
            continue
        parsed = parse_frame(part)
        if parsed:
            return Source(*parsed)
    return None


def source_of(model: TraceModel, row: int) -> Source | None:
    """User file/line/function for a row: its own or an ancestor's "Call stack", else the python frames."""
    s = model.slices
    par = parents(model)
    r = int(row)
    for _ in range(64):
        if r < 0:
            break
        cs = int(s.at("call_stack", r))
        if cs:
            src = parse_call_stack(model.strings[cs])
            if src:
                return src
        r = int(par[r])
    from core.rules.call_line import user_call_site
    fr = user_call_site(model, int(row))  # the call's line inside the function, when its source tells
    return Source(*fr) if fr else None


def has_stacks(model: TraceModel) -> bool:
    return bool(len(model.slices.present_rows("call_stack")) or (model.tracks.kind == TrackKind.PYTHON).any())


def truncated(model: TraceModel) -> bool:
    """The loader recovered a cut file: missing events may just lie past the cut."""
    return any("truncated" in w for w in model.warnings)


def unknown_categories_of(model: TraceModel) -> list[str]:
    """Event categories the loader did not know (its load warnings): maybe an accelerator's work."""
    return [w.split("'")[1] for w in model.warnings if "events of unknown category '" in w]


def no_gpu_words(model: TraceModel) -> str:
    """Why a model has no GPU events, in a finding's words."""
    if truncated(model):
        return "no GPU events in the loaded part of a truncated file"
    unknown = unknown_categories_of(model)
    if unknown:
        return f"no GPU events of a known category (unknown categories: {', '.join(unknown)})"
    return "CPU-only trace"


def has_shapes(model: TraceModel) -> bool:
    return bool(len(model.slices.present_rows("input_dims")))


def evidence(model: TraceModel, rows: Iterable[int], **extra) -> list[dict]:
    """Evidence dicts for the first MAX_EVIDENCE rows (longest first)."""
    s = model.slices
    rows = np.asarray(list(rows) if not isinstance(rows, np.ndarray) else rows, np.int64)
    if len(rows) > MAX_EVIDENCE:
        rows = rows[np.argsort(-s.dur_ns[rows], kind="stable")[:MAX_EVIDENCE]]
    out = []
    for r in rows.tolist():
        d = {"name": model.name(r), "ts_ns": int(s.ts_ns[r]), "dur_ns": int(s.dur_ns[r]), "rank": model.rank,
             "row": int(r)}
        d.update(extra)
        out.append(d)
    return out


def one_shape(rows: list[dict], keys_from: list[dict] = ()) -> list[dict]:
    """Evidence rows of one finding with the same keys (issue 35): the union of their keys in the order they
    first appear in `keys_from`, then in `rows`; None where a row has no value (an event shown for context
    has no `asked_by`)."""
    keys = list(dict.fromkeys(k for row in [*keys_from, *rows] for k in row))
    return [{k: row.get(k) for k in keys} for row in rows]


def ranges_of(model: TraceModel, rows: np.ndarray, pad_ns: int = 0) -> list[tuple[int, int]]:
    """Time ranges of rows (time ordered, at most MAX_RANGES)."""
    s = model.slices
    rows = np.asarray(rows, np.int64)
    rows = rows[np.argsort(s.ts_ns[rows], kind="stable")][:MAX_RANGES]
    return [(int(s.ts_ns[r]) - pad_ns, int(s.ts_ns[r] + s.dur_ns[r]) + pad_ns) for r in rows.tolist()]


def step_of(steps, ts_ns) -> np.ndarray:
    return steps.index_of(ts_ns)


def forward_source(model: TraceModel, row: int) -> Source | None:
    """Source of a backward-pass row: the user frame of the forward op that created its autograd node
    (fwdbwd flows), since backward runs on the autograd thread with no user frames."""
    from core.trace.model import FlowKind
    f = model.flows
    fb = f.kind == FlowKind.FWD_BWD
    if not fb.any():
        return None
    par = parents(model)
    dst_to_src = dict(zip(f.dst[fb].tolist(), f.src[fb].tolist()))
    r = int(row)
    for _ in range(64):
        if r < 0:
            return None
        if r in dst_to_src:
            return source_of(model, dst_to_src[r])
        r = int(par[r])
    return None


def kernel_source(model: TraceModel, kernel_row: int) -> Source | None:
    """User source of a GPU kernel: that of the runtime call that launched it (LAUNCH flow), else, for a
    backward kernel, the forward op's user frame."""
    from core.trace.model import FlowKind
    f = model.flows
    hit = np.flatnonzero((f.dst == int(kernel_row)) & (f.kind == FlowKind.LAUNCH))
    if not len(hit):
        return None
    launch = int(f.src[hit[0]])
    return source_of(model, launch) or forward_source(model, launch)
