"""Runner costs: GPU sampling at 10 Hz (share of a core) and the child's step-hook overhead vs plain
torch.profiler stepped by hand.

    python bench/bench_runner.py                 # fake NVML backend, CPU training
    python bench/bench_runner.py --real --device cuda --width 2048 --batch 1024   # on a GPU box
    python bench/bench_runner.py --json out.json

Overhead method: the same training loop runs (a) with torch.profiler created in the script and
`prof.step()` after every optimizer step, (b) unmodified under core/runner/child.py (optimizer hook,
events.jsonl, metadata). Both record per-step wall times themselves; we compare medians over all
steps after the first few, alternating a/b runs to spread drift, and also time the hook alone.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

LOOP = """
import json, os, sys, time, torch
from torch import nn
W, B, STEPS, DEV = {width}, {batch}, {steps}, "{device}"
torch.manual_seed(0)
if DEV == "cpu":
    torch.set_num_threads(1)  # less sensitive to other load on the machine
model = nn.Sequential(nn.Linear(W, W * 2), nn.ReLU(), nn.Linear(W * 2, W), nn.ReLU(), nn.Linear(W, 10)).to(DEV)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x, y = torch.randn(B, W, device=DEV), torch.randint(0, 10, (B,), device=DEV)
loss_fn = nn.CrossEntropyLoss()
{prof_open}
times = []
last = time.perf_counter_ns()
for i in range(STEPS):
    opt.zero_grad(set_to_none=True)
    loss_fn(model(x), y).backward()
    opt.step()
    {prof_step}
    if DEV == "cuda":
        torch.cuda.synchronize()
    now = time.perf_counter_ns(); times.append(now - last); last = now
{prof_close}
json.dump(times, open(os.environ["BENCH_OUT"], "w"))
"""

PLAIN_OPEN = """acts = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if DEV == "cuda" else [])
prof = torch.profiler.profile(activities=acts,
    schedule=torch.profiler.schedule(wait={wait}, warmup={warmup}, active={active}, repeat=1),
    on_trace_ready=lambda p: p.export_chrome_trace(os.path.join(os.environ["BENCH_DIR"], "plain.json")),
    record_shapes=True, profile_memory=True)
prof.start()"""


def sampling_cost(real: bool, seconds: float, rate_hz: float) -> dict:
    from core.gpu.backend import FakeBackend, open_backend
    from core.gpu.sampler import Sampler
    backend = open_backend() if real else FakeBackend(8)
    if not backend.available:
        return {"backend": backend.name, "reason": backend.reason}
    with tempfile.TemporaryDirectory() as d:
        s = Sampler(backend, rate_hz=rate_hz, csv_path=Path(d) / "nvml.csv", pids=lambda: {os.getpid()})
        t0 = time.monotonic()
        s.start()
        time.sleep(seconds)
        s.stop()
        wall = time.monotonic() - t0
        size = (Path(d) / "nvml.csv").stat().st_size
    backend.close()
    return {"backend": backend.name, "gpus": len(s.names), "rate_hz": rate_hz, "seconds": round(wall, 2),
            "samples": s.samples, "achieved_hz": round(s.samples / wall, 2),
            "core_pct": round(100 * s.cpu_fraction(wall), 3), "csv_bytes_per_s": round(size / wall)}


def _run(kind: str, a, workdir: Path) -> list[int]:
    out = workdir / f"{kind}.json"
    sched = {"wait": a.wait, "warmup": a.warmup, "active": a.active}
    fill = {"width": a.width, "batch": a.batch, "steps": a.steps, "device": a.device}
    if kind == "plain":
        src = LOOP.format(**fill, prof_open=PLAIN_OPEN.format(**sched), prof_step="prof.step()",
                          prof_close="prof.stop()")
        argv = [sys.executable, str(workdir / "plain.py")]
        (workdir / "plain.py").write_text(src)
    else:
        src = LOOP.format(**fill, prof_open="", prof_step="pass", prof_close="")
        (workdir / "hooked.py").write_text(src)
        bundle = workdir / "bundle"
        bundle.mkdir(exist_ok=True)
        argv = [sys.executable, str(REPO / "core" / "runner" / "child.py"), "--bundle", str(bundle),
                "--wait", str(a.wait - 1), "--warmup", str(a.warmup), "--active", str(a.active), "--repeat", "1",
                "--", str(workdir / "hooked.py")]  # wait-1: the child's schedule starts at the first step
    env = {**os.environ, "BENCH_OUT": str(out), "BENCH_DIR": str(workdir)}
    subprocess.run(argv, env=env, check=True, capture_output=True, cwd=workdir)
    return json.loads(out.read_text())


def hook_overhead(a) -> dict:
    skip = 3
    res = {"plain": [], "hooked": []}
    with tempfile.TemporaryDirectory() as d:
        for _ in range(a.repeats):
            for kind in ("plain", "hooked"):
                times = _run(kind, a, Path(d))
                res[kind].append(statistics.median(times[skip:]))
    plain = min(res["plain"])  # min of per-run medians: robust to other load on a shared machine
    hooked = min(res["hooked"])
    return {"device": a.device, "width": a.width, "batch": a.batch, "steps": a.steps,
            "plain_step_ms": round(plain / 1e6, 4), "hooked_step_ms": round(hooked / 1e6, 4),
            "overhead_pct": round(100 * (hooked - plain) / plain, 2),
            "runs_ms": {k: [round(v / 1e6, 4) for v in vs] for k, vs in res.items()},
            "hook_alone_us": round(_hook_alone_us(), 2)}


def _hook_alone_us(n: int = 20000) -> float:
    """The bookkeeping of one optimizer-step hook call without prof.step(): step event + clock."""
    from core.runner.protocol import EventWriter
    with tempfile.TemporaryDirectory() as d:
        w = EventWriter(os.path.join(d, "e.jsonl"))
        last = time.perf_counter_ns()
        t0 = time.perf_counter()
        for i in range(n):
            now = time.perf_counter_ns()
            w.emit("step", step=i, dur_ns=now - last, source="optimizer")
            last = now
        dt = time.perf_counter() - t0
        w.close()
    return dt / n * 1e6


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--real", action="store_true", help="sample real GPUs through NVML (default: fake backend)")
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--rate", type=float, default=10.0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--width", type=int, default=512)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--wait", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--active", type=int, default=10)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--skip-overhead", action="store_true")
    p.add_argument("--json", default="")
    a = p.parse_args()
    out = {"sampling": sampling_cost(a.real, a.seconds, a.rate)}
    print("sampling", json.dumps(out["sampling"]), flush=True)
    if not a.skip_overhead:
        out["hook"] = hook_overhead(a)
        print("hook", json.dumps(out["hook"]), flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
