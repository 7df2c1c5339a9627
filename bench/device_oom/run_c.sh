#!/bin/bash
# On the device (from the repo root), all at once (each process under its own 2 GiB cap): every
# fragmentation scenario of c_fragmentation.py unprofiled with and without
# PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, and lazy_state / grad_stats under
# `ptprof record --memory-history` (lazy_state also with the setting); then `ptprof analyze` of each
# bundle. Bundles tarred into $OUT/oom_frag.tar.gz, the log in $OUT/frag.txt.
set -u
L=$OUT/frag.txt; B=/tmp/frag; rm -rf $B; mkdir -p $B/logs
X=PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
R="python3 -m core.cli record --quiet --memory-history --max-entries 100000 --wait 1 --warmup 1 --active 1"
for s in lazy_state grad_stats ragged_state; do
  (timeout 80 python3 bench/device_oom/c_fragmentation.py $s > $B/logs/$s.native 2>&1; echo "exit $?" >> $B/logs/$s.native) &
  (env $X timeout 80 python3 bench/device_oom/c_fragmentation.py $s > $B/logs/$s.expandable 2>&1; echo "exit $?" >> $B/logs/$s.expandable) &
done
(timeout 80 $R --out $B/oom_frag_lazy_state bench/device_oom/c_fragmentation.py lazy_state > $B/logs/rec_lazy 2>&1; echo "exit $?" >> $B/logs/rec_lazy) &
(timeout 80 $R --out $B/oom_frag_grad_stats bench/device_oom/c_fragmentation.py grad_stats > $B/logs/rec_grad 2>&1; echo "exit $?" >> $B/logs/rec_grad) &
(timeout 80 $R --env $X --out $B/oom_frag_lazy_state_expandable bench/device_oom/c_fragmentation.py lazy_state > $B/logs/rec_lazy_exp 2>&1; echo "exit $?" >> $B/logs/rec_lazy_exp) &
wait
for f in $B/logs/*; do echo "== $(basename $f)"; grep -v "^ \|^Traceback\|^  File" $f | tail -4; done > $L
for b in $B/oom_frag_*; do
  (timeout 60 python3 -m core.cli analyze $b --no-cache > $b.analyze.txt 2>&1) &
done
wait
for b in $B/oom_frag_*; do
  [ -d $b ] || continue
  echo "== analyze $(basename $b) ($(du -sh $b | cut -f1))"
  python3 -c "import json;r=json.load(open('$b/run.json'));print(r['status'], r['exit_code'], str(r.get('oom'))[:600])"
  head -40 $b.analyze.txt
done >> $L 2>&1
tar -czf $OUT/oom_frag.tar.gz -C $B $(cd $B && ls -d oom_frag_* | grep -v txt) && ls -la $OUT >> $L
cat $L
