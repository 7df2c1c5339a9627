"""memory.png and gpu.png data: allocated/reserved per device with its peak; NVML samples over the run."""
from __future__ import annotations

import numpy as np

from core import units
from core.export import figures
from core.export.figures import FigureSpec, LineFigure, Marker, PlotPanel, Series
from core.export.tables import MIB, NVML_ALIASES
from core.trace.model import TraceSet


def _step_bands(ts: TraceSet, scale: float) -> tuple[tuple[float, float, str], ...]:
    st = ts.primary.steps
    return tuple((float(a) / scale, float(a + d) / scale, f"step {n}")
                 for n, a, d in zip(st.number.tolist(), st.ts_ns.tolist(), st.dur_ns.tolist()))


def model_memory_peak(m) -> list[dict]:
    """memory_peak's entries of one model."""
    out = []
    mem = m.memory
    if not len(mem):
        return out
    for dev in np.unique(mem.device).tolist():
        sel = mem.device == dev
        alloc = mem.total_allocated[sel]
        i = int(np.argmax(alloc))
        out.append({"rank": m.rank, "device": int(dev), "is_cuda": bool(mem.device_type[sel][0] != 0),
                    "peak_allocated_bytes": int(alloc[i]), "at_ns": int(mem.ts_ns[sel][i]),
                    "peak_reserved_bytes": int(mem.total_reserved[sel].max()),
                    "total_bytes": m.meta.device_total_memory(int(dev)) if dev >= 0 else None})
    return out


def memory_peak(ts: TraceSet) -> list[dict]:
    """Peak allocated / reserved per (rank, device): [{rank, device, peak_allocated_bytes, at_ns, ...}]."""
    got = getattr(ts, "report_parts", None)  # a run view: each rank's worker computed its own entries
    per_model = got("memory_peak") if got is not None else [model_memory_peak(m) for m in ts.models]
    return [p for entries in per_model for p in entries]


def memory_curves(m, peaks: list[dict], width_px: int) -> list[tuple]:
    """(peak entry, key, x ns (int64), y MiB) of one model's devices in `peaks`: the memory figure's series.
    The points kept do not depend on the clock (decimated on ns since the device's first sample), so a rank's
    curves made on its own clock are the run's moved by an integer (core/ranks/onepass.py)."""
    out = []
    for p in peaks:
        sel = m.memory.device == p["device"]
        t = np.asarray(m.memory.ts_ns[sel], np.int64)
        rel = (t - t[0]) / 1e6 if len(t) else np.zeros(0)
        for key, col in (("allocated", m.memory.total_allocated), ("reserved", m.memory.total_reserved)):
            if key == "reserved" and not p["peak_reserved_bytes"]:
                continue  # CPU memory events carry no reserved total
            keep, y = figures.decimate(np.arange(len(t)), col[sel] / MIB, width_px, rel)
            out.append((p, key, t[keep], y))
    return out


def memory(ts: TraceSet, spec: FigureSpec | None = None) -> LineFigure | None:
    """Allocated and reserved memory per device (CUDA devices; CPU when the trace has no GPU memory)."""
    spec = spec or FigureSpec()
    peaks = memory_peak(ts)
    cuda = [p for p in peaks if p["is_cuda"]]
    chosen = cuda or peaks
    if not chosen:
        return None
    multi = len(ts.models) > 1
    series, markers = [], []
    got = getattr(ts, "report_parts", None)
    if got is not None:  # a run view: each rank's worker drew its curves (cuda first, as chosen here)
        curves: dict = {}
        for per_rank in got("memory_curves"):  # the first model of a rank draws it, as below
            for p, key, x, y in per_rank[bool(cuda)]:
                curves.setdefault((p["rank"], p["device"], key), (x, y))
    for p in chosen:
        who = ("CPU" if p["device"] < 0 else f"GPU {p['device']}") + (f" r{p['rank']}" if multi else "")
        if got is not None:
            for key in ("allocated", "reserved"):
                if (p["rank"], p["device"], key) in curves:
                    x, y = curves[(p["rank"], p["device"], key)]
                    series.append(Series(f"{who} {key}", x / 1e6, y, key, step=True))
        else:
            m = next(x for x in ts.models if x.rank == p["rank"])
            for _p, key, x, y in memory_curves(m, [p], spec.width_px):
                series.append(Series(f"{who} {key}", x / 1e6, y, key, step=True))
        markers.append(Marker(p["at_ns"] / 1e6, p["peak_allocated_bytes"] / MIB,
                              f"peak {units.fmt_bytes(p['peak_allocated_bytes'])} ({who})"))
    top = max(chosen, key=lambda p: p["peak_allocated_bytes"])
    detail = f"peak allocated {units.fmt_bytes(top['peak_allocated_bytes'])}"
    if top["total_bytes"]:
        detail += f" of {units.fmt_bytes(top['total_bytes'])} ({100 * top['peak_allocated_bytes'] / top['total_bytes']:.1f} %)"
    t0, t1 = ts.span_ns
    detail += f" · {figures.span_text(t0, t1)}"
    panel = PlotPanel("memory (MiB)", tuple(series), tuple(markers))
    return LineFigure("memory", figures.header(ts, "memory", detail), spec, "time (ms)", (panel,), _step_bands(ts, 1e6))


def nvml_series(ts: TraceSet) -> dict[tuple[int, str], tuple[np.ndarray, np.ndarray]]:
    """{(gpu, export column): (t_ns, value)} of the set's NVML samples."""
    table, strings = ts.nvml, ts.nvml_strings
    out: dict = {}
    if table is None or strings is None or not len(table):
        return out
    for sid in np.unique(table.series).tolist():
        gpu, _, metric = strings[sid].partition("/")
        g = int(gpu[3:]) if gpu[3:].isdigit() else 0
        sel = table.series == sid
        order = np.argsort(table.ts_ns[sel], kind="stable")
        out[(g, NVML_ALIASES.get(metric, metric))] = (table.ts_ns[sel][order], table.value[sel][order])
    return out


def gpu(ts: TraceSet, spec: FigureSpec | None = None) -> LineFigure | None:
    """NVML utilisation (%) and memory used (MiB) per GPU over the sampled run; None without samples."""
    spec = spec or FigureSpec()
    data = nvml_series(ts)
    if not data:
        return None
    gpus = sorted({g for g, _ in data})
    multi = len(gpus) > 1
    util, mem = [], []
    for g in gpus:
        tag = f"GPU {g} " if multi else ""
        for col, key, label, target in (("gpu_util_pct", "gpu_util", "SM util %", util),
                                        ("mem_util_pct", "mem_util", "memory-bus util %", util),
                                        ("mem_used_mb", "mem_used", "memory used MiB", mem)):
            if (g, col) in data:
                t, v = data[(g, col)]
                target.append(Series(tag + label, t / 1e9, v, key))
    panels = [PlotPanel("utilisation (%)", tuple(util), y_max=100.0)] if util else []
    if mem:
        total = data.get((gpus[0], "mem_total_mb"))
        of = f" of {total[1].max():.0f}" if total is not None and len(total[1]) else ""
        panels.append(PlotPanel(f"memory used (MiB{of})", tuple(mem)))
    t0, t1 = ts.span_ns
    all_t = np.concatenate([t for t, _ in data.values()])
    util_vals = [data[(g, "gpu_util_pct")][1] for g in gpus if (g, "gpu_util_pct") in data]
    inside = [v[(data[(g, 'gpu_util_pct')][0] >= t0) & (data[(g, 'gpu_util_pct')][0] <= t1)]
              for g, v in zip(gpus, util_vals)]
    mean_in = float(np.concatenate(inside).mean()) if inside and sum(len(x) for x in inside) else None
    # sampling instants = the most frequent series (some columns, e.g. PCIe, are read at 1 Hz only)
    n_samples = max(len(t) for t, _ in data.values())
    detail = f"{n_samples} samples over {units.fmt_ns(int(all_t.max() - all_t.min()))}"
    if mean_in is not None:
        detail += f" · mean SM util {mean_in:.0f} % inside the profiled window"
    shade = ((t0 / 1e9, t1 / 1e9, "profiled window"),)
    return LineFigure("gpu", figures.header(ts, "GPU (NVML)", detail), spec, "time since trace start (s)",
                      tuple(panels), shade)
