#!/usr/bin/env bash
# One GPU-machine session of checks for the runner (see the runner report in docs/architecture.md).
# Run from a copy of the repo root with $OUT set; carried wheels in .whl/ (msgspec for the loader).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD
export PYTHONUNBUFFERED=1
nvidia-smi -L
python3 -c "from core.runner import doctor; [print('doctor', *m) for m in doctor.check('python3', compile_test=True).messages]"
E=resources/examples/train_small.py
A="--steps 60 --width 2048 --batch 2048"
S="--wait 5 --warmup 2 --active 5"
t0=$(date +%s.%N); python3 -m core.cli record --out /tmp/g1 $S $E $A; echo "g1 rc=$? wall=$(echo "$(date +%s.%N) - $t0" | bc)"
python3 -m core.cli info /tmp/g1 --no-cache
t0=$(date +%s.%N); python3 -m core.cli record --out /tmp/g2 --nproc-per-node 1 $S $E $A; echo "g2 rc=$? wall=$(echo "$(date +%s.%N) - $t0" | bc)"
python3 -m core.cli info /tmp/g2 --no-cache
python3 -m core.cli record --out /tmp/g3 --nproc-per-node 2 --wait 5 --warmup 2 --active 3 $E $A; echo "g3 rc=$?"
python3 -m core.cli info /tmp/g3 --no-cache
python3 -m core.cli record --out /tmp/g4 --active 100000 --quiet $E --steps 100000000 --width 2048 --batch 2048 &
P=$!; sleep 14; kill -INT $P; wait $P; echo "g4 stop rc=$?"
python3 -m core.cli info /tmp/g4 --no-cache
python3 - <<'PY'
import json
from core.trace.loader import load
for b in ("g1", "g2", "g3", "g4"):
    ts = load(f"/tmp/{b}", use_cache=False)
    run = json.load(open(f"/tmp/{b}/run.json"))
    n, s = ts.nvml, ts.nvml_strings
    t0, t1 = ts.span_ns
    line = dict(bundle=b, exit=run["exit_code"], steps=run["steps"], traces=run["traces"], ranks=ts.ranks,
                nvml=run.get("nvml"), gpu=run.get("gpu"), stop=run.get("stop_signals"))
    if n is not None and len(n):
        u = n.value[n.series == s.find("gpu0/util_pct")]
        m = n.value[n.series == s.find("gpu0/mem_used_mb")]
        pm = n.value[n.series == s.find("gpu0/proc_mem_mb")] if s.find("gpu0/proc_mem_mb") >= 0 else []
        line.update(nvml_s=[round(n.ts_ns.min() / 1e9, 2), round(n.ts_ns.max() / 1e9, 2)],
                    trace_s=[round(t0 / 1e9, 3), round(t1 / 1e9, 3)], util_mean=round(float(u.mean()), 1),
                    util_max=float(u.max()), mem_max_mb=float(m.max()), proc_mem_rows=len(pm))
    print("bundle", json.dumps(line))
    print("meta", json.dumps(ts.primary.meta.extra.get("ptprof")))
PY
grep -h '"type":"notice"\|"type":"end"\|"type":"cycle"' /tmp/g*/events.jsonl | cut -c1-220
head -3 /tmp/g1/nvml.csv
python3 bench/bench_runner.py --real --device cuda --width 2048 --batch 2048 --steps 60 --repeats 2 --seconds 10 --json $OUT/bench.json
for b in g1 g2 g3; do tar czf $OUT/$b.tgz -C /tmp $b; done
tar czf $OUT/g4_meta.tgz -C /tmp g4/run.json g4/events.jsonl g4/nvml.csv g4/stderr.log
ls -la $OUT
