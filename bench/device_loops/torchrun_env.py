"""A torchrun-style script: it reads torchrun's environment and dies (KeyError) without it."""
import os

import torch
import torch.distributed as dist
from torch import nn

from _common import WIDTH, batch, iterations

local_rank = int(os.environ["LOCAL_RANK"])
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
if torch.cuda.is_available():
    torch.cuda.set_device(local_rank)
device = f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu"
model = nn.parallel.DistributedDataParallel(nn.Linear(WIDTH, 1).to(device))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in iterations():
    x, y = (t.to(device) for t in batch())
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
dist.destroy_process_group()
print(f"rank {rank}/{world} done")
