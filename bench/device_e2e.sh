#!/usr/bin/env bash
# End-to-end check on a GPU machine (what the lead ran on the H200 for the issue notes):
# record the example (with stacks, so findings carry source lines) -> info -> analyze -> report.
# Run from the repo root with $OUT set; msgspec wheel for the machine's Python in .whl/.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD
export PYTHONUNBUFFERED=1
E=resources/examples/train_small.py
python3 -m core.cli record --out /tmp/e1 --with-stack --wait 3 --warmup 1 --active 4 $E --steps 20 --width 2048 --batch 2048
echo "record rc=$?"
python3 -m core.cli record --out /tmp/e2 --nproc-per-node 1 --wait 3 --warmup 1 --active 3 $E --steps 12 --width 1024
echo "record torchrun rc=$?"
for b in /tmp/e1 /tmp/e2; do
  python3 -m core.cli info "$b" --no-cache
  python3 -m core.cli analyze "$b" --no-cache
  echo "analyze rc=$?"
  python3 -m core.cli analyze "$b" --json > "$OUT/$(basename $b).findings.json"
done
python3 -m core.cli report /tmp/e1 --out "$OUT/report_e1" --no-png; echo "report rc=$?"
t0=$(date +%s%N); python3 -m core.cli info /tmp/e1 > /dev/null; t1=$(date +%s%N); echo "warm info ms=$(( (t1 - t0) / 1000000 ))"
tar czf "$OUT/e1.tgz" -C /tmp e1
