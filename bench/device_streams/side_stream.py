"""Cross-stream waits (issue 9): each step a side stream computes the input (a chain of GEMMs, like a
prefetch or a second model) and the compute stream waits for it (event record + wait_event) before the
training step. `python side_stream.py [STEPS] [--time] [--bf16]`; recorded with `ptprof record` on the H200
(bench/device_streams/run.sh). On CPU it runs the same loop without streams."""
import sys

import torch
from torch import nn

steps = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 20
dev = "cuda" if torch.cuda.is_available() else "cpu"
width = 4096 if dev == "cuda" else 256
torch.manual_seed(0)
w = torch.randn(width, width, device=dev) / width ** 0.5
x = torch.randn(2048 if dev == "cuda" else 64, width, device=dev)
model = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
side = torch.cuda.Stream() if dev == "cuda" else None

import time  # noqa: E402

timing = "--time" in sys.argv
# --bf16: the fp32_gemm fix, both streams under bf16 autocast; --time: unprofiled ms/step of the steps after the
# first 10, synced at both ends
bf16 = "--bf16" in sys.argv


def sync():
    if dev == "cuda":
        torch.cuda.synchronize()


t0 = None
for i in range(steps):
    if timing and i == 10:
        sync()
        t0 = time.perf_counter()
    if side is not None:
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side), torch.autocast(dev, dtype=torch.bfloat16, enabled=bf16):
            y = x
            for _ in range(6):  # ~6 fp32 GEMMs on the side stream
                y = torch.tanh(y @ w)
        done = side.record_event()
        torch.cuda.current_stream().wait_event(done)  # cudaStreamWaitEvent: compute waits for the side stream
        y.record_stream(torch.cuda.current_stream())
    else:
        y = x
        for _ in range(6):
            y = torch.tanh(y @ w)
    with torch.autocast(dev, dtype=torch.bfloat16, enabled=bf16):
        loss = model(y).float().pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
sync()
if t0 is not None:
    print(f"unprofiled {1e3 * (time.perf_counter() - t0) / (steps - 10):.3f} ms/step")
