"""(b) OOM because a list keeps every step's loss graph alive (`losses.append(loss)` instead of loss.item())."""
import torch
from common import cap_memory, mlp

cap_memory()
model = mlp()
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
losses = []
for step in range(1, 200):
    x = torch.randn(2048, 4096, device="cuda")
    loss = model(x).square().mean()
    loss.backward(retain_graph=True)  # (added after "Trying to backward through the graph a second time")
    opt.step()
    opt.zero_grad(set_to_none=True)
    losses.append(loss)  # keeps the graph, and every activation it saved, alive
    print(f"step {step} allocated {torch.cuda.memory_allocated() >> 20} MiB", flush=True)
