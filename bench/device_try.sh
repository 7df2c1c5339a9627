#!/usr/bin/env bash
# Device run for `ptprof try` (issue 29): for each loop of bench/try_pairs/loops.py, the fixes made by hand and
# timed unprofiled in process (byhand.jsonl), then a before bundle and `ptprof try --all --json` on it
# (try.jsonl), bundles tarred per loop (try_<loop>.tgz). Run from the repo root (PYTHONPATH set, scanner built).
# Whole run: ~4 min on an H100. BUDGET (s) skips what would not fit.
set -u
L=bench/try_pairs/loops.py
start=$(date +%s)
left() { echo $(( ${BUDGET:-300} - ($(date +%s) - start) )); }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
nproc
mkdir -p /tmp/t
for loop in ${LOOPS:-mlp amp_conv vision}; do
  [ "$(left)" -gt 40 ] || { echo "skip $loop: out of time"; continue; }
  t0=$(date +%s)
  timeout 100 python3 $L time $loop >> $OUT/byhand.jsonl 2> /tmp/t/$loop.byhand.err || tail -3 /tmp/t/$loop.byhand.err
  echo "byhand $loop $(( $(date +%s) - t0 )) s"; tail -1 $OUT/byhand.jsonl | cut -c1-400
  t0=$(date +%s)
  timeout 40 python3 -m core.cli record --quiet --out /tmp/t/$loop --wait 5 --warmup 2 --active 5 $L run $loop --steps 200 \
    > /tmp/t/$loop.record.log 2>&1
  echo "record $loop rc=$? $(( $(date +%s) - t0 )) s"
  [ "$(left)" -gt 30 ] || { echo "skip try $loop: out of time"; continue; }
  t0=$(date +%s)
  timeout $(( $(left) - 15 )) python3 -m core.cli try /tmp/t/$loop --all --json > /tmp/t/$loop.try.json 2> /tmp/t/$loop.try.log
  rc=$?
  echo "try $loop rc=$rc $(( $(date +%s) - t0 )) s"; cat /tmp/t/$loop.try.log | cut -c1-300
  python3 -c "import json,sys; d=json.load(open('/tmp/t/$loop.try.json')); d['loop']='$loop'; print(json.dumps(d))" >> $OUT/try.jsonl \
    || echo "no try json for $loop"
  tar czf $OUT/try_$loop.tgz -C /tmp/t $loop $loop.tries $loop.try.log 2>/dev/null
done
ls -la $OUT
