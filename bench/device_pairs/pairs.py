"""Before/after training loops for checking ptprof's savings against unprofiled time (H200).

Each VARIANT is one loop shape; pairs differ by exactly one fix:

| pair | before | after | what the fix is |
| --- | --- | --- | --- |
| copy | copy_pageable | copy_pinned | pinned host batch + non_blocking H2D |
| item_gpu | item_gpubound | gemm_bf16 | no `loss.item()` in a GPU-bound loop |
| item_launch | item_launchbound | launchbound | no `.item()` (x2) in a launch-bound loop |
| precision | mlp_fp32 | mlp_bf16 | bf16 autocast instead of fp32 GEMMs |
| loader | loader_nw0 | loader_nw4 | DataLoader num_workers 0 -> 4 |
| compile | compile_break | compile_full | data-dependent branch as torch.where (no graph break) |
| sync | sync_timing | gemm_bf16 | no torch.cuda.synchronize() per step |

`gemm_bf16` also has known FLOPs (for MFU): 4 bias-free Linear(8192, 8192) layers, batch 8192, bf16;
forward 4 GEMMs, backward 4 weight-grad + 3 input-grad GEMMs (the input needs no grad):
11 x 2 x 8192^3 FLOPs per step.

    python pairs.py time VARIANT... --out timings.json   # unprofiled: wall of steps 20..200, synced at both ends
    python pairs.py run VARIANT --steps N                # the loop alone (what `ptprof record` runs)
    python pairs.py pairs PAIR... --out pairs_timing.json  # both variants interleaved, 7 rounds of 40 steps
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: the shared timing harness and data
import interleave  # noqa: E402
from planted_data import AugmentedImages  # noqa: E402

DEV = "cuda" if torch.cuda.is_available() else "cpu"


def _sgd_loop(model, batch_fn, loss_fn, *, sync=False, item=0, autocast=False, opt=None):
    opt = opt or torch.optim.SGD(model.parameters(), lr=1e-4)

    def step():
        x = batch_fn()
        opt.zero_grad(set_to_none=True)
        with torch.autocast(DEV, dtype=torch.bfloat16, enabled=autocast):
            loss = loss_fn(model(x))
        loss.backward()
        opt.step()
        for _ in range(item):
            loss.item()
        if sync:
            torch.cuda.synchronize()
    return step


def gemm_model(width=8192, layers=4, dtype=torch.bfloat16):
    return nn.Sequential(*[nn.Linear(width, width, bias=False) for _ in range(layers)]).to(DEV, dtype)


def make_gemm(sync=False, item=0):
    torch.manual_seed(0)
    model = gemm_model()
    x = torch.randn(8192, 8192, device=DEV, dtype=torch.bfloat16)
    return _sgd_loop(model, lambda: x, lambda out: out.float().mean(), sync=sync, item=item)


def make_launchbound(item=0):
    torch.manual_seed(0)
    layers = []
    for _ in range(24):
        layers += [nn.Linear(256, 256), nn.LayerNorm(256), nn.GELU()]
    model = nn.Sequential(*layers).to(DEV)
    x = torch.randn(64, 256, device=DEV)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, foreach=False)  # per-parameter kernels
    return _sgd_loop(model, lambda: x, lambda out: out.pow(2).mean(), item=item, opt=opt)


def make_mlp(autocast):
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    model = nn.Sequential(*[m for _ in range(6) for m in (nn.Linear(4096, 4096), nn.ReLU())]).to(DEV)
    x = torch.randn(4096, 4096, device=DEV)
    return _sgd_loop(model, lambda: x, lambda out: out.float().pow(2).mean(), autocast=autocast)


def make_copy(pinned):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 4096)).to(DEV)
    host = torch.randn(8192, 4096)  # 128 MiB fp32 batch, copied every step
    if pinned:
        host = host.pin_memory()

    def batch():
        return host.to(DEV, non_blocking=pinned)
    return _sgd_loop(model, batch, lambda out: out.float().pow(2).mean(), autocast=True)


def make_loader(workers):
    torch.manual_seed(0)
    torch.set_num_threads(1) if workers == 0 else None
    model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 64, 3, stride=2, padding=1),
                          nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)).to(DEV)
    loader = torch.utils.data.DataLoader(AugmentedImages(100_000, 160, 128), batch_size=64, num_workers=workers, pin_memory=True,
                                         persistent_workers=workers > 0, prefetch_factor=4 if workers else None)
    it = iter(loader)
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step():
        x, y = next(it)
        x, y = x.to(DEV, non_blocking=True), y.to(DEV, non_blocking=True)
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()
    return step


class Branchy(nn.Module):
    def __init__(self, fullgraph):
        super().__init__()
        self.fullgraph = fullgraph
        self.a = nn.Sequential(nn.Linear(2048, 2048), nn.GELU(), nn.Linear(2048, 2048))
        self.b = nn.Sequential(nn.Linear(2048, 2048), nn.GELU(), nn.Linear(2048, 2048))

    def forward(self, x):
        x = self.a(x)
        if self.fullgraph:
            x = torch.where(x.mean() > 0, x * 2, x)
        elif x.mean() > 0:  # data-dependent branch: a graph break
            x = x * 2
        return self.b(x)


def make_compile(fullgraph):
    torch.manual_seed(0)
    model = torch.compile(Branchy(fullgraph).to(DEV))
    x = torch.randn(1024, 2048, device=DEV)
    return _sgd_loop(model, lambda: x, lambda out: out.float().pow(2).mean(), autocast=True)


VARIANTS = {
    "gemm_bf16": lambda: make_gemm(),
    "sync_timing": lambda: make_gemm(sync=True),
    "item_gpubound": lambda: make_gemm(item=1),
    "launchbound": lambda: make_launchbound(),
    "item_launchbound": lambda: make_launchbound(item=2),
    "mlp_fp32": lambda: make_mlp(False),
    "mlp_bf16": lambda: make_mlp(True),
    "copy_pageable": lambda: make_copy(False),
    "copy_pinned": lambda: make_copy(True),
    "loader_nw0": lambda: make_loader(0),
    "loader_nw4": lambda: make_loader(4),
    "compile_break": lambda: make_compile(False),
    "compile_full": lambda: make_compile(True),
}


def time_variant(name, first=20, last=200):
    return {"variant": name, "steps": last - first, "step_ms": interleave.steady_ms(VARIANTS[name](), first, last)}


PAIRS = {"copy": ("copy_pageable", "copy_pinned"), "item_gpu": ("item_gpubound", "gemm_bf16"),
         "item_launch": ("item_launchbound", "launchbound"), "precision": ("mlp_fp32", "mlp_bf16"),
         "loader": ("loader_nw0", "loader_nw4"), "compile": ("compile_break", "compile_full"),
         "sync": ("sync_timing", "gemm_bf16")}


def time_pair(pair, rounds=7, block=40, warm=20):
    """Both variants of a pair in one process, interleaved (bench/interleave.py)."""
    return interleave.time_pair(pair, *PAIRS[pair], VARIANTS, rounds, block, warm)


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["time", "run", "pairs"])
    p.add_argument("variants", nargs="+")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--out")
    p.add_argument("--last", type=int, default=200)
    a = p.parse_args(argv)
    if a.mode == "run":
        step = VARIANTS[a.variants[0]]()
        for _ in range(a.steps):
            step()
        interleave.sync()
        return
    if a.mode == "pairs":  # interleaved timing of whole pairs: python pairs.py pairs item_gpu sync ... --out F
        interleave.run_pairs(a.variants, time_pair, a.out)
        return
    results = []
    for name in a.variants:
        res = time_variant(name, last=a.last)
        print(json.dumps(res), flush=True)
        results.append(res)
        if a.out:
            with open(a.out, "w") as fh:
                json.dump({"device": torch.cuda.get_device_name() if DEV == "cuda" else "cpu",
                           "torch": torch.__version__, "results": results}, fh, indent=1)
        torch.cuda.empty_cache() if DEV == "cuda" else None


if __name__ == "__main__":
    sys.exit(main())
