"""(c) A fragmentation OOM: variable-size activations freed around small tensors that stay alive (a
per-sample cache) leave holes in every segment; a large request then finds no hole big enough and no room
for a new segment, with most of the reserved memory free. PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
gives the holes' pages back and the same run survives."""
import torch

from common import cap_memory

cap_memory(1)
cache = []
for step in range(1, 6):
    acts = []
    for i in range(16):
        acts.append(torch.empty((8 << 20) // 4, device="cuda"))  # an 8 MiB activation
        cache.append(torch.empty((3 << 19) // 4, device="cuda"))  # a 1.5 MiB per-sample cache entry, kept
    del acts
    print(f"step {step}: allocated {torch.cuda.memory_allocated() >> 20} MiB, reserved "
          f"{torch.cuda.memory_reserved() >> 20} MiB", flush=True)
    w = torch.nn.Parameter(torch.randn(64, 64, device="cuda"))  # a token step for the profiler
    torch.optim.SGD([w], lr=0.1).step()
big = torch.empty((300 << 20) // 4, device="cuda")  # a 300 MiB evaluation buffer
print("evaluation buffer allocated: no OOM", flush=True)
