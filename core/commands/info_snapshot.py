"""`ptprof info SNAPSHOT.pickle`: what a CUDA memory snapshot holds (core.commands.info routes here)."""
from __future__ import annotations

import json
import sys

from core import units
from core.snapshot import active_timeline, load_snapshot, peak_allocations
from core.terminal import printable

TOP_N = 5


def summarize(snap) -> dict:
    devices = []
    for d in snap.devices:
        tr = snap.trace(d)
        tl = active_timeline(snap, d)
        t0, t1 = tr.span_ns if tr is not None else (0, 0)
        seg = snap.segments.device == d
        devices.append({
            "device": d,
            "segments": int(seg.sum()),
            "reserved_bytes": snap.reserved_bytes(d),
            "allocated_bytes": snap.allocated_bytes(d),
            "trace_events": len(tr) if tr is not None else 0,
            "span_ns": t1 - t0,
            "peak_active_bytes": tl.peak_bytes,
            "peak_at_ns": tl.peak_time_ns - t0 if tl.peak_step >= 0 else None,
            "baseline_bytes": tl.baseline_bytes,
            "steps": len(snap.steps(d)),
            "top_at_peak": [{"size_bytes": a.size, "address": hex(a.addr), "user_frame": a.user_frame,
                             "op": a.op}
                            for a in peak_allocations(snap, tl, TOP_N)],
        })
    return {
        "path": snap.path,
        "kind": "cuda_memory_snapshot",
        "devices": devices,
        "segments": len(snap.segments),
        "blocks": len(snap.blocks),
        "reserved_bytes": snap.reserved_bytes(),
        "allocated_bytes": snap.allocated_bytes(),
        "trace_events": sum(len(t) for t in snap.traces),
        "stacks": len(snap.stacks),
        "allocator_settings": {k: v for k, v in snap.allocator_settings.items()
                               if isinstance(v, (str, int, float, bool)) or v is None},
        "warnings": list(snap.warnings),
    }


def run(args) -> int:
    info = summarize(load_snapshot(args.path))
    if args.json:
        json.dump(info, sys.stdout)
        sys.stdout.write("\n")
        return 0
    def w(text: str) -> None:  # frame names, ops and allocator settings come from the file: escaped
        sys.stdout.write(printable(text))
    b = units.fmt_bytes
    w(f"{info['path']}\n")
    w(f"  CUDA memory snapshot · {len(info['devices'])} device(s) · {info['segments']} segments · "
      f"{info['blocks']} blocks · {info['trace_events']:,} trace events · {info['stacks']} stacks\n")
    w(f"  reserved   {b(info['reserved_bytes'])} · allocated {b(info['allocated_bytes'])} (at snapshot time)\n")
    for d in info["devices"]:
        steps = f", {d['steps']} steps" if d["steps"] else ""
        w(f"  cuda:{d['device']}     {d['segments']} segments, reserved {b(d['reserved_bytes'])}, "
          f"allocated {b(d['allocated_bytes'])}; {d['trace_events']:,} events over {units.fmt_ns(d['span_ns'])}"
          f"{steps}\n")
        if d["peak_at_ns"] is not None:
            w(f"    peak active {b(d['peak_active_bytes'])} at +{units.fmt_ns(d['peak_at_ns'])}"
              f" (from {b(d['baseline_bytes'])} before the trace)\n")
        for a in d["top_at_peak"]:
            where = a['user_frame'] or (a['op'] + ' (no Python frame)' if a['op'] else '(no stack)')
            w(f"      {b(a['size_bytes']):>12}  {a['address']}  {where}\n")
    conf = info["allocator_settings"].get("PYTORCH_CUDA_ALLOC_CONF")
    if conf:
        w(f"  PYTORCH_CUDA_ALLOC_CONF={conf}\n")
    for warning in info["warnings"]:
        w(f"  warning    {warning}\n")
    return 0
