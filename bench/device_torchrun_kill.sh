#!/usr/bin/env bash
# GPU-machine check: `ptprof record --nproc-per-node 2` SIGKILLed mid-run -> both torchrun ranks
# notice the launcher's death (PTPROF_LAUNCHER_PID), flush their windows and exit.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD
export PYTHONUNBUFFERED=1 PTPROF_CACHE_DIR=/tmp/ptcache
gcc -O2 -shared -fPIC $(python3-config --includes) core/trace/_scan.c -o core/trace/_scan$(python3-config --extension-suffix)
E=resources/examples/train_small.py
python3 -m core.cli record --quiet --out /tmp/k2 --nproc-per-node 2 --active 100000 $E --steps 100000000 --width 1024 &
P=$!; sleep 30
RANKS=$(python3 -c "import json; print(' '.join(str(json.loads(l)['pid']) for l in open('/tmp/k2/events.jsonl') if '\"start\"' in l))")
echo "ranks: $RANKS"
kill -KILL $P; wait $P; echo "record SIGKILL rc=$?"
for i in $(seq 1 120); do alive=0; for r in $RANKS; do kill -0 $r 2>/dev/null && alive=1; done; [ $alive = 0 ] && break; sleep 0.5; done
for r in $RANKS; do kill -0 $r 2>/dev/null && echo "ORPHAN rank $r" || echo "rank $r gone (after ~${i}x0.5 s)"; done
grep '"end"' /tmp/k2/events.jsonl
ls /tmp/k2/traces/
python3 -m core.cli info /tmp/k2 --no-cache | head -6
