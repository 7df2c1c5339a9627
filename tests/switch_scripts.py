"""User scripts for the runtime-switch tests (core/runner/switches.py): each writes what it saw from inside
(the DataLoader's attributes, the optimizer's defaults, memory formats, autocast state) to a JSON file."""
from __future__ import annotations

# argv: steps, out.json, [optimizer kwargs as JSON]
FACTS = """
import json, sys, torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
steps = int(sys.argv[1]); out = sys.argv[2]
opt_kwargs = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {"foreach": False}
torch.manual_seed(0)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.head = nn.Linear(8, 4)
        self.seen = []
    def forward(self, x):
        self.seen.append({"autocast": torch.is_autocast_enabled("cpu"),
                          "dtype": str(torch.get_autocast_dtype("cpu")),
                          "cl_input": x.is_contiguous(memory_format=torch.channels_last)})
        return self.head(self.conv(x).mean((2, 3)))
model = Net()
loader = DataLoader(TensorDataset(torch.randn(64, 3, 8, 8), torch.randn(64, 4)), batch_size=8)
opt = torch.optim.Adam(model.parameters(), lr=1e-3, **opt_kwargs)
i = 0
grads_none, out_dtypes = [], []
while i < steps:
    for x, y in loader:
        opt.zero_grad(set_to_none=False)
        grads_none.append(all(p.grad is None for p in model.parameters()))
        pred = model(x)
        out_dtypes.append(str(pred.dtype))
        loss = ((pred - y) ** 2).mean()
        loss.backward()
        opt.step()
        i += 1
        if i >= steps:
            break
json.dump({"pin_memory": loader.pin_memory, "num_workers": loader.num_workers,
           "foreach": opt.defaults.get("foreach"), "fused": opt.defaults.get("fused"),
           "conv_cl": model.conv.weight.is_contiguous(memory_format=torch.channels_last),
           "seen": model.seen[1:], "grads_none": grads_none[1:], "out_dtypes": out_dtypes,
           "tf32_matmul": torch.backends.cuda.matmul.allow_tf32, "tf32_cudnn": torch.backends.cudnn.allow_tf32,
           "benchmark": torch.backends.cudnn.benchmark}, open(out, "w"))
print("done", i)
"""

# a loop with no DataLoader, default zero_grad(), an MLP (no 4-D weights) and SGD
PLAIN = """
import sys, torch
from torch import nn
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 16), torch.randn(8, 4)
for _ in range(int(sys.argv[1])):
    opt.zero_grad()
    ((model(x) - y) ** 2).mean().backward()
    opt.step()
"""

# the script turns the flags off itself after the switches were installed
FLAGS_OFF = """
import sys, torch
from torch import nn
torch.backends.cudnn.benchmark = False
torch.backends.cuda.matmul.allow_tf32 = False
model = nn.Linear(8, 8)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(int(sys.argv[1])):
    opt.zero_grad(); model(torch.randn(4, 8)).sum().backward(); opt.step()
open(sys.argv[2], "w").write(f"{torch.backends.cudnn.benchmark} {torch.backends.cuda.matmul.allow_tf32}")
"""

# the zero_grad_not_none problem: zero_grad(set_to_none=False) over 24 tensors (argv: steps)
ZERO_GRAD = """
import sys, torch
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(*[nn.Linear(32, 32) for _ in range(12)])
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(16, 32)
for _ in range(int(sys.argv[1])):
    opt.zero_grad(set_to_none=False)
    model(x).square().mean().backward()
    opt.step()
"""
