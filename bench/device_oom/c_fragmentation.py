"""(c) Fragmentation OOMs that PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True avoids.

    python3 c_fragmentation.py [lazy_state|grad_stats|ragged_state]     # under a 2 GiB cap

Each scenario is a sequence of tensor allocations and frees, sized so that the caching allocator's own
rules (see alloc_sim.py, a model of them that checks every scenario on the CPU) leave the memory it
reserved full of holes that no request fits, while the live tensors would fit the cap:

- lazy_state: 3 training steps of 52 layers x 22 MiB activations, then state created lazily after a
  backward (as Adam's exp_avg / an EMA copy of the weights are): 52 x 12 MiB tensors. Each lands in a freed
  22 MiB activation segment and pins it (the 10 MiB left can hold neither a state nor an activation), so the
  next forward needs a new segment for every activation: OOM with ~520 MiB reserved but unallocated.
  Expandable segments: the activations were one contiguous mapping, the states pack at its start, the
  forward fits in the rest.
- grad_stats: 8 layers of 200 MiB activations; in backward each layer frees its activation, keeps a 2 MiB
  statistic (from step 3 on) and makes a 198 MiB gradient, which the optimizer step then frees: every 200 MiB segment is
  pinned by its 2 MiB statistic, and the next forward's 200 MiB activation fits none of the 198 MiB holes
  (~1.5 GiB reserved but unallocated). Expandable segments: the free 20 MiB pages inside the holes are
  unmapped on the OOM path and mapped again at the end of the segment.
- ragged_state: lazy_state with 48 layers of ragged activation sizes (20-32 MiB, a variable sequence length) and
  state sized half the activation plus 2 MiB.
"""
import os
import random
import sys

MiB = 1 << 20

SCENARIOS = {
    "lazy_state": {"cap": 2048 * MiB},
    "grad_stats": {"cap": 2048 * MiB},
    "ragged_state": {"cap": 2048 * MiB},
}


def simulate(name, al, step=lambda i: None, log=lambda s: None):
    """Run scenario `name` against `al` (malloc(nbytes) -> handle, free(handle)); `step(i)` ends step i."""
    if name in ("lazy_state", "ragged_state"):
        rng = random.Random(7)
        layers = 52 if name == "lazy_state" else 48
        if name == "lazy_state":
            acts_sz = [22 * MiB] * layers
            state_sz = [12 * MiB] * layers
        else:
            acts_sz = [rng.randrange(20, 33, 2) * MiB for _ in range(layers)]
            state_sz = [s // 2 + 2 * MiB for s in acts_sz]
        state = []
        for i in range(1, 8):
            acts = [al.malloc(s) for s in acts_sz]  # forward: every layer's activation stays for backward
            log(f"step {i}: forward done")
            for a in reversed(acts):  # backward frees them
                al.free(a)
            if i == 3:  # the state is created lazily, after the third backward
                state = [al.malloc(s) for s in state_sz]
                log("state created")
            step(i)
        return state
    if name == "grad_stats":
        layers, stats = 8, []
        for i in range(1, 6):
            acts = [al.malloc(200 * MiB) for _ in range(layers)]  # forward: 200 MiB per layer
            log(f"step {i}: forward done")
            grads = []
            for a in reversed(acts):  # backward: a layer frees its activation, keeps a statistic, makes its grad
                al.free(a)
                if i >= 3:  # statistics logged from step 3 on (a callback turned on after warm-up)
                    stats.append(al.malloc(2 * MiB))
                grads.append(al.malloc(198 * MiB))
            for g in grads:  # optimizer step, then zero_grad(set_to_none=True)
                al.free(g)
            step(i)
        return stats
    raise SystemExit(f"unknown scenario {name!r}: one of {', '.join(SCENARIOS)}")


def main():
    import torch

    name = sys.argv[1] if len(sys.argv) > 1 else "lazy_state"
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction(SCENARIOS[name]["cap"] / total)
    w = torch.nn.Parameter(torch.zeros(64, 64, device="cuda"))
    opt = torch.optim.SGD([w], lr=0.1)
    live = {}

    class Torch:
        def malloc(self, n):
            t = torch.ones(n // 4, device="cuda")
            live[id(t)] = t
            return id(t)

        def free(self, h):
            del live[h]

    def step(i):
        w.grad = torch.ones_like(w)
        opt.step()  # a token optimizer step marks the training step for the profiler
        print(f"step {i}: allocated {torch.cuda.memory_allocated() >> 20} MiB, reserved "
              f"{torch.cuda.memory_reserved() >> 20} MiB", flush=True)

    print(f"{name}: PYTORCH_CUDA_ALLOC_CONF={os.environ.get('PYTORCH_CUDA_ALLOC_CONF', '')}", flush=True)
    simulate(name, Torch(), step, lambda s: print(s, flush=True))
    print(f"{name}: finished without OOM, reserved {torch.cuda.memory_reserved() >> 20} MiB", flush=True)


if __name__ == "__main__":
    main()
