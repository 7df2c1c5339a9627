"""DDP training where one rank is slower (a planted straggler), for `ptprof record --nproc-per-node 2`.

    ptprof record --nproc-per-node 2 bench/multi/ddp_straggler.py --slow-rank 1 --delay-ms 30

Runs on CPU (gloo) or on GPUs (nccl, one per rank). The slow rank spends --delay-ms per step in its
data loading (a Python-side preprocessing loop), so at every gradient all-reduce the other ranks wait.
`--extra-work N` gives the slow rank N extra matmuls instead (rank_imbalance with compute).
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def slow_preprocess(x, delay_s):
    t_end = time.perf_counter() + delay_s
    while time.perf_counter() < t_end:  # CPU-side work, not a sleep: it shows as busy Python time
        x = x * 1.0
    return x


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=14)
    p.add_argument("--slow-rank", type=int, default=1)
    p.add_argument("--delay-ms", type=float, default=30.0)
    p.add_argument("--extra-work", type=int, default=0)
    p.add_argument("--width", type=int, default=512)
    a = p.parse_args()
    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    rank = dist.get_rank()
    device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}" if cuda else "cpu")
    if cuda:
        torch.cuda.set_device(device)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(a.width, a.width), nn.ReLU(), nn.Linear(a.width, 10)).to(device))
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    for _step in range(a.steps):
        x = torch.randn(64, a.width)
        with torch.profiler.record_function("load_batch"):
            if rank == a.slow_rank:
                x = slow_preprocess(x, a.delay_ms / 1e3)
                for _ in range(a.extra_work):
                    x = (x @ torch.eye(a.width)).contiguous()
        x = x.to(device)
        y = torch.randint(0, 10, (64,), device=device)
        opt.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
