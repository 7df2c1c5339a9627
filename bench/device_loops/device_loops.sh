#!/usr/bin/env bash
# Every loop shape recorded on a GPU machine (issue 11 proof): the CPU-tested scripts of this folder with
# CUDA and a wider model, plus the real transformers.Trainer and lightning.Trainer. Prints step_source /
# steps / exit code per run and the host_sync sources, tars the bundles into $OUT/loops.tgz, and runs
# bench/bench_record_options.py (what each recording option costs, on the GPU).
# Run from the repo root with $OUT set; msgspec wheel for the machine's Python in .whl/:
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD
#   bash bench/device_loops/device_loops.sh
set -u
export PYTHONUNBUFFERED=1 LOOP_WIDTH=${LOOP_WIDTH:-1024} HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export TOKENIZERS_PARALLELISM=false WANDB_DISABLED=true
D=bench/device_loops
B=/tmp/loops
rm -rf "$B"; mkdir -p "$B"
REC=(python3 -m core.cli record --quiet --wait 2 --warmup 1 --active 3)
run() {  # name expected_source -- record args...
  local name=$1 expect=$2; shift 2
  local t0=$(date +%s)
  timeout 150 "${REC[@]}" --out "$B/$name" "$@" > "$B/$name.log" 2>&1
  local rc=$?
  python3 - "$B/$name" "$name" "$expect" "$rc" "$(( $(date +%s) - t0 ))" <<'PY'
import json, sys
from pathlib import Path
root, name, expect, rc, secs = sys.argv[1:]
try:
    run = json.loads(Path(root, "run.json").read_text())
except (OSError, ValueError) as exc:
    print(f"{name:18} NO run.json ({exc}) rc={rc}"); sys.exit()
ok = "ok " if run.get("step_source") == expect and run.get("traces") else "BAD"
lags = [json.loads(l)["lag_ns"] for l in Path(root, "events.jsonl").read_text().splitlines() if '"gpu_lag"' in l]
print(f"{ok} {name:18} source={run.get('step_source')} (want {expect}) steps={run.get('steps')} "
      f"traces={len(run.get('traces') or [])} exit={run.get('exit_code')} rc={rc} stop={run.get('stop_reason')} "
      f"gpu_lag_ms={[round(x / 1e6, 2) for x in lags]} devices={[d.get('name') for d in (run.get('environment') or {}).get('device_properties') or []]} {secs}s")
PY
}
run manual_sgd backward $D/manual_sgd.py 30
run imported_loop optimizer $D/imported_loop.py 30
run lbfgs optimizer $D/lbfgs.py 20
run gan optimizer $D/gan.py 30
run grad_accum optimizer $D/grad_accum.py 20
run lightning_style optimizer $D/lightning_style.py 30
run hf_style optimizer $D/hf_style.py 20
run inference forward $D/inference.py 30
run torchrun_env optimizer --nproc-per-node 1 $D/torchrun_env.py 30
run pkg_module optimizer --cwd $D -m pkg_loop.train 30
run endless optimizer --stop-after-window $D/endless.py
run real_hf_trainer optimizer $D/real_hf_trainer.py 40
run real_lightning optimizer $D/real_lightning.py 40
echo "== host_sync / findings with sources =="
for name in manual_sgd real_hf_trainer real_lightning hf_style; do
  python3 -m core.cli analyze "$B/$name" --no-cache --json > "$B/$name.findings.json" 2>/dev/null
  python3 - "$B/$name.findings.json" "$name" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except ValueError:
    print(sys.argv[2], "analyze failed"); sys.exit()
for f in d["findings"]:
    src = f.get("source") or {}
    where = (f"{src.get('library')} <- " if src.get("library") else "") + (f"{src.get('file')}:{src.get('line')}" if src else "-")
    print(f"  {sys.argv[2]:16} {f['rule']:20} {f['title'][:70]:70} at {where}")
PY
done
rm -rf "$B"/*/traces/*.part
find "$B" -name '*.pt.trace.json.gz' -size +4M -print -delete  # keeps loops.tgz under 16 MiB
tar czf "$OUT/loops.tgz" -C /tmp loops  # before the options bench: a command cut at its time limit keeps it
ls -la "$OUT/loops.tgz"
if [ "${SKIP_OPTIONS:-0}" != 1 ]; then
  echo "== recording options (GPU) =="
  timeout 170 python3 bench/bench_record_options.py --rounds 1 --wait 20 --active 20 --after 20 --json "$OUT/options.json"
fi
