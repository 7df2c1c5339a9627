"""Small user scripts for runner tests (written into tmp_path; each runs in a second or two)."""
from __future__ import annotations

import textwrap
from pathlib import Path

TRAIN = """
import sys, torch
from torch import nn
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 6
crash_at = int(sys.argv[2]) if len(sys.argv) > 2 else -1
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 32), torch.randn(16, 4)
i = 0
while steps < 0 or i < steps:
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    if i == crash_at:
        raise RuntimeError(f"boom at step {i}")
    loss.backward()
    opt.step()
    i += 1
print("finished", i)
"""

OWN_PROFILER = """
import torch
from torch import nn
model = nn.Linear(8, 8)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
    for _ in range(4):
        opt.zero_grad(); model(torch.randn(4, 8)).sum().backward(); opt.step()
print("own profiler rows", len(prof.key_averages()))
"""

STUBBORN = """
import os, signal, subprocess, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c",
                          "import signal,time; signal.signal(signal.SIGINT, signal.SIG_IGN); time.sleep(120)"])
open(sys.argv[1], "w").write(str(child.pid))
print("ignoring signals", flush=True)
while True:
    time.sleep(0.05)
"""

SYNTAX_ERROR = "def broken(:\n    pass\n"


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p

COMPILED = """
import torch
from torch import nn
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(8, 8)
    def forward(self, x):
        y = self.l(x)
        if y.sum() > 0:  # data-dependent branch: graph break
            y = y * 2
        return y
torch.manual_seed(0)
m = M()
cm = torch.compile(m, backend="eager")
opt = torch.optim.SGD(m.parameters(), lr=0.01)
for i in range(6):
    x = torch.randn(4 if i < 3 else 5, 8)  # batch size changes at step 3: recompile
    opt.zero_grad(); cm(x).sum().backward(); opt.step()
"""
