"""One builder of Kineto (PyTorch profiler) trace events for tests (issue 35 item 10).

Tests that need a tiny synthetic trace build its events here instead of writing the dicts by hand:

    from kineto_events import launched, step, write, x
    ev = [step(1, 0, 1000), x("aten::mm", "cpu_op", 10, 50), *launched("sgemm", 20, 30, 400, corr=1)]
    ts = load(write(tmp_path / "t.json", ev), use_cache=False)

Times are microseconds (Kineto's unit), as in a real trace. `x` writes the keys in the order Kineto writes
them ("ph", "name", "cat", "ts", "dur", "pid", "tid", "args"). Device work sits on pid 0 with the stream as
tid and carries the `correlation` / `stream` / `device` args the loader links launches by.
"""
from __future__ import annotations

import json
from pathlib import Path

DEVICE = "NVIDIA H200"


def x(name: str, cat: str, ts, dur, pid=1, tid=1, **args) -> dict:
    """A complete event ("ph": "X"); keyword arguments become its args."""
    return {"ph": "X", "name": name, "cat": cat, "ts": ts, "dur": dur, "pid": pid, "tid": tid, "args": args}


def kernel(name: str, ts, dur, corr: int, stream: int = 7, cat: str = "kernel", device: int = 0, **args) -> dict:
    """Device work (a kernel; cat "gpu_memcpy" / "gpu_memset" for copies) on `stream`, linked by `corr`."""
    return x(name, cat, ts, dur, pid=device, tid=stream, correlation=corr, stream=stream, device=device, **args)


def launched(name: str, launch_ts, kernel_ts, dur, corr: int, stream: int = 7, launch_dur=3,
             api: str = "cudaLaunchKernel") -> list[dict]:
    """A host launch (`api`, cuda_runtime, on pid 1 / tid 1) and the kernel it launched."""
    return [x(api, "cuda_runtime", launch_ts, launch_dur, correlation=corr),
            kernel(name, kernel_ts, dur, corr, stream=stream)]


def step(number: int, ts, dur, pid=1, tid=1) -> dict:
    """A `ProfilerStep#N` annotation (what `prof.step()` records)."""
    return x(f"ProfilerStep#{number}", "user_annotation", ts, dur, pid=pid, tid=tid)


def doc(events: list[dict], device: str | None = DEVICE, total_mem: int | None = None, props: dict | None = None,
        **top) -> dict:
    """The trace document: schemaVersion 1, one GPU's deviceProperties (None: none; `props` adds keys such as
    computeMajor), the events, and any other top-level keys (`distributedInfo=...`, `baseTimeNanoseconds=...`)."""
    out: dict = {"schemaVersion": 1}
    if device is not None:
        device_props = {"id": 0, "name": device}
        if total_mem is not None:
            device_props["totalGlobalMem"] = total_mem
        out["deviceProperties"] = [device_props | (props or {})]
    out["traceEvents"] = events
    out.update(top)
    return out


def write(path: str | Path, events: list[dict], **kw) -> Path:
    """Write `doc(events, **kw)` as JSON to `path`; returns the path."""
    path = Path(path)
    path.write_text(json.dumps(doc(events, **kw)))
    return path
