"""The facts a report states about a trace: metadata (device, versions, profiler options) and headline numbers."""
from __future__ import annotations

import numpy as np

from core import units
from core.analysis import steps
from core.export import figures, plots_data
from core.trace.model import TraceSet


def _torch_text(extra: dict, bundle: dict) -> str:
    """torch version (+ CUDA runtime / cuDNN the runner recorded), from exact keys only: a search for
    "torch" also matched unrelated keys such as the run config's `torchrun` flag."""
    ours = extra.get("ptprof") if isinstance(extra.get("ptprof"), dict) else {}
    version = ours.get("torch_version") or bundle.get("torch_version") or extra.get("torch_version")
    if not version:
        return "not recorded in the trace"
    parts = [str(version)]
    if ours.get("cuda_runtime"):
        parts.append(f"CUDA runtime {ours['cuda_runtime']}")
    if ours.get("cudnn_version"):
        parts.append(f"cuDNN {ours['cudnn_version']}")
    return " · ".join(parts)


def _cuda_version(v) -> str:
    """Kineto stores CUDA versions as 13000 -> "13.0"."""
    try:
        v = int(v)
    except (TypeError, ValueError):
        return str(v)
    return f"{v // 1000}.{(v % 1000) // 10}"


def metadata(ts: TraceSet) -> list[tuple[str, str]]:
    """(label, value) rows for the report's metadata table."""
    m = ts.primary
    meta = m.meta
    rows: list[tuple[str, str]] = [("trace", ts.path)]
    if len(ts.models) > 1:
        rows.append(("files", ", ".join(sorted({p.rsplit('/', 1)[-1] for p in (x.path for x in ts.models)}))))
    for p in meta.device_properties:
        mem = units.fmt_bytes(p["totalGlobalMem"]) if p.get("totalGlobalMem") else "?"
        cc = f"{p.get('computeMajor', '?')}.{p.get('computeMinor', '?')}"
        rows.append((f"GPU {p.get('id', '?')}", f"{p.get('name', '?')} · {mem} · compute {cc} · {p.get('numSms', '?')} SMs"))
    if not meta.device_properties:
        rows.append(("device", figures.device_label(ts)))
    rows.append(("torch", _torch_text(meta.extra, ts.bundle or {})))
    v = meta.versions
    if v:
        rows.append(("CUDA", f"runtime {_cuda_version(v.get('cuda_runtime_version'))} · driver "
                             f"{_cuda_version(v.get('cuda_driver_version'))} · CUPTI {v.get('cupti_version', '?')}"))
    opts = meta.profiler_options
    names = ("record_shapes", "profile_memory", "with_stack", "with_flops", "with_modules")
    on = [n for n in names if opts.get(n)]
    off = [n for n in names[:3] if not opts.get(n)]
    rows.append(("profiler options", (", ".join(on) or "defaults only") + (f" (off: {', '.join(off)})" if off else "")))
    di = meta.distributed_info
    if di:
        rows.append(("distributed", f"backend {di.get('backend', '?')} · world size {di.get('world_size', '?')} · "
                                    f"ranks loaded {', '.join(map(str, ts.ranks))}"))
    host = meta.extra.get("host_name")
    if host:
        rows.append(("host", str(host)))
    c = ts.counts
    t0, t1 = ts.span_ns
    rows.append(("events", f"{c.events:,} · kernels {c.kernels:,} · memcpy {c.memcpy:,} · memset {c.memset:,} · "
                           f"cpu ops {c.cpu_ops:,}"))
    rows.append(("span", f"{units.fmt_ns(t1 - t0)} · {sum(len(x.steps) for x in ts.models)} ProfilerSteps"))
    if ts.nvml is not None and len(ts.nvml):
        rows.append(("NVML samples", f"{len(np.unique(ts.nvml.ts_ns)):,}"))
    return rows


def headline(ts: TraceSet) -> list[tuple[str, str]]:
    """A few numbers for the report's summary cards."""
    got = getattr(ts, "report_parts", None)  # a run view: the primary's worker computed its part
    out = list(got("headline")[0]) if got is not None else primary_headline(ts.primary)
    peaks = plots_data.memory_peak(ts)
    cuda = [p for p in peaks if p["is_cuda"]] or peaks
    if cuda:
        top = max(cuda, key=lambda p: p["peak_allocated_bytes"])
        out.append(("memory peak", units.fmt_bytes(top["peak_allocated_bytes"])))
    return out


def primary_headline(model) -> list[tuple[str, str]]:
    """The cards that come from the set's primary model."""
    st = steps.step_stats(model)
    out = []
    if len(st):
        real = not st.synthetic
        out.append(("steps" if real else "window", f"{len(st)}" if real else "whole trace"))
        # the mean, as the app's status line and `ptprof analyze` say it (core/analysis/vocab.py): the step every
        # finding's "% of mean step" refers to
        out.append(("mean step" if real else "duration", units.fmt_ns(float(np.mean(st.effective_ns)))))
        if model.devices:
            names, counts = np.unique(st.bound, return_counts=True)
            out.append(("CPU · GPU (mean)", f"{units.fmt_ns(float(np.mean(st.dur_ns)))} · "
                                            f"{units.fmt_ns(float(np.mean(st.gpu_span_ns)))} · "
                                            f"{names[np.argmax(counts)]}-bound"))
            busy = 100.0 * st.gpu_busy_ns.sum() / max(int(st.effective_ns.sum()), 1)
            out.append(("GPU busy", units.fmt_pct(busy)))
    from core.analysis.metrics import rank_metrics
    rm = rank_metrics(model)
    if rm.mfu_pct is not None:
        out.append(("MFU", f"{units.fmt_pct(rm.mfu_pct)} ({rm.tflops:.1f} TFLOP/s)"))
    elif rm.tflops is not None and model.devices:
        out.append(("TFLOP/s", f"{rm.tflops:.1f} (device peak unknown: no MFU)"))
    return out
