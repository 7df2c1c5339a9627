"""Plot-ready data for the report figures, and the Renderer seam that turns them into PNGs.

Core builds every figure as plain numpy data (the expensive part: culling, merging, decimating),
so it can run in a worker and be tested without Qt. A `Renderer` (gui/report/renderer.py implements
it with Qt + pyqtgraph, offscreen) only paints: `render(figure) -> PNG bytes`.
Times in figures are milliseconds relative to the trace start (x axes); memory in MiB.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from core import units
from core.trace.model import TraceSet


@dataclass(frozen=True, slots=True)
class FigureSpec:
    """What to draw and at which size. width/height in logical px; scale 2.0 = 2x DPI output."""

    width_px: int = 1600
    height_px: int = 0  # 0: figure's own choice (timeline grows with its rows)
    scale: float = 1.0
    t0_ns: int | None = None  # timeline window; None = the busiest step
    t1_ns: int | None = None
    step: int | None = None  # timeline: this ProfilerStep number


@dataclass(frozen=True, slots=True)
class Header:
    title: str  # "gpu_issues.pt.trace.json.gz — timeline"
    subtitle: str  # "NVIDIA H200 · step 5 · 18.47–25.95 ms (7.48 ms)"


@dataclass(frozen=True, slots=True)
class Bars:
    """Rectangles of one colour key: x in ms, y = row index (top row 0), height in rows."""

    color: str  # colour key: a Kind name ("KERNEL") optionally with a shade suffix ("KERNEL:1")
    x0_ms: np.ndarray
    x1_ms: np.ndarray
    row: np.ndarray


@dataclass(frozen=True, slots=True)
class TimelineFigure:
    header: Header
    spec: FigureSpec
    t0_ms: float
    t1_ms: float
    row_labels: tuple[str, ...]  # one per row, "" for continuation rows of a track
    group_starts: tuple[int, ...]  # first row of each track (separators)
    bars: tuple[Bars, ...]
    texts: tuple[tuple[float, float, int, str], ...]  # (x0_ms, x1_ms, row, name) for wide slices
    step_edges_ms: tuple[float, ...]  # ProfilerStep boundaries inside the window
    legend: tuple[str, ...]  # Kind names present


@dataclass(frozen=True, slots=True)
class Series:
    label: str
    x: np.ndarray  # ms (timeline-based figures) or s (NVML)
    y: np.ndarray
    color: str  # colour key
    step: bool = False  # draw as a step function (memory counters)


@dataclass(frozen=True, slots=True)
class Marker:
    x: float
    y: float
    text: str


@dataclass(frozen=True, slots=True)
class PlotPanel:
    y_label: str
    series: tuple[Series, ...]
    markers: tuple[Marker, ...] = ()
    y_max: float | None = None  # fixed upper y limit (e.g. 100 for %)


@dataclass(frozen=True, slots=True)
class LineFigure:
    """memory.png / gpu.png: stacked panels sharing one x axis."""

    name: str  # "memory" | "gpu"
    header: Header
    spec: FigureSpec
    x_label: str
    panels: tuple[PlotPanel, ...]
    shade: tuple[tuple[float, float, str], ...] = ()  # (x0, x1, label) bands, e.g. steps or the profiled window


@dataclass(frozen=True, slots=True)
class BarFigure:
    """breakdown.png: one stacked bar per step."""

    header: Header
    spec: FigureSpec
    categories: tuple[tuple[str, str], ...]  # (label, colour key) bottom to top
    bar_labels: tuple[str, ...]  # "step 3"
    values_ms: np.ndarray  # shape (bars, categories)
    y_label: str = "time (ms)"


@dataclass(frozen=True, slots=True)
class NoteFigure:
    """A page saying why a figure has no data (e.g. memory.png of a trace without memory events)."""

    header: Header
    spec: FigureSpec
    text: str


Figure = TimelineFigure | LineFigure | BarFigure | NoteFigure
FIGURE_NAMES = ("timeline", "memory", "gpu", "breakdown")


@runtime_checkable
class Renderer(Protocol):
    """Paints a figure into a PNG. Called from the thread that owns the renderer."""

    def render(self, figure: Figure) -> bytes: ...


@dataclass(slots=True)
class RenderResult:
    png: dict[str, bytes] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # figure -> why it was not drawn


def device_label(ts: TraceSet) -> str:
    names = sorted({p.get("name", "?") for m in ts.models for p in m.meta.device_properties})
    if names:
        n_dev = len({d for m in ts.models for d in m.devices})
        return (f"{n_dev}× " if n_dev > 1 else "") + ", ".join(names)
    return "GPU" if any(m.devices for m in ts.models) else "CPU only"


def trace_name(ts: TraceSet) -> str:
    return Path(ts.path).name or ts.path


def span_text(t0_ns: int, t1_ns: int) -> str:
    return f"{t0_ns / 1e6:.2f}–{t1_ns / 1e6:.2f} ms ({units.fmt_ns(t1_ns - t0_ns)})"


def header(ts: TraceSet, what: str, detail: str) -> Header:
    ranks = f" · {len(ts.ranks)} ranks" if len(ts.ranks) > 1 else ""
    return Header(f"{trace_name(ts)} — {what}", f"{device_label(ts)}{ranks} · {detail}")


def decimate(x: np.ndarray, y: np.ndarray, buckets: int, at: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Keep the min and max of every x bucket (peaks survive) when there are many more points than pixels.
    `at`: the positions the buckets are cut on, when they are not x itself."""
    n = len(x)
    if n <= 4 * buckets or n == 0:
        return x, y
    pos = x if at is None else at
    edges = np.linspace(pos[0], pos[-1], buckets + 1)
    b = np.clip(np.searchsorted(edges, pos, side="right") - 1, 0, buckets - 1)
    starts = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])
    ends = np.r_[starts[1:], n]
    idx_max = np.array([s + int(np.argmax(y[s:e])) for s, e in zip(starts.tolist(), ends.tolist())])
    idx_min = np.array([s + int(np.argmin(y[s:e])) for s, e in zip(starts.tolist(), ends.tolist())])
    keep = np.unique(np.concatenate([idx_min, idx_max, [0, n - 1]]))
    return x[keep], y[keep]


KIND_LABELS = {
    "KERNEL": "kernel", "MEMCPY": "memcpy", "MEMSET": "memset", "CPU_OP": "CPU op", "RUNTIME": "CUDA runtime",
    "DRIVER": "CUDA driver", "PYTHON": "Python", "ANNOTATION": "annotation / step", "GPU_ANNOTATION": "GPU annotation",
    "TRACE": "profiler", "COLLECTIVE": "collective", "OTHER": "other",
}
