import sys

import torch
from torch import nn

from . import model as model_lib  # relative import: only works when run as a module

if __name__ == "__main__":
    assert sys.argv[0].endswith("train.py"), sys.argv  # as python -m sets it
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    device = "cuda" if torch.cuda.is_available() else "cpu"
    net = model_lib.make(32).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    for _ in range(steps):
        x, y = torch.randn(16, 32, device=device), torch.randn(16, 1, device=device)
        loss = nn.functional.mse_loss(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("done", __name__, __package__)
