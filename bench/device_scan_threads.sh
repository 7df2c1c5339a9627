set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) core/trace/_scan.c -o core/trace/_scan$(python3-config --extension-suffix) && echo built
python3 -c "import isal; print('isal', isal.__version__)"
python3 bench/gen_big_trace.py --source .whl/gpu_gpt_big.pt.trace.json.gz --out /tmp/big.pt.trace.json --target-mb 1100 > /dev/null
for f in .whl/gpu_gpt_big.pt.trace.json.gz /tmp/big.pt.trace.json; do
  for w in auto 0 4 16; do for r in 1 2 3; do
    if [ $w = auto ]; then unset PTPROF_WORKERS; else export PTPROF_WORKERS=$w; fi
    /usr/bin/time -f "$(basename $f) threads=$w wall=%e cpu=%U+%S rss_kb=%M" python3 -m core.cli info --no-cache "$f" > /dev/null
  done; done
done 2>&1 | grep wall=
unset PTPROF_WORKERS
python3 -X importtime -m core.cli --help 2>&1 | sort -t'|' -k2 -n | tail -4
