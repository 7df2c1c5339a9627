#!/bin/bash
# On the device (from the repo root): each fragmentation scenario of c_fragmentation.py unprofiled, with and
# without PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (all six at once, each under its own 2 GiB cap),
# then lazy_state and grad_stats under `ptprof record --memory-history` (and lazy_state with the setting),
# `ptprof analyze` of each bundle; bundles tarred into $OUT/oom_frag.tar.gz, logs in $OUT/frag.txt.
set -u
L=$OUT/frag.txt; B=/tmp/frag; rm -rf $B; mkdir -p $B/logs
X=PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
for s in lazy_state grad_stats ragged_state; do
  (timeout 90 python3 bench/device_oom/c_fragmentation.py $s > $B/logs/$s.native 2>&1; echo "exit $?" >> $B/logs/$s.native) &
  (env $X timeout 90 python3 bench/device_oom/c_fragmentation.py $s > $B/logs/$s.expandable 2>&1; echo "exit $?" >> $B/logs/$s.expandable) &
done
wait
for f in $B/logs/*; do echo "== unprofiled $(basename $f)"; grep -v "^ \|^Traceback\|^  File" $f | tail -4; done > $L
R="python3 -m core.cli record --quiet --memory-history --max-entries 100000 --wait 1 --warmup 1 --active 1"
($R --out $B/oom_frag_lazy_state bench/device_oom/c_fragmentation.py lazy_state > $B/logs/rec1 2>&1; echo "exit $?" >> $B/logs/rec1) &
($R --out $B/oom_frag_grad_stats bench/device_oom/c_fragmentation.py grad_stats > $B/logs/rec2 2>&1; echo "exit $?" >> $B/logs/rec2) &
($R --env $X --out $B/oom_frag_lazy_state_expandable bench/device_oom/c_fragmentation.py lazy_state > $B/logs/rec3 2>&1; echo "exit $?" >> $B/logs/rec3) &
wait
for r in rec1 rec2 rec3; do echo "== record $r"; tail -3 $B/logs/$r; done >> $L
for b in $B/oom_frag_*; do
  echo "== analyze $(basename $b)"; python3 -c "import json;r=json.load(open('$b/run.json'));print(r['status'], r['exit_code'], str(r.get('oom'))[:600])"
  timeout 120 python3 -m core.cli analyze $b --no-cache 2>&1 | head -40; du -sh $b
done >> $L 2>&1
tar -czf $OUT/oom_frag.tar.gz -C $B $(cd $B && ls -d oom_frag_*) && ls -la $OUT >> $L
cat $L
