"""A near-endless training run (10**9 steps): meant to be ended by --stop-after-window."""
import torch
from torch import nn

from _common import DEVICE, WIDTH, batch

model = nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.ReLU(), nn.Linear(WIDTH, 1)).to(DEVICE)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(10**9):  # noqa: B007 - the loop a reader of the trace looks for
    x, y = batch()
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
