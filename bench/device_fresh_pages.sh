#!/usr/bin/env bash
# Device check of the fresh-page changes (issue 16, bench/README.md "Fresh pages"): the same 1.1 GB and
# 10 GB with_stack traces as on the 2-core VM, generated here from gpu_big_stack, loaded by the code before
# (.whl/old/core, a7774b6) and after, on 2 cores (taskset -c 0,1) and, for 1.1 GB, on all 16; `ptprof info
# --no-cache`, alternated. (Run on 2026-12-03 with an intermediate build that also turned numpy's huge
# pages off, and PTPROF_HUGEPAGES=1 to keep them: that part was dropped, see core/trace/alloc.py.)
# Carried in .whl/: the msgspec wheel, gpu_big_stack.pt.trace.json.xz, old/core, made with
#   cp ../shared/traces/gpu_big_stack.pt.trace.json.xz .whl/; mkdir -p .whl/old && git archive a7774b6 core | tar -x -C .whl/old
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/msgspec*.whl
export PYTHONUNBUFFERED=1
gcc -O2 -shared -fPIC $(python3-config --includes) core/trace/_scan.c -o core/trace/_scan$(python3-config --extension-suffix)
cp core/trace/_scan$(python3-config --extension-suffix) .whl/old/core/trace/
nproc; uname -r; cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag; free -g | head -2
xz -dc .whl/gpu_big_stack.pt.trace.json.xz > /tmp/src.json
PYTHONPATH=/tmp/site:$PWD python3 bench/gen_big_trace.py --source /tmp/src.json --out /tmp/big1g.json --target-mb 1100 --fast > /dev/null
run() {  # label cores tree trace [env...]
  local label=$1 cores=$2 tree=$3 trace=$4; shift 4
  env "$@" PYTHONPATH=/tmp/site:$tree taskset -c $cores /usr/bin/time -f "$label cores=$cores $(basename $trace) wall=%e user=%U sys=%S rss_kb=%M" \
    python3 -c "import sys; sys.argv[0]='ptprof'; from core.cli import main; sys.exit(main())" info --no-cache $trace > /dev/null
}
for r in 1 2 3; do
  for cores in 0,1 0-15; do
    run old $cores $PWD/.whl/old /tmp/big1g.json
    run new $cores $PWD /tmp/big1g.json
  done
done 2>&1 | grep wall=
taskset -c 0,1 /usr/bin/time -f "orjson cores=0,1 big1g wall=%e user=%U sys=%S rss_kb=%M" python3 -c "import orjson,sys; orjson.loads(open(sys.argv[1],'rb').read())" /tmp/big1g.json 2>&1 | grep wall= || echo "no orjson"
rm -f /tmp/big1g.json
if [ "${BIG10:-1}" = 1 ]; then
  PYTHONPATH=/tmp/site:$PWD python3 bench/gen_big_trace.py --source /tmp/src.json --out /tmp/big10g.json --target-mb 10000 --fast > /dev/null
  for r in 1 2; do
    run old 0,1 $PWD/.whl/old /tmp/big10g.json
    run new 0,1 $PWD /tmp/big10g.json
  done 2>&1 | grep wall=
fi
