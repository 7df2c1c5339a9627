"""Shared knobs of the loop-shape scripts: steps from argv[1], width from LOOP_WIDTH (small on CPU, larger on
the GPU run), device = cuda when there is one."""
import os
import sys

import torch

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 8  # < 0: forever
WIDTH = int(os.environ.get("LOOP_WIDTH", "32"))
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def iterations():
    i = 0
    while STEPS < 0 or i < STEPS:
        yield i
        i += 1


def batch(n=16, width=WIDTH):
    return torch.randn(n, width, device=DEVICE), torch.randn(n, 1, device=DEVICE)
