"""Unprofiled ground truth for a before/after pair, shared by bench/device_pairs/pairs.py and
bench/device_check/fresh.py: both variants in one process, warmed up, then `rounds` x (block of A, block
of B), each block synced at both ends; per-variant medians and the median of the per-round savings.
Interleaving cancels drifts (clocks, other tenants) that one block per variant would read as a saving."""
from __future__ import annotations

import json
import time

import torch


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def block_ms(step, n: int) -> float:
    sync()
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    sync()
    return 1e3 * (time.perf_counter() - t0) / n


def steady_ms(step, first: int = 20, last: int = 200) -> float:
    """ms per step over steps first..last of one variant run alone (the first `first` warm up)."""
    for _ in range(first):
        step()
    return block_ms(step, last - first)


def time_pair(pair: str, before: str, after: str, variants: dict, rounds: int, block: int, warm: int) -> dict:
    a, b = variants[before](), variants[after]()
    for _ in range(warm):
        a()
        b()
    ta, tb = [], []
    for _ in range(rounds):
        ta.append(block_ms(a, block))
        tb.append(block_ms(b, block))
    med = lambda v: sorted(v)[len(v) // 2]  # noqa: E731
    saves = [x - y for x, y in zip(ta, tb)]
    return {"pair": pair, "before": before, "after": after, "rounds": rounds, "block": block,
            "before_ms": med(ta), "after_ms": med(tb), "saving_ms": med(saves), "saving_min_ms": min(saves),
            "saving_max_ms": max(saves), "before_all": ta, "after_all": tb}


def run_pairs(names, time_one, out_path: str | None) -> None:
    """Time each pair with `time_one(name)`, print its summary line, rewrite `out_path` after each."""
    out = []
    for pair in names:
        res = time_one(pair)
        print(json.dumps({k: v for k, v in res.items() if not k.endswith("_all")}), flush=True)
        out.append(res)
        if out_path:
            with open(out_path, "w") as fh:
                json.dump({"device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
                           "torch": torch.__version__, "method": "interleaved blocks", "results": out}, fh, indent=1)
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
