"""`ptprof info PATH [--json] [--no-cache]`: what was loaded."""
from __future__ import annotations

import json
import sys

from core import units
from core.analysis import health
from core.terminal import printable
from core.trace.loader import load


def add_arguments(p) -> None:
    p.add_argument("path", help="trace file (.json/.json.gz), TensorBoard log dir, multi-rank dir, run bundle "
                                "or CUDA memory snapshot (.pickle)")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.add_argument("--no-cache", action="store_true", help="ignore and do not write the columnar cache")


def summarize(ts) -> dict:
    c = ts.counts
    t0, t1 = ts.span_ns
    devices = sorted({d for m in ts.models for d in m.devices})
    return {
        "path": ts.path,
        "events": c.events,
        "slices": sum(len(m.slices) for m in ts.models),
        "kernels": c.kernels,
        "memcpy": c.memcpy,
        "memset": c.memset,
        "cpu_ops": c.cpu_ops,
        "python_frames": c.python,
        "memory_events": c.memory,
        "steps": sum(len(m.steps) for m in ts.models),
        "ranks": len(ts.ranks),
        "files": len(ts.models),
        "devices": devices,
        "device_names": sorted({p.get("name", "?") for m in ts.models for p in m.meta.device_properties}),
        "span_ns": t1 - t0,
        "load_s": round(ts.load_s, 4),
        "cache_hit": ts.cache_hit,
        "nvml_samples": int(len(ts.nvml)) if ts.nvml is not None else 0,
        "warnings": ts.all_warnings,
        "health": [h.to_json() for h in health.check(ts)],  # can I trust this trace? (core/analysis/health.py)
    }


def run(args) -> int:
    from core.snapshot import is_snapshot_path
    if is_snapshot_path(args.path):  # torch.cuda.memory._dump_snapshot pickle
        from core.commands import info_snapshot
        return info_snapshot.run(args)
    ts = load(args.path, use_cache=not args.no_cache)
    info = summarize(ts)
    if args.json:
        json.dump(info, sys.stdout)
        sys.stdout.write("\n")
        return 0
    def w(text: str) -> None:  # names come from the file: no raw control sequences on the terminal
        sys.stdout.write(printable(text))

    w(f"{info['path']}\n")
    w(f"  events     {info['events']:,} ({info['slices']:,} slices) in {units.count(info['files'], 'file')}, "
      f"{units.count(info['ranks'], 'rank')}\n")
    w(f"  gpu        kernels {info['kernels']:,} · memcpy {info['memcpy']:,} · memset {info['memset']:,}"
      f" · devices {info['devices'] or 'none'} {', '.join(info['device_names'])}\n")
    w(f"  cpu        ops {info['cpu_ops']:,} · python frames {info['python_frames']:,}"
      f" · [memory] events {info['memory_events']:,}\n")
    w(f"  steps      {info['steps']} · span {units.fmt_ns(info['span_ns'])}\n")
    w(f"  loaded in  {info['load_s']:.2f} s ({'cache hit' if info['cache_hit'] else 'parsed'})\n")
    for warning in info["warnings"]:
        w(f"  warning    {warning}\n")
    for h in info["health"]:
        w(f"  {h['severity']:<10} {h['code']}: {h['message']}\n")
    return 0
