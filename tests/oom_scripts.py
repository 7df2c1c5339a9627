"""The training scripts of the runner's OOM tests (tests/core/runner/test_oom_child.py, test_oom_ranks.py): torch's
own out-of-memory message and a fake CUDA allocator snapshot installed in place of torch.cuda.memory._snapshot,
so the child's OOM path runs on CPU (no GPU here)."""
from __future__ import annotations


def oom_message(tried_gib: float, device: int, free_gib: float, allocated_gib: float, reserved_gib: float) -> str:
    """torch.OutOfMemoryError's text as the CUDA caching allocator writes it (a 79.11 GiB card)."""
    return (f"CUDA out of memory. Tried to allocate {tried_gib:.2f} GiB. GPU {device} has a total capacity of "
            f"79.11 GiB of which {free_gib:.2f} GiB is free. Including non-PyTorch memory, this process has 77.60 GiB "
            f"memory in use. Of the allocated memory {allocated_gib:.2f} GiB is allocated by PyTorch, and "
            f"{reserved_gib:.2f} GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is "
            "large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.")


def script(setup: str, forward: str, steps: int, call: str = "forward") -> str:
    """A script: `setup` lines after `import torch`, then one allocator segment (device `DEVICE`, `TOTAL`
    bytes, 512 MiB of it allocated; both names defined by `setup`) as the fake snapshot, a Linear model and SGD,
    `forward` (defines `call`(step) -> loss, which raises the OOM), and `steps - 1` training steps from 1."""
    return f'''
import torch
{setup}
FAKE = {{"segments": [{{"device": DEVICE, "address": 4096, "total_size": TOTAL,
                        "allocated_size": 1 << 29, "active_size": 1 << 29, "stream": 0, "segment_type": "large",
                        "blocks": [{{"address": 4096, "size": 1 << 29, "state": "active_allocated"}}]}}],
         "device_traces": [[]]}}
torch.cuda.memory._snapshot = lambda *a, **k: FAKE
model = torch.nn.Linear(8, 8)
opt = torch.optim.SGD(model.parameters(), lr=0.1)

{forward}

for step in range(1, {steps}):
    loss = {call}(step)
    loss.backward()
    opt.step()
    opt.zero_grad()
'''
