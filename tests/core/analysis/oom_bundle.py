"""A synthetic OOM bundle (CPU-made; the device-made ones are in tests/data/bundles/oom_*): a leak
(`losses.append(loss)` keeps each step's 64 MiB of activations), fragmentation (reserved, unallocated
holes), and an OOM at step 6 asking for 256 MiB."""
from __future__ import annotations

import json
import pickle
from pathlib import Path

MIB = 1 << 20
T0_US = 1_765_000_000_000_000  # unix us
STEP_US = 100_000


def frames(line: int, fn: str, file: str = "/home/u/train.py") -> list[dict]:
    return [{"filename": "/usr/lib/python3/site-packages/torch/nn/modules/linear.py", "line": 125, "name": "forward"},
            {"filename": file, "line": line, "name": fn},
            {"filename": file, "line": 40, "name": "<module>"}]


def snapshot() -> dict:
    leak = frames(21, "forward")
    temp = frames(30, "loss_fn")
    opt = [{"filename": "/usr/lib/python3/site-packages/torch/optim/adam.py", "line": 90, "name": "_init_group"},
           {"filename": "/home/u/train.py", "line": 35, "name": "<module>"}]
    ring, blocks = [], []
    addr = 1 << 32
    t = T0_US
    for _ in range(2):  # optimizer state, allocated once
        ring.append({"action": "alloc", "addr": addr, "size": 32 * MIB, "stream": 0, "time_us": t, "frames": opt})
        blocks.append({"address": addr, "size": 32 * MIB, "requested_size": 32 * MIB, "state": "active_allocated",
                       "frames": opt})
        addr += 32 * MIB
    for step in range(1, 7):
        t = T0_US + step * STEP_US - 50_000
        ring.append({"action": "alloc", "addr": addr, "size": 64 * MIB, "stream": 0, "time_us": t, "frames": leak})
        blocks.append({"address": addr, "size": 64 * MIB, "requested_size": 64 * MIB, "state": "active_allocated",
                       "frames": leak})
        addr += 64 * MIB
        ring.append({"action": "alloc", "addr": addr, "size": 16 * MIB, "stream": 0, "time_us": t + 1, "frames": temp})
        ring.append({"action": "free_completed", "addr": addr, "size": 16 * MIB, "stream": 0, "time_us": t + 2,
                     "frames": temp})
        blocks.append({"address": addr, "size": 16 * MIB, "requested_size": 16 * MIB, "state": "inactive"})
        addr += 16 * MIB
    live = sum(b["size"] for b in blocks if b["state"] == "active_allocated")
    total = sum(b["size"] for b in blocks)
    seg = {"device": 0, "address": 1 << 32, "total_size": total, "allocated_size": live, "active_size": live,
           "stream": 0, "segment_type": "large", "blocks": blocks}
    ring.append({"action": "oom", "addr": 0, "size": 256 * MIB, "stream": 0, "time_us": T0_US + 6 * STEP_US + 10})
    return {"segments": [seg], "device_traces": [ring], "allocator_settings": {"expandable_segments": False}}


def write(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "oom.rank0.snapshot.pickle").write_bytes(pickle.dumps(snapshot(), protocol=4))
    oom = {"rank": 0, "device": 0, "size_bytes": 256 * MIB, "free_bytes": 10 * MIB, "total_bytes": 1024 * MIB,
           "allocated_bytes": 448 * MIB, "reserved_bytes": 544 * MIB, "where": "/home/u/train.py:21 in forward",
           "message": "CUDA out of memory. Tried to allocate 256.00 MiB.", "snapshot": "oom.rank0.snapshot.pickle",
           "history": True}
    (root / "run.json").write_text(json.dumps({"format": "ptprof-run/1", "status": "oom", "exit_code": 1,
                                               "oom": [oom], "exception": "OutOfMemoryError: CUDA out of memory."}))
    with open(root / "events.jsonl", "w") as fh:
        for step in range(1, 7):
            fh.write(json.dumps({"type": "step", "rank": 0, "step": step,
                                 "t_ns": (T0_US + step * STEP_US) * 1000}) + "\n")
    return root
