"""(a) OOM at step 7: the batch doubles every step (a curriculum / "growing batch" bug)."""
import torch
from common import cap_memory, mlp

cap_memory()
model = mlp()
opt = torch.optim.Adam(model.parameters(), lr=1e-4)
batch = 256
for step in range(1, 20):
    x = torch.randn(batch, 4096, device="cuda")
    loss = model(x).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    print(f"step {step} batch {batch} reserved {torch.cuda.memory_reserved() >> 20} MiB", flush=True)
    batch *= 2
