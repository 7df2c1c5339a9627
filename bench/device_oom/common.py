"""Shared by the OOM scripts: a small MLP and a GPU memory cap (torch.cuda.set_per_process_memory_fraction)
so an OOM happens in seconds with small sizes on an 80 GB card."""
import os

import torch


def cap_memory(limit_gib=None):
    limit = int(float(limit_gib or os.environ.get("OOM_LIMIT_GIB", "3")) * (1 << 30))
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction(limit / total)
    return limit


def mlp(width=4096, layers=4):
    mods = []
    for _ in range(layers):
        mods += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    return torch.nn.Sequential(*mods).cuda()
