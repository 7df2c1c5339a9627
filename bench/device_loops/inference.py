"""Inference only: no backward, no optimizer."""
import torch
from torch import nn

from _common import DEVICE, WIDTH, batch, iterations

model = nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.ReLU(), nn.Linear(WIDTH, 4)).to(DEVICE).eval()
with torch.inference_mode():
    for _ in iterations():
        x, _y = batch()
        model(x).argmax(-1)
print("done")
