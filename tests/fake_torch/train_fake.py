"""A training loop for the fake torch (tests/fake_torch): the compatibility job records it with the runner's
child under each Python. MODE=optimizer (default) | backward | inference | fail; STEPS=N; STEP_S=seconds of
"work" per step (a stop test sends SIGINT meanwhile)."""
import os
import sys
import time

import torch

mode = os.environ.get("MODE", "optimizer")
steps = int(os.environ.get("STEPS", "12"))
step_s = float(os.environ.get("STEP_S", "0.002"))
model, loss_fn = torch.nn.Linear(1, 1), torch.nn.MSELoss()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
print("fake training:", mode, torch.__version__, sys.version.split()[0], flush=True)
for i in range(steps):
    x = torch.tensor(float(i % 5))
    with torch.profiler.record_function("data"):
        time.sleep(step_s / 2)
    if mode == "inference":
        y = model(x)
        time.sleep(step_s / 2)
        continue
    with torch.autocast("cpu"):
        loss = loss_fn(model(x), x * 2.0 + 1.0)
    loss.backward()
    time.sleep(step_s / 2)
    if mode == "backward":  # a hand-written SGD update
        for p in model.parameters():
            p.value -= 0.05 * p.grad
            p.grad = None
    else:
        opt.step()
        opt.zero_grad()
    if mode == "fail" and i == 6:
        raise ValueError("the script failed at step %d" % i)
print("done", round(model.weight.item(), 3), flush=True)
