#!/usr/bin/env bash
# Device run for bench/device_pairs2/pairs2.py (issue 28): interleaved unprofiled timings of every pair, one
# `ptprof record` bundle (default options) per variant, steps before/after a profiler window (diag), all
# tarred into $OUT. GPU phases hold an flock (PAIRS_LOCK), so recordings start (imports, CUDA) in parallel
# but never run beside a measurement; DataLoader pairs run alone at the end (their workers need the cores).
# Run from the repo root with the wheels installed and PYTHONPATH set. Budget: BUDGET seconds (default 500).
set -u
P=bench/device_pairs2/pairs2.py
export PAIRS_LOCK=/tmp/pairs.lock
start=$(date +%s)
left() { echo $(( ${BUDGET:-500} - ($(date +%s) - start) )); }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p /tmp/b
GPU_PAIRS=${GPU_PAIRS-"opt_fused zero_none item_tfm noncontig tf32_mlp cl_cnn adamw_tfm item_big launch_graphs zero_cnn sgd_foreach lstm_item cnn_pageable bf16_tfm sync_tfm launch_compile graph_break recompile"}
LOADER_PAIRS=${LOADER_PAIRS-"loader_nw loader_starved loader_pin"}
variants() { python3 - "$@" <<'PY'
import sys; sys.path.insert(0, "bench/device_pairs2"); import pairs2
seen = []
for p in sys.argv[1:]:
    for v in pairs2.PAIRS[p][:2]:
        if v not in seen: seen.append(v)
print(" ".join(seen))
PY
}
GPU_VARIANTS=$(variants $GPU_PAIRS)
LOADER_VARIANTS=$(variants $LOADER_PAIRS)
record() {  # variant steps
  local v=$1 n=$2 t0=$(date +%s)
  [ "$(left)" -gt 40 ] || { echo "skip $v: out of time"; return; }
  timeout 150 python3 -m core.cli record --quiet --out /tmp/b/$v $P run $v --steps $n > /tmp/b/$v.log 2>&1
  echo "record $v rc=$? $(( $(date +%s) - t0 )) s"
}
export -f record left; export P start
if [ -n "$LOADER_PAIRS" ]; then
  timeout 120 python3 $P time $LOADER_PAIRS --out $OUT/timing_loader.json 2>&1 | cut -c1-400
  for v in $LOADER_VARIANTS; do record $v 50; done
fi
echo "loader phase done at $(( $(date +%s) - start )) s"
( timeout $(( $(left) - 30 )) python3 $P time $GPU_PAIRS --out $OUT/timing_gpu.json 2>&1 | cut -c1-400 ) &
TP=$!
echo $GPU_VARIANTS | tr ' ' '\n' | xargs -P 4 -I{} bash -c 'record {} 14'
wait $TP
echo "gpu phase done at $(( $(date +%s) - start )) s"
# steps after a profiler window: without and with Kineto's CUPTI teardown (ptprof sets TEARDOWN_CUPTI=1)
for mode in ${DIAG_MODES-none profiler profiler_syncdebug}; do
  [ "$(left)" -gt 45 ] && timeout 30 python3 $P diag ${DIAG_VARIANT:-opt_fused_a} $mode --out $OUT/diag.jsonl 2>&1 | tail -1 | cut -c1-300
  [ "$(left)" -gt 45 ] && [ "$mode" = profiler ] && TEARDOWN_CUPTI=1 timeout 30 python3 $P diag ${DIAG_VARIANT:-opt_fused_a} $mode --out $OUT/diag_teardown.jsonl 2>&1 | tail -1 | cut -c1-300
done
rm -f /tmp/b/*/nvml.csv.tmp
du -sh /tmp/b | tail -1
tar czf $OUT/pairs2.tgz -C /tmp b
ls -la $OUT
echo "total $(( $(date +%s) - start )) s"
