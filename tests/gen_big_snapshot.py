"""Write a legitimate-looking CUDA memory snapshot of N allocations (`torch.cuda.memory._dump_snapshot`'s
shape, torch 2.4+ keys), for bench/bench_snapshot.py. Nothing here needs a GPU.

    python bench/gen_big_snapshot.py OUT.pickle --allocs 1000000 --frames 0 --free 0      # issue 37's 32 MB case
    python bench/gen_big_snapshot.py OUT.pickle --allocs 3400000 --frames 30 --free 0.5   # ~1 GB

Shapes follow torch: frame dicts are shared by every stack that holds them, each traced allocation has
its own frames list (py_symbolize dedups per captured traceback, and every allocation captures one), a
block live at snapshot time shares its allocation's frames list, and the pickle is protocol 4 (FRAMEs).
"""
from __future__ import annotations

import argparse
import pickle
import random
from pathlib import Path

SEGMENT_BYTES = 2 << 20


def build(n_allocs: int, n_frames: int, free_fraction: float, n_stacks: int = 400, seed: int = 0) -> dict:
    rnd = random.Random(seed)
    files = [f"/home/user/proj/model/layer{k}.py" for k in range(40)] + \
            ["/usr/lib/python3.11/site-packages/torch/nn/modules/module.py", "??"]
    frame_pool = [{"filename": rnd.choice(files), "line": rnd.randrange(1, 900), "name": f"fn_{k}"}
                  for k in range(2000)]
    stacks = [[rnd.choice(frame_pool) for _ in range(n_frames)] for _ in range(n_stacks)]
    ring = []
    live = []
    addr = 0x7F0000000000
    t = 1_700_000_000_000_000
    for i in range(n_allocs):
        size = 512 * rnd.choice((1, 2, 4, 8, 64, 512, 2048))
        frames = list(stacks[i % n_stacks])  # a list per allocation, shared frame dicts
        ring.append({"action": "alloc", "addr": addr, "size": size, "stream": 0, "time_us": t, "frames": frames,
                     "compile_context": "N/A", "user_metadata": ""})
        t += 3
        if rnd.random() < free_fraction:
            ring.append({"action": "free_requested", "addr": addr, "size": size, "stream": 0, "time_us": t,
                         "frames": frames, "compile_context": "N/A", "user_metadata": ""})
            ring.append({"action": "free_completed", "addr": addr, "size": size, "stream": 0, "time_us": t + 1,
                         "frames": frames, "compile_context": "N/A", "user_metadata": ""})
            t += 2
        else:
            live.append((addr, size, frames))
        addr += size
    segments = []
    for k in range(0, len(live), 4096):  # ~4k live blocks per segment record
        chunk = live[k:k + 4096]
        base = chunk[0][0]
        total = sum(s for _, s, _ in chunk)
        blocks = [{"address": a, "size": s, "requested_size": s, "state": "active_allocated", "frames": f}
                  for a, s, f in chunk]
        segments.append({"device": 0, "address": base, "total_size": total, "allocated_size": total,
                         "active_size": total, "requested_size": total, "stream": 0, "segment_type": "large",
                         "segment_pool_id": (0, 0), "is_expandable": False, "frames": [], "blocks": blocks})
    return {"segments": segments, "device_traces": [ring],
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1, "garbage_collection_threshold": 0.0,
                                   "expandable_segments": False, "pinned_num_register_threads": 1,
                                   "release_lock_on_cudamalloc": False, "pinned_use_host_register": False,
                                   "roundup_power2_divisions": {}},
            "external_annotations": []}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--allocs", type=int, default=1_000_000)
    ap.add_argument("--frames", type=int, default=0, help="frames per stack (0: no stacks recorded)")
    ap.add_argument("--free", type=float, default=0.0, help="fraction of allocations freed in the trace")
    a = ap.parse_args()
    snap = build(a.allocs, a.frames, a.free)
    with open(a.out, "wb") as fh:
        pickle.dump(snap, fh, protocol=4)
    print(f"{a.out}: {a.out.stat().st_size / 1e6:.1f} MB, {len(snap['device_traces'][0]):,} trace events, "
          f"{sum(len(s['blocks']) for s in snap['segments']):,} live blocks")


if __name__ == "__main__":
    main()
