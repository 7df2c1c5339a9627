"""A two-rank NCCL data-parallel run written as Kineto traces (no shared trace has NCCL kernels: gpu_ddp2 is
gloo). Per step and rank: 10 bf16 GEMMs on stream 7 (launched back to back, 150 µs apart) and 3 all-reduce
kernels on stream 20 (500 µs each at 900 / 1500 / 2100 µs into the step), so part of the communication runs
under compute and part of it alone."""
from __future__ import annotations

import json
import random
from pathlib import Path

from kineto_events import x as _x

ALLREDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"


def write_nccl_run(folder: Path, steps: int = 6, ranks: int = 2) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for rank in range(ranks):
        rnd = random.Random(rank)
        ev, corr = [], 1
        for i in range(steps):
            t = i * 3000.0
            ev.append(_x(f"ProfilerStep#{i}", "user_annotation", t, 2990.0))
            for k in range(10):
                ev.append(_x("aten::mm", "cpu_op", t + 5 + k * 40, 30,
                             **{"Input Dims": [[1024, 1024], [1024, 1024]],
                                "Input type": ["c10::BFloat16", "c10::BFloat16"]}))
                ev.append(_x("cudaLaunchKernel", "cuda_runtime", t + 8 + k * 40, 4, correlation=corr))
                ev.append(_x("sm90_xmma_gemm_bf16bf16_bf16f32", "kernel", t + 100 + k * 150, 120 + rnd.random() * 10,
                             pid=0, tid=7, correlation=corr, stream=7, device=0))
                corr += 1
            for k in range(3):
                ev.append(_x("record_param_comms", "cpu_op", t + 420 + k * 30, 20))
                ev.append(_x("cudaLaunchKernel", "cuda_runtime", t + 425 + k * 30, 4, correlation=corr))
                ev.append(_x(ALLREDUCE, "kernel", t + 900 + k * 600, 500, pid=0, tid=20, correlation=corr, stream=20,
                             device=0))
                corr += 1
        doc = {"schemaVersion": 1,
               "deviceProperties": [{"id": 0, "name": "NVIDIA H200", "totalGlobalMem": 150109880320}],
               "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": ranks}, "traceEvents": ev}
        (folder / f"rank{rank}.pt.trace.json").write_text(json.dumps(doc))
    return folder
