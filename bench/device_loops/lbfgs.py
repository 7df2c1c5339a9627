"""A closure optimizer: LBFGS.step(closure) calls the closure (and its backward) several times per step."""
import torch
from torch import nn

from _common import DEVICE, WIDTH, batch, iterations

torch.manual_seed(0)
model = nn.Linear(WIDTH, 1).to(DEVICE)
opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=4)
calls = 0
for _ in iterations():
    x, y = batch()

    def closure(x=x, y=y):  # this iteration's batch
        global calls
        calls += 1
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        return loss
    opt.step(closure)
print("closure calls", calls)
