#!/bin/bash
# On the device (from the repo root): the fragmentation script unprofiled with and without
# expandable_segments:True, then every script under `ptprof record --memory-history`; the bundles are tarred
# into $OUT/oom_bundles.tar.gz.
set -u
R="python3 -m core.cli record --quiet --memory-history --max-entries 100000 --wait 1 --warmup 1 --active 2"
B=/tmp/oom_bundles; rm -rf $B; mkdir -p $B
cd bench/device_oom
echo "== c unprofiled"; timeout 40 python3 c_fragmentation.py 2>&1 | tail -2; echo "exit ${PIPESTATUS[0]}"
echo "== c unprofiled, expandable_segments:True"
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True timeout 40 python3 c_fragmentation.py 2>&1 | tail -2; echo "exit ${PIPESTATUS[0]}"
cd ../..
for s in c_fragmentation a_batch_doubles b_losses_kept d_near_capacity; do
  echo "== $s under ptprof"; timeout 60 $R --out $B/$s bench/device_oom/$s.py > /tmp/$s.rec.log 2>&1; echo "exit $?"; tail -2 /tmp/$s.rec.log
done
echo "== c under ptprof, expandable_segments:True"
timeout 60 $R --env PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True --out $B/c_expandable bench/device_oom/c_fragmentation.py > /tmp/ce.rec.log 2>&1; echo "exit $?"; tail -2 /tmp/ce.rec.log
for b in $B/*; do python3 -c "import json;r=json.load(open('$b/run.json'));print('$b', r['status'], r['exit_code'], str(r.get('oom'))[:500])"; ls $b; done
tar -czf $OUT/oom_bundles.tar.gz -C $B . && ls -la $OUT
