#!/usr/bin/env bash
# GPU-machine check of the second session's runner changes: NVML device mapping, GPU util in the
# report's nvml.csv, `ptprof record` stopped by SIGTERM and by SIGKILL (the child must flush and exit).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD
export PYTHONUNBUFFERED=1 PTPROF_CACHE_DIR=/tmp/ptcache
gcc -O2 -shared -fPIC $(python3-config --includes) core/trace/_scan.c -o core/trace/_scan$(python3-config --extension-suffix)
python3 - <<'PY'
from core.gpu.backend import open_backend
import pynvml
for spec in (None, "0", "GPU-", "1"):
    b = open_backend(spec)
    print("CUDA_VISIBLE_DEVICES", repr(spec), "->", getattr(b, "physical", None), b.device_names(), len(b.sample()))
    b.close()
pynvml.nvmlInit(); u = pynvml.nvmlDeviceGetUUID(pynvml.nvmlDeviceGetHandleByIndex(0)); u = u.decode() if isinstance(u, bytes) else u
b = open_backend(u[:12]); print("uuid prefix", u[:12], "->", b.physical); b.close()
PY
E=resources/examples/train_small.py
python3 -m core.cli record --out /tmp/r1 --wait 2 --warmup 1 --active 3 $E --steps 12 --width 1024; echo "record rc=$?"
python3 -m core.cli report /tmp/r1 --out /tmp/rep1 --no-png > /dev/null; echo "report rc=$?"
python3 - <<'PY'
import csv, json
rows = list(csv.DictReader(open("/tmp/rep1/nvml.csv")))
util = [float(r["gpu_util_pct"]) for r in rows if r["gpu_util_pct"]]
print("nvml.csv rows", len(rows), "util filled", len(util), "max util", max(util) if util else None, "cols", list(rows[0])[:6])
print("run.json gpu", json.load(open("/tmp/r1/run.json"))["gpu"])
PY
for sig in TERM KILL; do
  rm -rf /tmp/s$sig
  python3 -m core.cli record --quiet --out /tmp/s$sig --active 100000 $E --steps 100000000 --width 1024 &
  P=$!; sleep 15
  CHILD=$(python3 -c "import json; print(next(json.loads(l)['pid'] for l in open('/tmp/s$sig/events.jsonl') if '\"start\"' in l))")
  kill -$sig $P; wait $P; echo "record killed by SIG$sig rc=$?"
  for i in $(seq 1 60); do kill -0 $CHILD 2>/dev/null || break; sleep 0.5; done
  kill -0 $CHILD 2>/dev/null && echo "ORPHAN child $CHILD still alive" || echo "child $CHILD gone after ${i}x0.5 s"
  tail -1 /tmp/s$sig/events.jsonl
  ls /tmp/s$sig/traces/
  python3 -m core.cli info /tmp/s$sig --no-cache | head -5
done
