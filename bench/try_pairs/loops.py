"""Training loops that each plant problems ptprof's rules find, for checking `ptprof try` (issue 29) against
the same fixes made by hand and timed without the profiler.

    python loops.py run LOOP [--steps N]            # the loop as a user runs it (what `ptprof record/try` runs)
    python loops.py time LOOP FIX[,FIX...] ...       # unprofiled, in process: each variant (base = as planted,
                                                     # FIX = that fix written in the code, all = every fix)
                                                     # timed over steps 20..200 with a device sync at both
                                                     # ends, 2 rounds (forward, then reverse order)

| loop | planted | fixes by hand |
| --- | --- | --- |
| vision | DataLoader(num_workers=0) with a CPU transform, pageable batch copies, fp32 convs (cudnn.allow_tf32 off) | pin_memory (pin_memory=True + non_blocking), num_workers (N as the switch picks), tf32 |
| mlp | Adam(foreach=False) over 64 tensors, zero_grad(set_to_none=False), fp32 GEMMs | foreach, set_to_none, tf32 |
| amp_conv | bf16 autocast convolutions on NCHW tensors (cuDNN converts to NHWC and back) | channels_last (model + input) |
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
from torch import nn

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2])]  # bench/, repo
from interleave import steady_ms, sync  # noqa: E402
from planted_data import AugmentedImages  # noqa: E402

from core.runner.switches import default_workers  # noqa: E402  (what the num_workers switch picks)

DEV = "cuda" if torch.cuda.is_available() else "cpu"
FIXES = {"vision": ("pin_memory", "num_workers", "tf32"), "mlp": ("foreach", "set_to_none", "tf32"),
         "amp_conv": ("channels_last",)}


def tf32(on: bool) -> None:
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on
    torch.set_float32_matmul_precision("high" if on else "highest")


def vision(fix, steps):
    torch.manual_seed(0)
    tf32("tf32" in fix or "all" in fix)
    model = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 128, 3, stride=2, padding=1),
                          nn.ReLU(), nn.Conv2d(128, 128, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(128, 10)).to(DEV)
    pin = bool({"pin_memory", "all"} & fix)
    nw = default_workers() if {"num_workers", "all"} & fix else 0
    loader = torch.utils.data.DataLoader(AugmentedImages(64 * (steps + 8), 112, 96), batch_size=64, num_workers=nw, pin_memory=pin)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    it = iter(loader)

    def step():
        x, y = next(it)
        x, y = x.to(DEV, non_blocking=pin), y.to(DEV, non_blocking=pin)
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    return step


def mlp(fix, steps):
    torch.manual_seed(0)
    tf32("tf32" in fix or "all" in fix)
    model = nn.Sequential(*[m for _ in range(32) for m in (nn.Linear(1024, 1024), nn.ReLU())]).to(DEV)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, foreach=bool({"foreach", "all"} & fix))
    none = bool({"set_to_none", "all"} & fix)
    x = torch.randn(1024, 1024, device=DEV)

    def step():
        opt.zero_grad(set_to_none=none)
        model(x).pow(2).mean().backward()
        opt.step()
    return step


def amp_conv(fix, steps):
    torch.manual_seed(0)
    cl = bool({"channels_last", "all"} & fix)
    model = nn.Sequential(nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(), nn.Conv2d(128, 128, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(128, 64, 3, padding=1)).to(DEV)
    if cl:
        model = model.to(memory_format=torch.channels_last)
    x = torch.randn(32, 64, 64, 64, device=DEV)
    if cl:
        x = x.contiguous(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)

    def step():
        opt.zero_grad()
        with torch.autocast(DEV, dtype=torch.bfloat16):
            out = model(x)
        out.float().pow(2).mean().backward()
        opt.step()
    return step


LOOPS = {"vision": vision, "mlp": mlp, "amp_conv": amp_conv}


def time_variant(loop, fix, first=20, last=200):
    return steady_ms(LOOPS[loop](fix, last), first, last)


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=("run", "time"))
    p.add_argument("loop", choices=sorted(LOOPS))
    p.add_argument("variants", nargs="*", default=[])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--out")
    a = p.parse_args(argv)
    if a.mode == "run":
        step = LOOPS[a.loop](set(), a.steps)
        for _ in range(a.steps):
            step()
        sync()
        return
    variants = ["base"] + (a.variants or [*FIXES[a.loop], "all"])
    times = {v: [] for v in variants}
    for order in (variants, variants[::-1]):
        for v in order:
            times[v].append(time_variant(a.loop, set(v.split(",")) - {"base"}))
            if DEV == "cuda":
                torch.cuda.empty_cache()
    res = {"loop": a.loop, "device": torch.cuda.get_device_name() if DEV == "cuda" else "cpu",
           "torch": torch.__version__, "method": "steps 20..200, synced at both ends, mean of 2 rounds",
           "step_ms": {v: sum(t) / len(t) for v, t in times.items()}, "rounds_ms": times}
    print(json.dumps(res), flush=True)
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(res, fh, indent=1)


if __name__ == "__main__":
    sys.exit(main())
