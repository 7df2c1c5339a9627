"""Time an unmodified training script without the profiler: the ground truth for ptprof's unprofiled step
estimate on public examples (issue 28).

    python step_clock.py [--first 20] [--last 120] [--by optimizer|backward] [--out FILE] -- SCRIPT [ARGS...]

Runs SCRIPT as __main__ (runpy, its folder first on sys.path, argv as given). A step is one `step()` of the
first optimizer that steps (torch's global optimizer post-hook: GANs' second optimizer and Trainer wrappers
count once), or one `torch.autograd.backward` call for loops without an optimizer (manual SGD). The device is
synchronised at step FIRST and at step LAST; the mean ms/step between them is printed as one JSON line (and
appended to FILE), then the process ends at once (os._exit: DataLoader workers and the script's own epilogue
do not run). Nothing of ptprof is imported.
"""
from __future__ import annotations

import argparse
import json
import os
import runpy
import sys
import time

import torch


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--first", type=int, default=20)
    p.add_argument("--last", type=int, default=120)
    p.add_argument("--by", choices=("optimizer", "backward"), default="optimizer")
    p.add_argument("--label", default="")
    p.add_argument("--out")
    p.add_argument("script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    marks: dict[int, float] = {}
    state = {"n": 0, "owner": None, "t0": time.perf_counter()}

    def tick() -> None:
        state["n"] += 1
        n = state["n"]
        if n in (a.first, a.last):
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            marks[n] = time.perf_counter()
        if n == a.last:
            ms = 1e3 * (marks[a.last] - marks[a.first]) / (a.last - a.first)
            line = json.dumps({"label": a.label or os.path.basename(a.script), "by": a.by, "first": a.first,
                               "last": a.last, "step_ms": round(ms, 4),
                               "to_first_s": round(marks[a.first] - state["t0"], 2),
                               "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"})
            print("STEP_CLOCK " + line, flush=True)
            if a.out:
                with open(a.out, "a") as fh:
                    fh.write(line + "\n")
            os._exit(0)

    if a.by == "optimizer":
        def post_hook(opt, args, kwargs):
            if state["owner"] is None:
                state["owner"] = id(opt)
            if id(opt) == state["owner"]:
                tick()
        from torch.optim.optimizer import register_optimizer_step_post_hook
        register_optimizer_step_post_hook(post_hook)
    else:
        real_backward = torch.autograd.backward

        def backward(*args, **kwargs):
            out = real_backward(*args, **kwargs)
            tick()
            return out
        torch.autograd.backward = backward
    script = os.path.abspath(a.script)
    sys.argv = [script, *a.args]
    sys.path.insert(0, os.path.dirname(script))
    runpy.run_path(script, run_name="__main__")
    print(f"STEP_CLOCK_SHORT {a.script}: ended after {state['n']} steps (< {a.last})", file=sys.stderr, flush=True)
    return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
