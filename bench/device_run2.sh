#!/usr/bin/env bash
# Second GPU check: host-sync sites, torch.compile (inductor) capture, torchrun stop with 2 ranks.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD
export PYTHONUNBUFFERED=1
python3 -m core.cli record --out /tmp/s1 --wait 1 --warmup 1 --active 2 resources/examples/train_small.py --steps 10
echo "s1 rc=$?"; grep '"type":"sync"' /tmp/s1/events.jsonl | cut -c1-250
cat > /tmp/comp.py <<'PY'
import torch
from torch import nn
class M(nn.Module):
    def __init__(self):
        super().__init__(); self.a = nn.Linear(512, 512); self.b = nn.Linear(512, 512)
    def forward(self, x):
        y = torch.relu(self.a(x))
        if y.mean() > 0:
            y = y * 2
        return self.b(y)
m = M().cuda()
cm = torch.compile(m)
opt = torch.optim.AdamW(m.parameters())
for i in range(12):
    x = torch.randn(64 if i < 6 else 96, 512, device="cuda")
    opt.zero_grad(); cm(x).sum().backward(); opt.step()
print("compiled ok")
PY
t0=$(date +%s); python3 -m core.cli record --out /tmp/c1 --wait 1 --warmup 1 --active 2 --repeat 2 /tmp/comp.py; echo "c1 rc=$? s=$(( $(date +%s) - t0 ))"
python3 - <<'PY'
import json
d = json.load(open("/tmp/c1/compile.json"))
for b in d["graph_breaks"]:
    print("break", b["reason"], b["file"], b["line"], b["count"], [(f["function"], f["line"]) for f in b["user_frames"]])
for r in d["recompiles"]:
    print("recompile", r["function"], r["line"], r["reasons"][:2])
print("counters", {k: (v if k != "unimplemented" and k != "graph_break" else len(v)) for k, v in d["counters"].items()})
run = json.load(open("/tmp/c1/run.json")); print("c1 run", run["exit_code"], run["steps"], run["traces"], run["sync_sites"])
PY
python3 -m core.cli info /tmp/c1 --no-cache
cat > /tmp/forever.py <<'PY'
import torch
from torch import nn
m = nn.Linear(1024, 1024).cuda(); opt = torch.optim.SGD(m.parameters(), lr=1e-3)
x = torch.randn(512, 1024, device="cuda")
while True:
    opt.zero_grad(); m(x).sum().backward(); opt.step()
PY
python3 -m core.cli record --out /tmp/t2 --nproc-per-node 2 --wait 0 --warmup 1 --active 100000 --quiet /tmp/forever.py &
P=$!; sleep 25; kill -INT $P; wait $P; echo "t2 stop rc=$?"
sleep 1; ps -eo pid,stat,cmd | grep "child.py" | grep -v grep || echo "no child.py processes left"
python3 -c "import json; r=json.load(open('/tmp/t2/run.json')); print('t2', r['exit_code'], r['status'], r['stop_signals'], r['traces'], r['steps'])"
grep -h '"type":"end"\|"type":"cycle"\|"type":"notice"' /tmp/t2/events.jsonl | cut -c1-200
python3 -m core.cli info /tmp/t2 --no-cache
tar czf $OUT/s1.tgz -C /tmp s1; tar czf $OUT/c1.tgz -C /tmp c1
ls -la $OUT
