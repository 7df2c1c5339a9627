"""Gradient accumulation: 4 backward passes per optimizer step."""
import torch
from torch import nn

from _common import DEVICE, WIDTH, batch, iterations

ACCUM = 4
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.ReLU(), nn.Linear(WIDTH, 1)).to(DEVICE)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in iterations():
    for _micro in range(ACCUM):
        x, y = batch()
        (nn.functional.mse_loss(model(x), y) / ACCUM).backward()
    opt.step()
    opt.zero_grad()
print("done")
