#!/usr/bin/env bash
# GPU-machine check of the C scanner and the runner's stop path (second session's note):
# build core/trace/_scan.c with the machine's compiler, compare scanner vs msgspec models on a real
# trace, time loads with 0..16 scanner threads (gpt_big and a generated 1.1 GB trace), then record
# the example, stop a run with SIGINT mid-window and check the flushed trace.
# Run from the repo root with $OUT set; carried in .whl/: the msgspec wheel and gpu_gpt_big.pt.trace.json.gz.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD
export PYTHONUNBUFFERED=1 PTPROF_CACHE_DIR=/tmp/ptcache
python3 -V; gcc --version | head -1; nproc
gcc -O2 -shared -fPIC $(python3-config --includes) core/trace/_scan.c \
    -o core/trace/_scan$(python3-config --extension-suffix) && echo "scanner built"
python3 - <<'PY'
import time
from core.trace import columns
from core.trace.loader import load
print("scanner available:", columns.scan_available())
p = ".whl/gpu_gpt_big.pt.trace.json.gz"
fast = load(p, use_cache=False)
columns._DISABLED = True
slow = load(p, use_cache=False)
columns._DISABLED = False
a, b = fast.primary, slow.primary
same = a.counts == b.counts and all(
    (getattr(a.slices, k) == getattr(b.slices, k)).all() for k in ("ts_ns", "dur_ns", "kind", "track", "depth"))
print("scanner model == msgspec model:", same, a.counts)
PY
python3 bench/gen_big_trace.py --source .whl/gpu_gpt_big.pt.trace.json.gz --out /tmp/big.pt.trace.json --target-mb 1100 > /dev/null
for f in .whl/gpu_gpt_big.pt.trace.json.gz /tmp/big.pt.trace.json; do
  for w in 0 2 4 8 16; do
    for r in 1 2 3; do
      PTPROF_WORKERS=$w /usr/bin/time -f "$(basename $f) threads=$w wall=%e cpu=%U+%S rss_kb=%M" \
        python3 -m core.cli info --no-cache "$f" > /dev/null
    done
  done
done 2>&1 | grep wall=
python3 -c "import orjson" 2>/dev/null && for f in /tmp/big.pt.trace.json; do
  /usr/bin/time -f "orjson $(basename $f) wall=%e rss_kb=%M" python3 -c "import orjson,sys; orjson.loads(open(sys.argv[1],'rb').read())" $f
done
E=resources/examples/train_small.py
python3 -m core.cli record --out /tmp/s1 --active 100000 --quiet $E --steps 100000000 --width 2048 --batch 2048 &
P=$!; sleep 20; kill -INT $P; wait $P; echo "stop rc=$?"
python3 -m core.cli info /tmp/s1 --no-cache
python3 -m core.cli record --out /tmp/s2 --nproc-per-node 2 --active 100000 --quiet $E --steps 100000000 --width 1024 &
P=$!; sleep 30; kill -INT $P; wait $P; echo "torchrun stop rc=$?"
python3 -m core.cli info /tmp/s2 --no-cache --json
python3 -m core.cli analyze /tmp/s1 --no-cache | head -20
