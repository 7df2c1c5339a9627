"""Fixed-size training loop for bench/bench_record_options.py: an MLP with .item() every 10 steps (a host
sync for --no-sync-debug to matter on CUDA). Steps from argv[1], width from LOOP_WIDTH."""
import os
import sys

import torch
from torch import nn

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 80
width = int(os.environ.get("LOOP_WIDTH", "256"))
device = "cuda" if torch.cuda.is_available() else "cpu"
if device == "cpu":
    torch.set_num_threads(1)  # steadier on a shared machine
torch.manual_seed(0)
model = nn.Sequential(*[m for _ in range(4) for m in (nn.Linear(width, width), nn.ReLU())], nn.Linear(width, 10))
model.to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x, y = torch.randn(64, width, device=device), torch.randint(0, 10, (64,), device=device)
for i in range(steps):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if i % 10 == 0:
        loss.item()
