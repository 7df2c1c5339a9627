#!/usr/bin/env bash
# Device run (H200): the side-stream loop recorded by ptprof (CUPTI sync events on) and timed unprofiled.
# From the repo root, msgspec wheel in .whl/ (carry .whl); the bundle goes to $OUT/side_stream.tgz.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD
export PYTHONUNBUFFERED=1
S=bench/device_streams/side_stream.py
for k in 1 2 3; do python3 $S 110 --time; done
rm -rf /tmp/side_stream
timeout 120 python3 -m core.cli record --quiet --out /tmp/side_stream --wait 5 --warmup 2 --active 5 $S 20
echo "record rc=$?"
python3 - <<'PY'
import gzip, json, glob
f = glob.glob("/tmp/side_stream/traces/*.gz")[0]
d = json.loads(gzip.decompress(open(f, "rb").read()))
ev = d["traceEvents"]
cats = {}
for e in ev:
    cats[e.get("cat")] = cats.get(e.get("cat"), 0) + 1
print(cats)
for e in [e for e in ev if e.get("cat") == "cuda_sync"][:6]:
    print("SYNC", json.dumps(e))
for e in [e for e in ev if e.get("name") in ("cudaEventRecord", "cudaStreamWaitEvent")][:4]:
    print("RT", json.dumps(e))
PY
python3 -m core.cli analyze /tmp/side_stream --no-cache 2>&1 | head -30
tar czf $OUT/side_stream.tgz -C /tmp side_stream
