#!/usr/bin/env bash
# Device run for bench/device_check/fresh.py: interleaved unprofiled timings of the four pairs, then one
# `ptprof record` bundle per variant, tarred into $OUT/fresh.tgz. Run from the repo root on the H200 with the
# msgspec wheel in .whl/ (carry .whl). Whole run: ~6-8 min.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD
export PYTHONUNBUFFERED=1
P=bench/device_check/fresh.py
start=$(date +%s)
left() { echo $(( ${BUDGET:-560} - ($(date +%s) - start) )); }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv
timeout 240 python3 $P pairs ${PAIRS:-log amp h2d graphs} --out $OUT/fresh_timing.json 2>&1 | tail -8
mkdir -p /tmp/b
for v in ${VARIANTS:-tfm_log tfm resnet_fp32 resnet_amp h2d_pageable h2d_pinned small_eager small_graphed}; do
  [ "$(left)" -gt 45 ] || { echo "skip $v: out of time"; continue; }
  t0=$(date +%s)
  timeout 80 python3 -m core.cli record --quiet --out /tmp/b/$v --wait 5 --warmup 2 --active 5 $P run $v --steps 16 > /tmp/b/$v.log 2>&1
  echo "record $v rc=$? $(( $(date +%s) - t0 )) s"
done
du -sh /tmp/b/*
tar czf $OUT/fresh.tgz -C /tmp b
ls -la $OUT
