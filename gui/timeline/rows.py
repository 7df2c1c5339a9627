"""Row layout of the timeline: which (model, track, depth) is drawn on which row, and its label.

Per model (rank), GPU first: ProfilerStep band, per GPU device its streams (one row per lane) and
annotation rows, then CPU threads (ops nested by depth; a deep stack starts folded to its first
`depth_cap` levels) and each thread's python_function frames (folded to one row). Sparse GPU streams
(fewer events than steps: the copy / collective side streams of DDP) sit in one folded group after
the busy streams, so the busy stream and the CPU threads stay in the first screen. Profiler spans
are not shown. Pure Python over the model's small TrackTable.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from core.trace.model import TraceModel, TrackKind

HEADER = -1  # Row.track of a rank header row
COUNTER = -2  # Row.track of a counter row (Row.depth = index into the view's counter series)
GROUP = -3  # Row.track of the folded group of a rank's sparse GPU streams (Row.depth = GPU device)
DEPTH_CAP = 4  # CPU-thread levels shown before the user unfolds a track (overridden by theme.toml)


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
    ranks_folded: bool = False  # a run of many ranks opens with every rank folded (gui/timeline/rank_strip.py)

    def is_collapsed(self, model: int, track: int, kind: int, deep: bool = False) -> bool:
        """Folded: one row (python frames, a CPU thread the user folded), a deep CPU thread's first
        levels (`deep`: more levels than the cap), or a closed group / rank header."""
        key = (model, track)
        if key in self.collapsed:
            return True
        if key in self.expanded:
            return False
        # python rows, deep CPU stacks and the sparse-stream group start folded; so do ranks, past MANY_RANKS
        return kind == TrackKind.PYTHON or (kind == TrackKind.CPU_THREAD and deep) or track == GROUP or \
            (track == HEADER and self.ranks_folded)

    def toggle(self, model: int, track: int, kind: int, deep: bool = False) -> None:
        key = (model, track)
        if self.is_collapsed(model, track, kind, deep):
            self.collapsed.discard(key)
            self.expanded.add(key)
        else:
            self.expanded.discard(key)
            self.collapsed.add(key)


def ordered_tracks(m: TraceModel) -> list[int]:
    """Track ids in display order (non-empty, no profiler spans): steps, GPU streams (each followed
    by its annotation track), then CPU threads (each followed by its python track)."""
    busy, sparse = gpu_tracks(m)
    return _steps_tracks(m) + busy + sparse + cpu_tracks(m)


def _nonempty(m: TraceModel, kind: int) -> list[int]:
    t, off = m.tracks, m.slices.track_offsets
    return [i for i in range(len(t)) if t.kind[i] == kind and off[i + 1] > off[i]]


def _steps_tracks(m: TraceModel) -> list[int]:
    return _nonempty(m, TrackKind.STEPS)


def cpu_tracks(m: TraceModel) -> list[int]:
    t = m.tracks
    cpu = sorted(_nonempty(m, TrackKind.CPU_THREAD), key=lambda i: (int(t.sort_index[i]), int(t.tid[i])))
    py = _nonempty(m, TrackKind.PYTHON)
    out = []
    for c in cpu:
        out.append(c)
        out.extend(p for p in py if t.pid[p] == t.pid[c] and t.tid[p] == t.tid[c])
    out.extend(p for p in py if p not in out)
    return out


def gpu_tracks(m: TraceModel) -> tuple[list[int], list[int]]:
    """(busy, sparse) GPU tracks in display order, each stream followed by its annotation track. A
    stream is sparse when it holds fewer slices than the trace has steps (at least 2): DDP's copy
    and collective side streams (2 memcpy each on gpu_ddp2), which would show as empty rows."""
    t, off = m.tracks, m.slices.track_offsets
    gpu = sorted(_nonempty(m, TrackKind.GPU_STREAM), key=lambda i: (int(t.device[i]), int(t.tid[i])))
    ann = _nonempty(m, TrackKind.GPU_ANNOTATION)
    min_events = max(2, len(m.steps) if m.steps is not None else 0)
    busy: list[int] = []
    sparse: list[int] = []
    for g in gpu:
        mine = [a for a in ann if t.device[a] == t.device[g] and t.tid[a] == t.tid[g]]
        few = off[g + 1] - off[g] < min_events and len(gpu) > 1
        (sparse if few else busy).extend([g] + mine)
    if not busy:  # every stream is sparse: nothing to hide them behind
        busy, sparse = sparse, []
    placed = set(busy) | set(sparse)
    busy.extend(a for a in ann if a not in placed)
    return busy, sparse


def track_label(m: TraceModel, track: int) -> str:
    kind = m.tracks.kind[track]
    if kind == TrackKind.STEPS:
        return "Steps"
    return m.track_label(track)


def model_title(m: TraceModel) -> str:
    """A trace's header row / rank filter entry: "rank 1 · rank1.pt.trace.json.gz"; a run bundle's profiler
    cycle as "rank 0 · cycle 2" (its file name, rank0.cycle2.pt.trace.json.gz, was elided in the 230 px label
    column to "rank0.c…2.pt.trace.json" right where the cycles differ)."""
    from pathlib import Path
    return model_short(m) if cycle_of(m) is not None else f"rank {m.rank} · {Path(m.path).name}"


def cycle_of(m: TraceModel) -> int | None:
    """The profiler cycle the trace's file name says (a run bundle's traces/rank0.cycle2...), else None."""
    from pathlib import Path

    from core.trace.io import cycle_of_name
    return cycle_of_name(Path(m.path).name) if m.path else None


def model_short(m: TraceModel) -> str:
    """"rank 1", or "rank 0 · cycle 2" for a run bundle's cycle (plot legends, table headers)."""
    cycle = cycle_of(m)
    return f"rank {m.rank}" + (f" · cycle {cycle}" if cycle is not None else "")


def build_rows(models: list[TraceModel], state: RowState, counters: list[CounterRow] = (),
               depth_cap: int = DEPTH_CAP) -> list[Row]:
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
        busy, sparse = gpu_tracks(m)
        for tr in _steps_tracks(m) + busy:
            _track_rows(rows, m, mi, tr, state, depth_cap)
        if sparse:
            n_streams = sum(1 for tr in sparse if m.tracks.kind[tr] == TrackKind.GPU_STREAM)
            n_events = sum(int(m.slices.track_offsets[tr + 1] - m.slices.track_offsets[tr]) for tr in sparse)
            folded = state.is_collapsed(mi, GROUP, -1)
            rows.append(Row(mi, GROUP, 0, f"{n_streams} sparse GPU streams ({n_events} events)", True, True,
                            folded, -3))
            if not folded:
                for tr in sparse:
                    _track_rows(rows, m, mi, tr, state, depth_cap)
        for tr in cpu_tracks(m):
            _track_rows(rows, m, mi, tr, state, depth_cap)
        for ci, c in enumerate(counters):
            if c.model == mi or (c.model < 0 and mi == first_shown):
                rows.append(Row(mi, COUNTER, ci, c.label, True, False, False, -2))
    return rows


def _track_rows(rows: list[Row], m: TraceModel, mi: int, tr: int, state: RowState, depth_cap: int) -> None:
    kind = int(m.tracks.kind[tr])
    n_depth = int(m.tracks.max_depth[tr]) + 1
    collapsible = n_depth > 1 and kind in (TrackKind.CPU_THREAD, TrackKind.PYTHON)
    deep = is_deep(m, tr, depth_cap)
    collapsed = collapsible and state.is_collapsed(mi, tr, kind, deep)
    label = track_label(m, tr)
    if not collapsed:
        n_shown = n_depth
    elif deep:
        n_shown = depth_cap  # folded to its first levels
    else:
        n_shown = 1
    if n_shown < n_depth:
        label += f"  +{n_depth - n_shown}"  # folded levels (the label's tooltip says so)
    for d in range(n_shown):
        rows.append(Row(mi, tr, d, label, d == 0, collapsible, collapsed, kind))


def is_deep(m: TraceModel, track: int, depth_cap: int = DEPTH_CAP) -> bool:
    """A CPU thread with at least 2 levels more than the cap (starts folded to them; folding away a
    single level saves less than the fold costs in surprise)."""
    return int(m.tracks.kind[track]) == TrackKind.CPU_THREAD and int(m.tracks.max_depth[track]) + 1 > depth_cap + 1


def track_row_index(rows: list[Row]) -> dict[tuple[int, int, int], int]:
    """(model, track, depth) -> row, for fast lookups when drawing overlays."""
    out = {}
    for i, r in enumerate(rows):
        out[(r.model, r.track, r.depth)] = i
    return out
