"""Row layout of the timeline: which (model, track, depth) is drawn on which row, and its label.

Per model (rank): ProfilerStep band, CPU threads (ops nested by depth, collapsible), each thread's
python_function frames (collapsed by default), then per GPU device its streams (one row per lane)
and annotation rows. Profiler spans are not shown. Pure Python over the model's small TrackTable.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from core.trace.model import TraceModel, TrackKind

HEADER = -1  # Row.track of a rank header row
COUNTER = -2  # Row.track of a counter row (Row.depth = index into the view's counter series)


@dataclass(frozen=True, slots=True)
class CounterRow:
    """A counter drawn as a bar graph on one timeline row (memory allocated, NVML utilisation)."""

    model: int  # the rank whose rows it sits under; -1 = under the first shown rank (host-wide)
    label: str
    ts_ns: object  # int64 ndarray, time ordered
    value: object  # float64 ndarray
    max_value: float  # the row's full height
    color: str = "#4a7fd4"


@dataclass(frozen=True, slots=True)
class Row:
    model: int  # index into the view's models
    track: int  # track id, or HEADER
    depth: int  # depth / lane drawn on this row
    label: str  # drawn on the first row of a track (and on headers)
    first: bool  # first row of its track (carries the label and the collapse toggle)
    collapsible: bool
    collapsed: bool
    kind: int  # TrackKind, -1 for headers


@dataclass(slots=True)
class RowState:
    """What the user toggled: collapsed (model, track) pairs and hidden models (rank filter)."""

    collapsed: set[tuple[int, int]] = field(default_factory=set)
    expanded: set[tuple[int, int]] = field(default_factory=set)
    hidden_models: set[int] = field(default_factory=set)

    def is_collapsed(self, model: int, track: int, kind: int) -> bool:
        key = (model, track)
        if key in self.collapsed:
            return True
        if key in self.expanded:
            return False
        return kind == TrackKind.PYTHON  # python rows start collapsed

    def toggle(self, model: int, track: int, kind: int) -> None:
        key = (model, track)
        if self.is_collapsed(model, track, kind):
            self.collapsed.discard(key)
            self.expanded.add(key)
        else:
            self.expanded.discard(key)
            self.collapsed.add(key)


def ordered_tracks(m: TraceModel) -> list[int]:
    """Track ids in display order (non-empty, no profiler spans)."""
    t = m.tracks
    off = m.slices.track_offsets
    nonempty = [i for i in range(len(t)) if off[i + 1] > off[i] and t.kind[i] != TrackKind.SPANS]
    steps = [i for i in nonempty if t.kind[i] == TrackKind.STEPS]
    cpu = sorted((i for i in nonempty if t.kind[i] == TrackKind.CPU_THREAD),
                 key=lambda i: (int(t.sort_index[i]), int(t.tid[i])))
    py = [i for i in nonempty if t.kind[i] == TrackKind.PYTHON]
    out = list(steps)
    for c in cpu:
        out.append(c)
        out.extend(p for p in py if t.pid[p] == t.pid[c] and t.tid[p] == t.tid[c])
    out.extend(p for p in py if p not in out)
    gpu = sorted((i for i in nonempty if t.kind[i] == TrackKind.GPU_STREAM),
                 key=lambda i: (int(t.device[i]), int(t.tid[i])))
    ann = [i for i in nonempty if t.kind[i] == TrackKind.GPU_ANNOTATION]
    for g in gpu:
        out.append(g)
        out.extend(a for a in ann if t.device[a] == t.device[g] and t.tid[a] == t.tid[g])
    out.extend(a for a in ann if a not in out)
    return out


def track_label(m: TraceModel, track: int) -> str:
    kind = m.tracks.kind[track]
    if kind == TrackKind.STEPS:
        return "Steps"
    return m.track_label(track)


def model_title(m: TraceModel) -> str:
    from pathlib import Path
    return f"rank {m.rank} · {Path(m.path).name}"


def build_rows(models: list[TraceModel], state: RowState, counters: list[CounterRow] = ()) -> list[Row]:
    rows: list[Row] = []
    multi = len(models) > 1
    first_shown = next((i for i in range(len(models)) if i not in state.hidden_models), -1)
    for mi, m in enumerate(models):
        if mi in state.hidden_models:
            continue
        if multi:
            folded = state.is_collapsed(mi, HEADER, -1)
            rows.append(Row(mi, HEADER, 0, model_title(m), True, True, folded, -1))
            if folded:
                continue
        for tr in ordered_tracks(m):
            kind = int(m.tracks.kind[tr])
            n_depth = int(m.tracks.max_depth[tr]) + 1
            collapsible = n_depth > 1 and kind in (TrackKind.CPU_THREAD, TrackKind.PYTHON)
            collapsed = collapsible and state.is_collapsed(mi, tr, kind)
            label = track_label(m, tr)
            depths = [0] if collapsed else range(n_depth)
            for d in depths:
                rows.append(Row(mi, tr, d, label, d == 0, collapsible, collapsed, kind))
        for ci, c in enumerate(counters):
            if c.model == mi or (c.model < 0 and mi == first_shown):
                rows.append(Row(mi, COUNTER, ci, c.label, True, False, False, -2))
    return rows


def track_row_index(rows: list[Row]) -> dict[tuple[int, int, int], int]:
    """(model, track, depth) -> row, for fast lookups when drawing overlays."""
    out = {}
    for i, r in enumerate(rows):
        out[(r.model, r.track, r.depth)] = i
    return out
