"""A tiny training loop for trying ptprof: runs on CPU or GPU in seconds.

    ptprof record resources/examples/train_small.py --steps 12
    python resources/examples/train_small.py --device cpu

It has one deliberate problem for the analyzer to find: `loss.item()` every step forces a host sync
(the CPU waits for the GPU before it can queue the next step).
"""
import argparse
import time

import torch
from torch import nn


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--device", default="auto", help="auto | cpu | cuda")
    a = p.parse_args()
    device = torch.device("cuda" if a.device == "auto" and torch.cuda.is_available() else
                          ("cpu" if a.device == "auto" else a.device))
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(a.width, a.width * 2), nn.ReLU(), nn.Linear(a.width * 2, a.width),
                          nn.ReLU(), nn.Linear(a.width, 10)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    data = torch.randn(a.batch * 4, a.width)  # pinned-less host tensor: copied every step
    target = torch.randint(0, 10, (a.batch * 4,))
    t0 = time.perf_counter()
    for step in range(a.steps):
        i = (step % 4) * a.batch
        x, y = data[i:i + a.batch].to(device), target[i:i + a.batch].to(device)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        value = loss.item()  # deliberate host sync every step
        if step % 4 == 0 or step == a.steps - 1:
            print(f"step {step:3d} loss {value:.4f}", flush=True)
    print(f"done: {a.steps} steps on {device} in {time.perf_counter() - t0:.2f} s", flush=True)


if __name__ == "__main__":
    main()
