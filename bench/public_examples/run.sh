#!/usr/bin/env bash
# Device run (issue 28): unmodified public training scripts, each timed without the profiler (step_clock.py:
# steps FIRST..LAST, device synced at both ends), then recorded by `ptprof record` with default options and
# --stop-after-window, then `ptprof analyze --json`. Results: $OUT/clock.jsonl, $OUT/public.tgz (bundles +
# analyze.json + logs). pytorch/examples (imagenet, word_language_model, dcgan) are copied to $EX from a
# snapshot of github.com/pytorch/examples (train.txt = valid.txt: the big file is not carried).
# Run from the repo root with PYTHONPATH set and the scanner built. BUDGET seconds (default 540).
set -u
EX=${EX:-.dev/examples}
C=bench/public_examples/step_clock.py
B=/tmp/pub
mkdir -p $B /tmp/dcgan
start=$(date +%s)
left() { echo $(( ${BUDGET:-540} - ($(date +%s) - start) )); }
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false WANDB_DISABLED=true
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader; nproc
W=$EX/word_language_model
declare -A CMD BY LAST
CMD[imagenet]="$EX/imagenet/main.py --dummy -a resnet18 -j 4 -b 256 --epochs 1 --print-freq 100000"; LAST[imagenet]=70
CMD[wlm_lstm]="$W/main.py --accel --epochs 1 --log-interval 100000 --data $W/data/wikitext-2 --save /tmp/wlm.pt"; BY[wlm_lstm]=backward
CMD[wlm_tfm]="$W/main.py --accel --epochs 1 --log-interval 100000 --data $W/data/wikitext-2 --save /tmp/wlm.pt --model Transformer --use-optimizer --lr 0.001"
CMD[dcgan]="$EX/dcgan/main.py --dataset fake --accel --niter 20 --outf /tmp/dcgan"
CMD[hf_trainer]="bench/device_loops/real_hf_trainer.py 300"
CMD[lightning]="bench/device_loops/real_lightning.py 300"
for name in ${EXAMPLES:-imagenet wlm_tfm dcgan hf_trainer lightning wlm_lstm}; do
  [ "$(left)" -gt 60 ] || { echo "skip $name: out of time"; continue; }
  t0=$(date +%s)
  timeout 90 python3 $C --label $name --by ${BY[$name]:-optimizer} --first 20 --last ${LAST[$name]:-120} --out $OUT/clock.jsonl ${CMD[$name]} \
    > $B/$name.clock.log 2>&1 || { echo "clock $name rc=$?"; tail -3 $B/$name.clock.log; }
  echo "clock $name $(( $(date +%s) - t0 )) s: $(grep STEP_CLOCK $B/$name.clock.log | cut -c1-200)"
  [ "$(left)" -gt 45 ] || { echo "skip record $name: out of time"; continue; }
  t0=$(date +%s)
  timeout $(( $(left) - 20 )) python3 -m core.cli record --quiet --stop-after-window --out $B/$name ${CMD[$name]} > $B/$name.record.log 2>&1
  echo "record $name rc=$? $(( $(date +%s) - t0 )) s"; tail -2 $B/$name.record.log | cut -c1-300
  timeout 60 python3 -m core.cli analyze $B/$name --json > $B/$name/analyze.json 2> $B/$name.analyze.err
  python3 - $B/$name/analyze.json <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as exc:
    print("  analyze failed:", exc); sys.exit()
s = d.get("summary", {})
keys = ("mean_step_ns", "unprofiled_step_ns", "bound", "mfu", "inflation")
print("  summary", {k: s.get(k) for k in s if any(w in k for w in ("step", "bound", "mfu", "inflat"))})
for f in d.get("findings", [])[:12]:
    print("  ", f.get("rule"), f.get("severity"), f.get("saving_ns"), (f.get("title") or "")[:90])
PY
done
rm -f $B/*/nvml.csv.tmp
du -sh $B; tar czf $OUT/public.tgz -C /tmp pub
ls -la $OUT; echo "total $(( $(date +%s) - start )) s"
