"""Independent check of ptprof's GPU-true step times and what-if savings (H200), on loop shapes that
bench/device_pairs never saw and that nobody tuned the rules for.

Each pair differs by exactly one fix a user would make after reading ptprof's finding:

| pair | before | after | the fix | rule expected to predict it |
| --- | --- | --- | --- | --- |
| log | tfm_log | tfm | drop the per-step `loss.item()` logging in a GPT-like bf16 loop | host_sync |
| amp | resnet_fp32 | resnet_amp | bf16 autocast for a torchvision ResNet-18 (cuDNN TF32 left at its default) | fp32_gemm |
| h2d | h2d_pageable | h2d_pinned | pinned host batch + non_blocking H2D of a uint8 image batch | pageable_memcpy |
| graphs | small_eager | small_graphed | forward + backward as CUDA graphs (make_graphed_callables) | launch_bound |
| cl | resnet_amp | resnet_amp_cl | channels_last model and input (bf16 autocast ResNet-18) | channels_last |
| cl_h2d | h2d_pinned | h2d_pinned_cl | channels_last model and input (two-conv net, pinned uint8 batch) | channels_last |

    python fresh.py run VARIANT --steps N            # the loop alone (what `ptprof record` runs)
    python fresh.py pairs PAIR... --out timing.json  # both variants in one process, interleaved blocks

Ground truth = `pairs`: both variants built in one process, warmed up, then `rounds` x (block of A, block of
B), each block synced at both ends; per-variant medians and the median of the per-round savings.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: the shared timing harness
import interleave  # noqa: E402

DEV = "cuda" if torch.cuda.is_available() else "cpu"


def sync():
    if DEV == "cuda":
        torch.cuda.synchronize()


# -- GPT-like decoder in bf16 with fused AdamW ---------------------------------------------------------
class TinyGPT(nn.Module):
    def __init__(self, vocab=8192, d=1024, heads=16, layers=6, seq=1024):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(seq, d))
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, batch_first=True, norm_first=True,
                                           activation="gelu")
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, vocab, bias=False)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(seq), persistent=False)

    def forward(self, idx):
        x = self.emb(idx) + self.pos[: idx.shape[1]]
        x = self.blocks(x, mask=self.mask, is_causal=True)
        return self.head(x)


def make_tfm(log_every_step):
    torch.manual_seed(0)
    model = TinyGPT().to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=DEV == "cuda")
    data = torch.randint(0, 8192, (8, 1025), device=DEV)
    x, y = data[:, :-1], data[:, 1:]
    history = []

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(DEV, dtype=torch.bfloat16):
            logits = model(x)
        loss = nn.functional.cross_entropy(logits.float().view(-1, logits.shape[-1]), y.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if log_every_step:
            history.append(loss.item())  # the usual "log the loss" line
    return step


# -- torchvision ResNet-18 ----------------------------------------------------------------------------
def make_resnet(amp, channels_last=False):
    import torchvision
    torch.manual_seed(0)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    model = torchvision.models.resnet18(num_classes=100).to(DEV, memory_format=fmt)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(128, 3, 160, 160, device=DEV).contiguous(memory_format=fmt)
    y = torch.randint(0, 100, (128,), device=DEV)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(DEV, dtype=torch.bfloat16, enabled=amp):
            loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return step


# -- uint8 image batch copied from host memory every step ----------------------------------------------
def make_h2d(pinned, channels_last=False):
    torch.manual_seed(0)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    model = nn.Sequential(nn.Conv2d(3, 64, 7, stride=4, padding=3), nn.ReLU(), nn.Conv2d(64, 128, 3, stride=2,
                          padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 1000)).to(
                              DEV, memory_format=fmt)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    batches = [torch.randint(0, 255, (256, 3, 224, 224), dtype=torch.uint8) for _ in range(2)]  # 38.5 MB each
    if pinned and DEV == "cuda":
        batches = [b.pin_memory() for b in batches]
    y = torch.randint(0, 1000, (256,), device=DEV)
    it = [0]

    def step():
        host = batches[it[0] % 2]
        it[0] += 1
        x = host.to(DEV, non_blocking=pinned).float().div_(255).contiguous(memory_format=fmt)
        opt.zero_grad(set_to_none=True)
        with torch.autocast(DEV, dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return step


# -- a deep narrow MLP: many tiny kernels, the CPU's launches set the pace ---------------------------
def make_small(graphed):
    torch.manual_seed(0)
    layers = []
    for _ in range(20):
        layers += [nn.Linear(512, 512), nn.SiLU()]
    model = nn.Sequential(*layers, nn.Linear(512, 1)).to(DEV)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, fused=DEV == "cuda")
    x = torch.randn(64, 512, device=DEV)
    if graphed and DEV == "cuda":
        model = torch.cuda.make_graphed_callables(model, (x,))

    def step():
        opt.zero_grad(set_to_none=False)  # graphed backward writes .grad in place
        model(x).pow(2).mean().backward()
        opt.step()
    return step


VARIANTS = {
    "tfm_log": lambda: make_tfm(True),
    "tfm": lambda: make_tfm(False),
    "resnet_fp32": lambda: make_resnet(False),
    "resnet_amp": lambda: make_resnet(True),
    "resnet_amp_cl": lambda: make_resnet(True, channels_last=True),
    "h2d_pinned_cl": lambda: make_h2d(True, channels_last=True),
    "h2d_pageable": lambda: make_h2d(False),
    "h2d_pinned": lambda: make_h2d(True),
    "small_eager": lambda: make_small(False),
    "small_graphed": lambda: make_small(True),
}
PAIRS = {"log": ("tfm_log", "tfm"), "amp": ("resnet_fp32", "resnet_amp"), "h2d": ("h2d_pageable", "h2d_pinned"),
         "graphs": ("small_eager", "small_graphed"), "cl": ("resnet_amp", "resnet_amp_cl"),
         "cl_h2d": ("h2d_pinned", "h2d_pinned_cl")}


def time_pair(pair, rounds=7, block=30, warm=15):
    rounds = int(os.environ.get("FRESH_ROUNDS", rounds))
    return interleave.time_pair(pair, *PAIRS[pair], VARIANTS, rounds, block, warm)


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["run", "pairs"])
    p.add_argument("names", nargs="+")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--out")
    a = p.parse_args(argv)
    if a.mode == "run":
        step = VARIANTS[a.names[0]]()
        for _ in range(a.steps):
            step()
        sync()
        return 0
    interleave.run_pairs(a.names, time_pair, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
