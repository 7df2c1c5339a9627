"""The loop harness shared by pairs2.py's variants: the device, a flock around GPU phases (PAIRS_LOCK), one
training step built from a model, its batch, loss and optimizer; the synced block timer is bench/interleave.py's."""
from __future__ import annotations

import contextlib
import fcntl
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: the shared timing harness
from interleave import block_ms, sync  # noqa: E402,F401 (pairs2.py takes them from here)

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


