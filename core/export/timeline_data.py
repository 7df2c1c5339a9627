"""Timeline figure data: the busiest step (or a chosen window), tracks collapsed to a few rows each.

Rows per track (resources/report.toml [timeline]): ProfilerStep row, CPU threads down to
`cpu_depth` levels, every GPU stream as one row (its lanes merged), GPU annotations one row, Python
frames and profiler spans left out. Slices narrower than a pixel are merged per (row, colour) into
pixel runs in numpy, so a figure never holds more than rows × width rectangles whatever the trace size.
"""
from __future__ import annotations

import math

import numpy as np

from core.analysis import steps
from core.export import figures
from core.export.figures import Bars, FigureSpec, TimelineFigure
from core.export.style import timeline_config
from core.trace.model import Kind, TraceModel, TraceSet, TrackKind


def busiest_step(model: TraceModel) -> tuple[int, int, int] | None:
    """(step number, t0_ns, t1_ns) of the step with the most GPU busy time (the longest on CPU-only traces)."""
    st = steps.step_stats(model)
    if st.synthetic or not len(st):
        return None
    score = st.gpu_busy_ns if int(st.gpu_busy_ns.max()) > 0 else st.dur_ns
    i = int(np.argmax(score))
    return int(st.number[i]), int(st.ts_ns[i]), int(st.ts_ns[i] + st.dur_ns[i])


def choose_window(ts: TraceSet, spec: FigureSpec) -> tuple[int, int, str]:
    """(t0_ns, t1_ns, description) for the spec: explicit window, a chosen step, or the busiest step."""
    m = ts.primary
    if spec.t0_ns is not None and spec.t1_ns is not None and spec.t1_ns > spec.t0_ns:
        return int(spec.t0_ns), int(spec.t1_ns), figures.span_text(spec.t0_ns, spec.t1_ns)
    if spec.step is not None and len(m.steps):
        hit = np.flatnonzero(m.steps.number == spec.step)
        if len(hit):
            i = int(hit[0])
            t0 = int(m.steps.ts_ns[i])
            t1 = t0 + int(m.steps.dur_ns[i])
            return t0, t1, f"step {spec.step} · {figures.span_text(t0, t1)}"
    got = getattr(ts, "report_parts", None)  # a run view: the primary's worker found it
    best = got("busiest")[0] if got is not None else busiest_step(m)
    if best is not None:
        n, t0, t1 = best
        return t0, t1, f"busiest step {n} · {figures.span_text(t0, t1)}"
    t0, t1 = ts.span_ns
    return t0, t1, f"whole trace · {figures.span_text(t0, t1)}"


def _rows_for_track(model: TraceModel, track: int, cfg: dict) -> int:
    kind = int(model.tracks.kind[track])
    depth = int(model.tracks.max_depth[track]) + 1
    if kind == TrackKind.CPU_THREAD:
        return min(depth, int(cfg["cpu_depth"]))
    if kind == TrackKind.PYTHON:
        return min(depth, int(cfg["python_depth"]))
    if kind in (TrackKind.GPU_STREAM, TrackKind.GPU_ANNOTATION, TrackKind.STEPS):
        return 1
    return 0


_ORDER = {TrackKind.STEPS: 0, TrackKind.CPU_THREAD: 1, TrackKind.PYTHON: 2, TrackKind.GPU_STREAM: 3,
          TrackKind.GPU_ANNOTATION: 3}


def window_of(ts: TraceSet, spec: FigureSpec) -> tuple[float, float, float, str]:
    """(v0, v1, ns per pixel, description): the figure's padded window."""
    cfg = timeline_config()
    t0, t1, detail = choose_window(ts, spec)
    # whole nanoseconds: a rank's piece cut on its own clock (core/ranks/onepass.py) is the run-clock piece moved
    # by an integer, exactly
    pad = max(math.ceil((t1 - t0) * float(cfg["pad_frac"])), 1)
    v0, v1 = t0 - pad, t1 + pad
    px_ns = max((v1 - v0) / max(spec.width_px - int(cfg["label_px"]), 100), 1.0)
    return v0, v1, px_ns, detail


def model_piece(model: TraceModel, v0: float, v1: float, px_ns: float, multi: bool) -> tuple:
    """One model's share of the figure, rows numbered from 0: (labels, group starts, whole-pixel bars
    (x0, x1, row, colour), sub-pixel runs (row, colour, first pixel, end pixel), texts (x0, x1, row, name) widest first, at
    most max_texts). Rows of different models never share a pixel run, so the figure is the models' pieces
    stacked (a run view's workers compute them one rank at a time: core/ranks/rank_parts.py)."""
    cfg = timeline_config()
    labels: list[str] = []
    group_starts: list[int] = []
    chunks = []
    texts: list[tuple[int, int, int, int]] = []
    s = model.slices
    order = sorted(range(len(model.tracks)), key=lambda t: (_ORDER.get(int(model.tracks.kind[t]), 9), t))
    for track in order:
        n_rows = _rows_for_track(model, track, cfg)
        if n_rows == 0:
            continue
        r = model.track_rows(track)
        ts_ns = s.ts_ns[r]
        hi = int(np.searchsorted(ts_ns, v1, side="left"))
        lo = int(np.searchsorted(ts_ns, v0 - int(s.max_dur_ns[track]), side="left"))
        idx = np.arange(r.start + lo, r.start + hi)
        idx = idx[(s.ts_ns[idx] + s.dur_ns[idx] > v0)]
        kind = int(model.tracks.kind[track])
        if kind in (TrackKind.GPU_STREAM, TrackKind.GPU_ANNOTATION, TrackKind.STEPS):
            depth = np.zeros(len(idx), np.int64)
        else:
            depth = s.depth[idx].astype(np.int64)
            keep = depth < n_rows
            idx, depth = idx[keep], depth[keep]
        if not len(idx):
            continue
        n_rows = int(depth.max()) + 1  # only the levels present in the window
        base = len(labels)
        group_starts.append(base)
        label = model.track_label(track)
        labels.extend([f"r{model.rank} · {label}" if multi else label] + [""] * (n_rows - 1))
        x0 = np.clip(s.ts_ns[idx], v0, v1)
        x1 = np.clip(s.ts_ns[idx] + s.dur_ns[idx], v0, v1)
        colour = s.kind[idx].astype(np.int64) * 3 + (s.name[idx].astype(np.int64) % 3)
        chunks.append((x0, x1, base + depth, colour))
        wide = np.flatnonzero((x1 - x0) >= px_ns * int(cfg["min_text_px"]))
        texts.extend((int(x0[w]), int(x1[w]), int(base + depth[w]), int(idx[w])) for w in wide.tolist())
    big, runs = _pixel_runs(chunks, v0, px_ns)
    texts.sort(key=lambda t: t[0] - t[1])
    named = [(a, b, row, model.name(i)) for a, b, row, i in texts[: int(cfg["max_texts"])]]
    return labels, group_starts, big, runs, named


def build(ts: TraceSet, spec: FigureSpec | None = None) -> TimelineFigure:
    spec = spec or FigureSpec()
    cfg = timeline_config()
    v0, v1, px_ns, detail = window_of(ts, spec)
    multi = len(ts.models) > 1
    got = getattr(ts, "report_parts", None)  # a run view: its workers cut each rank's piece
    pieces = got("timeline") if got is not None else [model_piece(m, v0, v1, px_ns, multi) for m in ts.models]
    labels: list[str] = []
    group_starts: list[int] = []
    bigs, runs, texts = [], [], []
    for p_labels, p_starts, big, run, p_texts in pieces:
        base = len(labels)
        labels.extend(p_labels)
        group_starts.extend(base + g for g in p_starts)
        bigs.append((big[0], big[1], big[2] + base, big[3]))
        runs.append((run[0] + base, run[1], v0 + run[2] * px_ns, v0 + run[3] * px_ns))  # pixel columns -> ns
        texts.extend((a, b, row + base, name) for a, b, row, name in p_texts)
    bars, legend = _bars(bigs, runs)
    texts.sort(key=lambda t: t[0] - t[1])
    text_out = tuple((a / 1e6, b / 1e6, row, name) for a, b, row, name in texts[: int(cfg["max_texts"])])
    edges = _step_edges(ts.primary, v0, v1)
    return TimelineFigure(header=figures.header(ts, "timeline", detail), spec=spec, t0_ms=v0 / 1e6, t1_ms=v1 / 1e6,
                          row_labels=tuple(labels), group_starts=tuple(group_starts), bars=bars, texts=text_out,
                          step_edges_ms=edges, legend=legend)


def _pixel_runs(chunks, v0: float, px_ns: float) -> tuple[tuple, tuple]:
    """Slices a pixel wide or more as they are (x0, x1, row, colour); narrower ones one pixel per (row, colour,
    pixel column), consecutive pixels merged into runs (row, colour, first pixel, last pixel + 1), sorted by row."""
    if not chunks:
        z, zf = np.zeros(0, np.int64), np.zeros(0)
        return (zf, zf, z, z), (z, z, zf, zf)
    x0 = np.concatenate([c[0] for c in chunks]).astype(np.float64)
    x1 = np.concatenate([c[1] for c in chunks]).astype(np.float64)
    row = np.concatenate([c[2] for c in chunks])
    col = np.concatenate([c[3] for c in chunks])
    big = (x1 - x0) >= px_ns
    px = np.floor((x0[~big] - v0) / px_ns).astype(np.int64)
    key = np.unique(np.stack([row[~big], col[~big], px], axis=1), axis=0) if (~big).any() else np.zeros((0, 3), np.int64)
    if len(key):
        brk = np.r_[True, (key[1:, 0] != key[:-1, 0]) | (key[1:, 1] != key[:-1, 1]) | (key[1:, 2] != key[:-1, 2] + 1)]
        starts = np.flatnonzero(brk)
        ends = np.r_[starts[1:], len(key)] - 1
        run_row, run_col = key[starts, 0], key[starts, 1]
        run_px0, run_px1 = key[starts, 2], key[ends, 2] + 1
    else:
        run_row = run_col = run_px0 = run_px1 = np.zeros(0, np.int64)
    return (x0[big], x1[big], row[big], col[big]), (run_row, run_col, run_px0, run_px1)


def _bars(bigs: list[tuple], runs: list[tuple]) -> tuple[tuple[Bars, ...], tuple[str, ...]]:
    if not bigs:
        return (), ()
    all_x0 = np.concatenate([b[0] for b in bigs] + [r[2] for r in runs])
    all_x1 = np.concatenate([b[1] for b in bigs] + [r[3] for r in runs])
    all_row = np.concatenate([b[2] for b in bigs] + [r[0] for r in runs]).astype(np.int64)
    all_col = np.concatenate([b[3] for b in bigs] + [r[1] for r in runs]).astype(np.int64)
    out = []
    for c in np.unique(all_col).tolist():
        m = all_col == c
        out.append(Bars(f"{Kind(c // 3).name}:{c % 3}", all_x0[m] / 1e6, all_x1[m] / 1e6, all_row[m]))
    legend = tuple(sorted({Kind(c // 3).name for c in np.unique(all_col).tolist()}, key=lambda k: Kind[k].value))
    return tuple(out), legend


def _step_edges(model: TraceModel, v0: float, v1: float) -> tuple[float, ...]:
    st = model.steps
    if not len(st):
        return ()
    edges = np.unique(np.concatenate([st.ts_ns, st.ts_ns + st.dur_ns]))
    edges = edges[(edges >= v0) & (edges <= v1)]
    return tuple((edges / 1e6).tolist())
