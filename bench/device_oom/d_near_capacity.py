"""(d) A run close to its memory cap that survives: steady state at ~80 % of the cap, no growth."""
import torch
from common import cap_memory, mlp

limit = cap_memory()
model = mlp()
opt = torch.optim.Adam(model.parameters(), lr=1e-4)
for step in range(1, 13):
    x = torch.randn(4096, 4096, device="cuda")
    loss = model(x).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    print(f"step {step} peak {torch.cuda.max_memory_allocated() * 100 // limit} % of the cap", flush=True)
