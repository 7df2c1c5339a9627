"""The C scanner alone (`_scan.scan`, one thread, CPU time): best and median of 5 passes over the first
12 chunks of 32 MB of a trace. For A/B runs of scanner changes (run it from each checkout).

    python bench/bench_scan.py TRACE.json
"""
import mmap
import os
import sys
import time

sys.path.insert(0, os.getcwd())
from core.trace import _scan, kineto  # noqa: E402

path = sys.argv[1]
with open(path, "rb") as fh:
    buf = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
bounds = kineto.chunk_bounds(buf, kineto.locate(buf), 32 << 20)[:12]
for a, b in bounds:  # warm the page cache
    _scan.scan(buf, a, b)
times = []
for _ in range(5):
    t = time.process_time()
    for a, b in bounds:
        _scan.scan(buf, a, b)
    times.append(time.process_time() - t)
mb = sum(b - a for a, b in bounds) / 1e6
print(f"{os.getcwd()}: scan {mb:.0f} MB: best {min(times):.3f} s, median {sorted(times)[2]:.3f} s "
      f"-> {mb / min(times):.0f} MB/s")
