"""Second set of before/after pairs (issue 28): one planted problem each, the hand fix, on shapes nobody tuned
ptprof's what-ifs for. Variant `<pair>_a` is the loop with the problem, `<pair>_b` the fixed loop
(`launch_graphs` and `launch_compile` share their eager loop `launch_a`).

    python pairs2.py run VARIANT --steps N          # the loop alone (what `ptprof record` runs)
    python pairs2.py time PAIR... --out timing.json # both variants in one process, interleaved (below)
    python pairs2.py diag VARIANT MODE              # steps before / after a profiler window (MODE: none,
                                                    # profiler, profiler_syncdebug)

Timing (ground truth): both variants built in one process, `warm` steps each, then 3 rounds x (block of A,
block of B), each block synced at both ends; per-variant medians of the rounds, the median of the per-round
savings and its range. With PAIRS_LOCK set, every GPU phase (a pair's timing, a `run`) holds an flock on
that file, so recordings started in parallel never share the GPU with a measurement.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch
from pairs2_loop import DEV, block_ms, fixed, gpu_lock, loop, sync  # noqa: F401 (the harness, shared)
from torch import nn

F = nn.functional


# -- optimizer-heavy MLP: 200 parameter tensors --------------------------------------------------------
def opt_fused(fused):
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(128, 128) for _ in range(100)]).to(DEV)
    kw = {"fused": True} if fused else {"foreach": False}
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, **kw)
    x, y = torch.randn(64, 128, device=DEV), torch.randn(64, 128, device=DEV)
    return loop(model, fixed(x, y), F.mse_loss, opt)


# -- set_to_none on a wide MLP: 96 gradients of 4 MiB -----------------------------------------------------
def zero_none(none):
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Sequential(nn.Linear(1024, 1024), nn.ReLU()) for _ in range(48)]).to(DEV)
    opt = torch.optim.Adam(model.parameters(), lr=1e-5, fused=True)
    x, y = torch.randn(256, 1024, device=DEV), torch.randn(256, 1024, device=DEV)
    return loop(model, fixed(x, y), F.mse_loss, opt, zero_none=none)


# -- a new static input shape every 8 steps (compiled) vs one padded shape --------------------------------
def recompile(padded):
    torch.manual_seed(0)
    import torch._dynamo as dynamo
    dynamo.config.automatic_dynamic_shapes = False
    for name in ("cache_size_limit", "recompile_limit"):
        if hasattr(dynamo.config, name):
            setattr(dynamo.config, name, 100_000)
    model = nn.Sequential(nn.Linear(512, 1024), nn.GELU(), nn.Linear(1024, 512)).to(DEV)
    cmodel = torch.compile(model, backend="aot_eager", dynamic=False)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    n = [0]

    def batch():
        rows = 256 + (n[0] // 8)  # a new length every 8 steps (e.g. variable sequence lengths)
        n[0] += 1
        x = torch.randn(rows, 512, device=DEV)
        if padded:
            x = F.pad(x[:256], (0, 0, 0, 0))
        return x, None
    return loop(cmodel, batch, lambda out, y: out.pow(2).mean(), opt)


# -- launch-bound eager MLP, fixed by torch.compile (default mode) or CUDA graphs ---------------------------
def launch_model():
    torch.manual_seed(0)
    layers = []
    for _ in range(8):
        layers += [nn.Linear(256, 256), nn.LayerNorm(256), nn.GELU()]
    return nn.Sequential(*layers, nn.Linear(256, 1)).to(DEV)


def launch(kind):
    model = launch_model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, fused=True)
    x = torch.randn(64, 256, device=DEV)
    if kind == "compile":
        model = torch.compile(model)
    elif kind == "graphs":
        model = torch.cuda.make_graphed_callables(model, (x,))
    return loop(model, fixed(x, None), lambda out, y: out.pow(2).mean(), opt, zero_none=kind != "graphs")


# -- DataLoader with a CPU-heavy per-sample transform --------------------------------------------------------
class HeavyImages(torch.utils.data.Dataset):
    def __init__(self, size=96, work=6):
        self.size, self.work = size, work

    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        img = torch.rand(3, self.size + 16, self.size + 16, generator=g)
        img = img[:, i % 16:i % 16 + self.size, (3 * i) % 16:(3 * i) % 16 + self.size]
        for _ in range(self.work):  # a blur cascade: the CPU cost of decode + augment
            img = F.avg_pool2d(img.unsqueeze(0), 3, 1, 1).squeeze(0)
        return (img - 0.5) / 0.25, i % 10


def small_cnn():
    return nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 64, 3, stride=2, padding=1),
                         nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))


def loader(workers, work=6, pin=True, batch=32, size=96, prefetch=2):
    torch.manual_seed(0)
    if workers == 0:
        torch.set_num_threads(1)  # a worker's share of the CPU, as the workers get
    model = small_cnn().to(DEV)
    dl = torch.utils.data.DataLoader(HeavyImages(size, work), batch_size=batch, num_workers=workers, pin_memory=pin,
                                     persistent_workers=workers > 0, prefetch_factor=prefetch if workers else None)
    it = iter(dl)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def batch_fn():
        x, y = next(it)
        return x.to(DEV, non_blocking=pin), y.to(DEV, non_blocking=pin)
    return loop(model, batch_fn, F.cross_entropy, opt)


# -- small transformer with host syncs ---------------------------------------------------------------------
def tfm(d=256, layers=4, seq=128, batch=16, vocab=2000):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.0, batch_first=True)
    model = nn.Sequential(nn.Embedding(vocab, d), nn.TransformerEncoder(layer, layers, enable_nested_tensor=False),
                          nn.Linear(d, vocab)).to(DEV)
    x = torch.randint(0, vocab, (batch, seq), device=DEV)
    return model, x, x.roll(1, 1)


def lm_loss(out, y):
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))


def item_tfm(items):
    model, x, y = tfm()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    return loop(model, fixed(x, y), lm_loss, opt, items=items)


def sync_tfm(sync_each):
    model, x, y = tfm(d=384, layers=6, seq=256, batch=16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    return loop(model, fixed(x, y), lm_loss, opt, sync_each=sync_each)


def bf16_tfm(bf16):
    model, x, y = tfm(d=1024, layers=4, seq=512, batch=16, vocab=8000)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    return loop(model, fixed(x, y), lm_loss, opt, autocast=True if bf16 else None)


def adamw_tfm(fused):
    model, x, y = tfm(d=256, layers=6, seq=64, batch=8)
    kw = {"fused": True} if fused else {"foreach": False}
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, **kw)
    return loop(model, fixed(x, y), lm_loss, opt)


# -- non-contiguous input: a permuted batch reshaped inside the model -----------------------------------------
class Flat(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64 * 256, 2048), nn.ReLU(), nn.Linear(2048, 10))

    def forward(self, x):
        return self.net(x.reshape(x.shape[0], -1))


def noncontig(contiguous):
    torch.manual_seed(0)
    model = Flat().to(DEV)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    base = torch.randn(512, 256, 64, device=DEV)
    x = base.transpose(1, 2)  # (512, 64, 256) view: the reshape copies it every step
    if contiguous:
        x = x.contiguous()  # once, outside the loop
    y = torch.randint(0, 10, (512,), device=DEV)
    return loop(model, fixed(x, y), F.cross_entropy, opt)


# -- fp32 GEMMs without / with TF32 -----------------------------------------------------------------------------
def tf32_mlp(tf32):
    torch.manual_seed(0)
    model = nn.Sequential(*[m for _ in range(4) for m in (nn.Linear(2048, 2048), nn.ReLU())]).to(DEV)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x, y = torch.randn(2048, 2048, device=DEV), torch.randn(2048, 2048, device=DEV)
    step = loop(model, fixed(x, y), F.mse_loss, opt)

    def run():
        torch.backends.cuda.matmul.allow_tf32 = tf32
        step()
    return run


# -- CNNs: channels_last, pageable input, zero_grad, single-tensor SGD ------------------------------------------
def resnet(depth=18, classes=100):
    import torchvision
    torch.manual_seed(0)
    return getattr(torchvision.models, f"resnet{depth}")(num_classes=classes).to(DEV)


def cl_cnn(cl):
    model = resnet(34)
    fmt = torch.channels_last if cl else torch.contiguous_format
    model = model.to(memory_format=fmt)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(64, 3, 128, 128, device=DEV).contiguous(memory_format=fmt)
    y = torch.randint(0, 100, (64,), device=DEV)
    return loop(model, fixed(x, y), F.cross_entropy, opt, autocast=True)


def cnn_pageable(pinned):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 64, 5, stride=2, padding=2), nn.ReLU(), nn.Conv2d(64, 64, 3, stride=2),
                          nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)).to(DEV)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    host = [torch.randn(128, 3, 192, 192) for _ in range(2)]  # 56 MiB each
    if pinned:
        host = [h.pin_memory() for h in host]
    y = torch.randint(0, 10, (128,), device=DEV)
    n = [0]

    def batch():
        n[0] += 1
        return host[n[0] % 2].to(DEV, non_blocking=pinned), y
    return loop(model, batch, F.cross_entropy, opt, autocast=True)


def zero_cnn(none):
    model = resnet(18)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.randn(32, 3, 64, 64, device=DEV), torch.randint(0, 100, (32,), device=DEV)
    return loop(model, fixed(x, y), F.cross_entropy, opt, zero_none=none)


def sgd_foreach(foreach):
    model = resnet(18)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, foreach=foreach)
    x, y = torch.randn(32, 3, 64, 64, device=DEV), torch.randint(0, 100, (32,), device=DEV)
    return loop(model, fixed(x, y), F.cross_entropy, opt)


# -- LSTM language model with host syncs ----------------------------------------------------------------------
class LSTMLM(nn.Module):
    def __init__(self, vocab=5000, d=512):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.rnn = nn.LSTM(d, d, num_layers=2, batch_first=True)
        self.out = nn.Linear(d, vocab)

    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        return self.out(h)


def lstm_item(items):
    torch.manual_seed(0)
    model = LSTMLM().to(DEV)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)
    x = torch.randint(0, 5000, (32, 64), device=DEV)
    return loop(model, fixed(x, x.roll(1, 1)), lm_loss, opt, items=items)


# -- GPU-bound bf16 MLP with a per-step loss.item() -----------------------------------------------------------
def item_big(items):
    torch.manual_seed(0)
    model = nn.Sequential(*[m for _ in range(4) for m in (nn.Linear(4096, 4096), nn.GELU())]).to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    x, y = torch.randn(4096, 4096, device=DEV), torch.randn(4096, 4096, device=DEV)
    return loop(model, fixed(x, y), F.mse_loss, opt, items=items, autocast=True)


# -- compiled model with a data-dependent branch (graph break) -----------------------------------------------
class Gated(nn.Module):
    def __init__(self, fullgraph):
        super().__init__()
        self.fullgraph = fullgraph
        self.a = nn.Sequential(nn.Linear(1024, 1024), nn.GELU(), nn.Linear(1024, 1024))
        self.b = nn.Sequential(nn.Linear(1024, 1024), nn.GELU(), nn.Linear(1024, 1024))
        self.c = nn.Sequential(nn.Linear(1024, 1024), nn.GELU(), nn.Linear(1024, 1024))

    def forward(self, x):
        x = self.a(x)
        if self.fullgraph:
            x = torch.where(x.abs().mean() > 10, x * 0.5, x)
        elif x.abs().mean() > 10:  # data-dependent: a graph break each call
            x = x * 0.5
        x = self.b(x)
        if self.fullgraph:
            x = torch.where(x.abs().mean() > 10, x * 0.5, x)
        elif x.abs().mean() > 10:
            x = x * 0.5
        return self.c(x)


def graph_break(fullgraph):
    torch.manual_seed(0)
    model = torch.compile(Gated(fullgraph).to(DEV))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    x = torch.randn(256, 1024, device=DEV)
    return loop(model, fixed(x, None), lambda out, y: out.pow(2).mean(), opt)


# pair -> (before, after, rule the fix answers, shape, held out)
PAIRS = {
    "opt_fused": ("opt_fused_a", "opt_fused_b", "single_tensor_optimizer", "MLP, 200 params, Adam foreach=False -> fused", False),
    "zero_none": ("zero_none_a", "zero_none_b", "zero_grad_not_none", "wide MLP, zero_grad(set_to_none=False) -> True", False),
    "recompile": ("recompile_a", "recompile_b", "recompile", "compiled MLP, new static shape every 8 steps -> padded", False),
    "launch_compile": ("launch_a", "launch_compile_b", "launch_bound", "deep narrow MLP eager -> torch.compile", False),
    "launch_graphs": ("launch_a", "launch_graphs_b", "launch_bound", "deep narrow MLP eager -> CUDA graphs", False),
    "loader_nw": ("loader_nw_a", "loader_nw_b", "dataloader_bound", "CNN + CPU-heavy transform, num_workers 0 -> 6", False),
    "loader_starved": ("loader_starved_a", "loader_starved_b", "dataloader_bound", "num_workers 2 -> 8 (starved at 2)", False),
    "loader_pin": ("loader_pin_a", "loader_pin_b", "pageable_memcpy", "DataLoader pin_memory False -> True", False),
    "item_tfm": ("item_tfm_a", "item_tfm_b", "host_sync", "small transformer, 3x .item() per step -> none", False),
    "noncontig": ("noncontig_a", "noncontig_b", "non_contiguous_input",
                  "permuted batch reshaped in forward -> contiguous once", False),
    "tf32_mlp": ("tf32_mlp_a", "tf32_mlp_b", "fp32_gemm", "fp32 MLP, allow_tf32 False -> True", False),
    "cl_cnn": ("cl_cnn_a", "cl_cnn_b", "channels_last", "bf16 ResNet-34 NCHW -> channels_last", False),
    "adamw_tfm": ("adamw_tfm_a", "adamw_tfm_b", "single_tensor_optimizer", "transformer AdamW foreach=False -> fused", False),
    "item_big": ("item_big_a", "item_big_b", "host_sync", "GPU-bound bf16 MLP, loss.item() -> none", False),
    "graph_break": ("graph_break_a", "graph_break_b", "graph_break", "compiled, data-dependent branch -> torch.where", False),
    "zero_cnn": ("zero_cnn_a", "zero_cnn_b", "zero_grad_not_none", "ResNet-18 zero_grad(set_to_none=False) -> True", True),
    "sgd_foreach": ("sgd_foreach_a", "sgd_foreach_b", "single_tensor_optimizer", "ResNet-18 SGD foreach=False -> True", True),
    "lstm_item": ("lstm_item_a", "lstm_item_b", "host_sync", "LSTM LM, 2x .item() per step -> none", True),
    "cnn_pageable": ("cnn_pageable_a", "cnn_pageable_b", "pageable_memcpy", "CNN, pageable batch -> pinned non_blocking", True),
    "bf16_tfm": ("bf16_tfm_a", "bf16_tfm_b", "fp32_gemm", "transformer fp32 -> bf16 autocast", True),
    "sync_tfm": ("sync_tfm_a", "sync_tfm_b", "host_sync", "transformer, synchronize() per step -> none", True),
    "loader_light": ("loader_light_a", "loader_light_b", "dataloader_bound", "light transform, num_workers 0 -> 4", True),
}

VARIANTS = {
    "opt_fused_a": lambda: opt_fused(False), "opt_fused_b": lambda: opt_fused(True),
    "zero_none_a": lambda: zero_none(False), "zero_none_b": lambda: zero_none(True),
    "recompile_a": lambda: recompile(False), "recompile_b": lambda: recompile(True),
    "launch_a": lambda: launch("eager"), "launch_compile_b": lambda: launch("compile"),
    "launch_graphs_b": lambda: launch("graphs"),
    "loader_nw_a": lambda: loader(0), "loader_nw_b": lambda: loader(6),
    "loader_starved_a": lambda: loader(2, work=10, batch=64), "loader_starved_b": lambda: loader(8, work=10, batch=64),
    "loader_pin_a": lambda: loader(4, work=0, pin=False, batch=256, size=160),
    "loader_pin_b": lambda: loader(4, work=0, pin=True, batch=256, size=160),
    "loader_light_a": lambda: loader(0, work=1, batch=64, size=64),
    "loader_light_b": lambda: loader(4, work=1, batch=64, size=64),
    "item_tfm_a": lambda: item_tfm(3), "item_tfm_b": lambda: item_tfm(0),
    "noncontig_a": lambda: noncontig(False), "noncontig_b": lambda: noncontig(True),
    "tf32_mlp_a": lambda: tf32_mlp(False), "tf32_mlp_b": lambda: tf32_mlp(True),
    "cl_cnn_a": lambda: cl_cnn(False), "cl_cnn_b": lambda: cl_cnn(True),
    "adamw_tfm_a": lambda: adamw_tfm(False), "adamw_tfm_b": lambda: adamw_tfm(True),
    "item_big_a": lambda: item_big(1), "item_big_b": lambda: item_big(0),
    "graph_break_a": lambda: graph_break(False), "graph_break_b": lambda: graph_break(True),
    "zero_cnn_a": lambda: zero_cnn(False), "zero_cnn_b": lambda: zero_cnn(True),
    "sgd_foreach_a": lambda: sgd_foreach(False), "sgd_foreach_b": lambda: sgd_foreach(True),
    "lstm_item_a": lambda: lstm_item(2), "lstm_item_b": lambda: lstm_item(0),
    "cnn_pageable_a": lambda: cnn_pageable(False), "cnn_pageable_b": lambda: cnn_pageable(True),
    "bf16_tfm_a": lambda: bf16_tfm(False), "bf16_tfm_b": lambda: bf16_tfm(True),
    "sync_tfm_a": lambda: sync_tfm(True), "sync_tfm_b": lambda: sync_tfm(False),
}


def time_pair(pair, rounds=3, block=int(os.environ.get("PAIRS_BLOCK", 30)), warm=15):  # noqa: B008 - read once
    before, after = PAIRS[pair][:2]
    with gpu_lock():
        t0 = time.perf_counter()
        a, b = VARIANTS[before](), VARIANTS[after]()
        for _ in range(warm):
            a()
        for _ in range(warm):
            b()
        ta, tb = [], []
        for _ in range(rounds):
            ta.append(block_ms(a, block))
            tb.append(block_ms(b, block))
        del a, b
        if DEV == "cuda":
            torch.cuda.empty_cache()
    med = lambda v: sorted(v)[len(v) // 2]  # noqa: E731
    saves = [x - y for x, y in zip(ta, tb)]
    return {"pair": pair, "before": before, "after": after, "rule": PAIRS[pair][2], "shape": PAIRS[pair][3],
            "held_out": PAIRS[pair][4], "rounds": rounds, "block": block, "warm": warm,
            "before_ms": med(ta), "after_ms": med(tb), "saving_ms": med(saves), "saving_min_ms": min(saves),
            "saving_max_ms": max(saves), "before_all": ta, "after_all": tb, "wall_s": round(time.perf_counter() - t0, 1)}


def diag(variant, mode, n=60):
    """Unprofiled steps before and after a 5-step torch.profiler window (ptprof's options), same process."""
    step = VARIANTS[variant]()
    for _ in range(20):
        step()
    before = [block_ms(step, n // 3) for _ in range(3)]
    if mode.startswith("profiler"):
        if mode.endswith("syncdebug"):
            torch.cuda.set_sync_debug_mode("warn")
        tp = torch.profiler
        prof = tp.profile(activities=[tp.ProfilerActivity.CPU, tp.ProfilerActivity.CUDA],
                          schedule=tp.schedule(wait=0, warmup=1, active=3, repeat=1), record_shapes=True,
                          profile_memory=True)
        prof.start()
        for _ in range(5):
            step()
            prof.step()
        prof.stop()
    else:
        for _ in range(5):
            step()
    after = [block_ms(step, n // 3) for _ in range(3)]
    return {"variant": variant, "mode": mode, "before_ms": before, "after_ms": after,
            "ratio": sorted(after)[1] / sorted(before)[1]}


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["run", "time", "diag"])
    p.add_argument("names", nargs="+")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--out")
    a = p.parse_args(argv)
    if a.mode == "run":
        if DEV == "cuda":
            torch.zeros(1, device=DEV)  # CUDA context outside the lock
        with gpu_lock():
            step = VARIANTS[a.names[0]]()
            for _ in range(a.steps):
                step()
            sync()
        return 0
    if a.mode == "diag":
        res = diag(a.names[0], a.names[1])
        print(json.dumps(res), flush=True)
        if a.out:
            with open(a.out, "a") as fh:
                fh.write(json.dumps(res) + "\n")
        return 0
    out = []
    for pair in a.names:
        try:
            res = time_pair(pair)
        except Exception as exc:  # one broken pair must not lose the others
            res = {"pair": pair, "error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps({k: v for k, v in res.items() if not k.endswith("_all")}), flush=True)
        out.append(res)
        if a.out:
            with open(a.out, "w") as fh:
                json.dump({"device": torch.cuda.get_device_name() if DEV == "cuda" else "cpu",
                           "torch": torch.__version__, "method": "interleaved blocks in one process",
                           "results": out}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
