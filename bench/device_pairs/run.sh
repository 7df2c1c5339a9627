#!/usr/bin/env bash
# Device run for the before/after pairs (bench/device_pairs/pairs.py): unprofiled timings, then one
# `ptprof record` bundle per variant, tarred into $OUT/pairs.tgz. Run from the repo root on the H200
# with the msgspec wheel in .whl/ (carry .whl). Whole run: ~6-8 min.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD
export PYTHONUNBUFFERED=1
P=bench/device_pairs/pairs.py
start=$(date +%s)
left() { echo $(( ${BUDGET:-540} - ($(date +%s) - start) )); }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv
EAGER="gemm_bf16 sync_timing item_gpubound launchbound item_launchbound mlp_fp32 mlp_bf16 copy_pageable copy_pinned loader_nw0 loader_nw4"
timeout 200 python3 $P time $EAGER --out $OUT/timings.json 2>&1 | tail -20
mkdir -p /tmp/b
for v in $EAGER; do
  [ "$(left)" -gt 60 ] || { echo "skip $v: out of time"; continue; }
  t0=$(date +%s)
  timeout 60 python3 -m core.cli record --quiet --out /tmp/b/$v --wait 5 --warmup 2 --active 5 $P run $v --steps 16 > /tmp/b/$v.log 2>&1
  echo "record $v rc=$? $(( $(date +%s) - t0 )) s"
done
for v in compile_break compile_full; do
  [ "$(left)" -gt 100 ] || { echo "skip $v: out of time"; continue; }
  timeout 90 python3 $P time $v --out $OUT/timings_$v.json 2>&1 | tail -3
  timeout 80 python3 -m core.cli record --quiet --out /tmp/b/$v --wait 5 --warmup 2 --active 5 $P run $v --steps 16 > /tmp/b/$v.log 2>&1
  echo "record $v rc=$?"
done
du -sh /tmp/b/*
tar czf $OUT/pairs.tgz -C /tmp b
ls -la $OUT
