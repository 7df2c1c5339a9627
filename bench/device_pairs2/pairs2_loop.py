"""The loop harness shared by pairs2.py's variants: the device, a flock around GPU phases (PAIRS_LOCK), one
training step built from a model, its batch, loss and optimizer, and a synced block timer."""
from __future__ import annotations

import contextlib
import fcntl
import os
import time

import torch

DEV = "cuda" if torch.cuda.is_available() else "cpu"


@contextlib.contextmanager
def gpu_lock():
    path = os.environ.get("PAIRS_LOCK")
    if not path:
        yield
        return
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def sync():
    if DEV == "cuda":
        torch.cuda.synchronize()


def loop(model, batch, loss_fn, opt, *, zero_none=True, items=0, sync_each=False, autocast=None, after=None):
    def step():
        x, y = batch()
        opt.zero_grad(set_to_none=zero_none)
        with torch.autocast(DEV, dtype=torch.bfloat16, enabled=autocast is not None):
            out = model(x)
        loss = loss_fn(out.float(), y)
        loss.backward()
        opt.step()
        for _ in range(items):
            float(loss.item())
        if sync_each:
            torch.cuda.synchronize()
        if after is not None:
            after()
    return step


def fixed(x, y):
    return lambda: (x, y)


def block_ms(step, n):
    sync()
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    sync()
    return 1e3 * (time.perf_counter() - t0) / n
