"""Regenerate tests/data/cpu_flops.pt.trace.json.gz + cpu_flops.expected.json (torch CPU build):
    python tests/data/cpu_flops.gen.py && gzip -9 -f cpu_flops.pt.trace.json
A small conv / linear / bmm / matmul / sdpa model, 3 profiled training steps with record_shapes, and
FlopCounterMode's count of one forward + backward as the expected FLOPs per step."""
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

torch.manual_seed(0)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, stride=1, padding=0, dilation=2)
        self.fc = nn.Linear(32 * 12 * 12, 64)
        self.q = nn.Linear(64, 64)
    def forward(self, x):
        x = F.relu(self.conv1(x)); x = F.relu(self.conv2(x))
        h = self.fc(x.flatten(1))                     # [8, 64]
        t = self.q(h).view(2, 4, 64)                   # [B=2, L=4, 64]
        att = F.scaled_dot_product_attention(t.view(2, 4, 4, 16).transpose(1, 2), t.view(2, 4, 4, 16).transpose(1, 2), t.view(2, 4, 4, 16).transpose(1, 2))
        y = torch.bmm(t, t.transpose(1, 2)).sum() + att.sum() + torch.matmul(h, h.t()).sum()
        return y
net = Net(); x = torch.randn(8, 3, 32, 32)
with FlopCounterMode(display=False) as fc:
    net(x).backward()
total = fc.get_total_flops()
opt = torch.optim.SGD(net.parameters(), lr=0.01)
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True, schedule=torch.profiler.schedule(wait=0, warmup=1, active=3), on_trace_ready=lambda p: p.export_chrome_trace("cpu_flops.pt.trace.json")) as prof:
    for _ in range(4):
        opt.zero_grad(); net(x).backward(); opt.step(); prof.step()

json.dump({"flops_per_step": total, "by_op": {str(k): v for k, v in fc.get_flop_counts()["Global"].items()}}, open("cpu_flops.expected.json", "w"), indent=1)
print(total, fc.get_flop_counts()["Global"])
