"""An endless loop whose Ctrl-C / error handlers exit 1 (as word_language_model and Lightning do): ended by
--stop-after-window, neither handler may run, `finally` must."""
import sys

import torch
from torch import nn

from _common import DEVICE, WIDTH, batch

model = nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.ReLU(), nn.Linear(WIDTH, 1)).to(DEVICE)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
try:
    for step in range(10**9):  # noqa: B007 - the loop a reader of the trace looks for
        x, y = batch()
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
except KeyboardInterrupt:
    print("user Ctrl-C handler ran")
    sys.exit(1)
except Exception:
    print("user error handler ran")
    sys.exit(1)
finally:
    print("user finally ran")
