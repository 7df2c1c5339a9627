"""Did each runtime switch take? A mixin of switches.Switches: `_check_<name>()` returns (True, what was done),
(None, why not yet: pending until the final check step) or (False, why it cannot apply). Runs INSIDE the
user's interpreter (stdlib + torch only, Python 3.9); loaded by path.
"""
from __future__ import annotations

import sys


class Checks:
    # -- checks ----------------------------------------------------------------------------------------
    def _live_optimizers(self) -> list:
        return [o for o in (r() for r in self.optimizers) if o is not None]

    def _dynamo_graphs(self) -> int:
        utils = sys.modules.get("torch._dynamo.utils")
        counters = getattr(utils, "counters", None)
        try:
            if not counters:
                return 0
            # frames dynamo compiled: torch 2.13 counts stats.unique_graphs, 2.11 (CUDA 13) only frames.ok
            return max(int(counters["stats"].get("unique_graphs", 0)), int(counters["frames"].get("ok", 0)))
        except Exception:
            return 0

    def _graph_breaks(self) -> int:
        utils = sys.modules.get("torch._dynamo.utils")
        counters = getattr(utils, "counters", None)
        try:
            return int(sum(counters["graph_break"].values())) if counters else 0
        except Exception:
            return 0

    def _check(self, final: bool) -> None:
        for name, _ in self.wanted:
            if self.status[name][0] != "pending":
                continue
            ok, message = getattr(self, f"_check_{name}")()
            if ok:
                self._set(name, "applied", message)
            elif final or ok is False:
                self._set(name, "refused", message)
        refused = [(n, self.status[n][1]) for n, _ in self.wanted if self.status[n][0] == "refused"]
        if refused:
            self._write()
            raise self.refused_error("; ".join(f"{n} cannot apply: {m}" for n, m in refused))

    # each returns (True, what was done) / (None, why not yet: pending until the final check) /
    # (False, why it cannot apply)
    def _loaders(self) -> list:
        return list(self.loaders)

    def _check_pin_memory(self):
        loaders = self._loaders()
        if not loaders:
            return None, ("no torch.utils.data.DataLoader was created before the check step: the batches do not "
                          "come from a DataLoader, so pinning them needs a code change")
        pinned = [dl for dl in loaders if getattr(dl, "pin_memory", False)]
        if not pinned:
            return False, "the DataLoader did not keep pin_memory=True"
        cuda = self.torch.cuda.is_available()
        copies = self.counts["nonblocking"]
        if cuda and not self.counts["batch_copies"]:
            return None, ("the DataLoader's batches were never copied with Tensor.to/.cuda: non_blocking copies "
                          "need a code change")
        return True, (f"DataLoader(pin_memory=True) on {len(pinned)} loader(s)"
                      + (f"; {copies} batch copies made non_blocking so far" if cuda else " (no GPU: no effect)"))

    def _check_num_workers(self):
        loaders = self._loaders()
        n = int(self.values["num_workers"])
        if not loaders:
            return None, "no torch.utils.data.DataLoader was created before the check step"
        if any(getattr(dl, "num_workers", None) != n for dl in loaders):
            return False, "a DataLoader did not keep num_workers"
        return True, f"DataLoader(num_workers={n}) on {len(loaders)} loader(s)"

    def _check_tf32(self):
        if not self._tf32_on():
            return False, "the script turns TF32 off again after the first step"
        gpu = "" if self.torch.cuda.is_available() else " (no GPU: no effect)"
        return True, f"TF32 on for matmul and cuDNN (float32_matmul_precision 'high'){gpu}"

    def _check_cudnn_benchmark(self):
        if not self.torch.backends.cudnn.benchmark:
            return False, "the script turns cudnn.benchmark off again after the first step"
        return True, "cudnn.benchmark = True"

    def _check_opt(self, key: str):
        opts = self._live_optimizers()
        if key in self.failed_ctor:
            return False, self.failed_ctor[key]
        if not opts:
            return None, f"no torch.optim optimizer was created before the check step: {key} needs one"
        took = [o for o in opts if o.defaults.get(key) is True]
        if not took:
            names = ", ".join(sorted({type(o).__name__ for o in opts}))
            return False, f"{names} has no {key} argument"
        return True, f"{key}=True on {', '.join(sorted({type(o).__name__ for o in took}))}"

    def _check_foreach(self):
        return self._check_opt("foreach")

    def _check_fused(self):
        return self._check_opt("fused")

    def _check_set_to_none(self):
        c = self.counts
        if not c["zero_grad"]:
            return None, "the script never calls zero_grad(): its gradients are reset some other way (a code change)"
        if not c["zero_grad_false"]:
            return False, "the script's zero_grad() already sets gradients to None: nothing would change"
        return True, f"zero_grad(set_to_none=True) ({c['zero_grad_false']} call(s) asked for set_to_none=False)"

    def _top_name(self) -> str:
        top = self.top() if self.top is not None else None
        return type(getattr(top, "_orig_mod", top)).__name__ if top is not None else "?"

    def _check_channels_last(self):
        top = self.top() if self.top is not None else None
        if top is None:
            return None, "no top-level module was found"
        inner = getattr(top, "_orig_mod", top)
        fourd = [p for p in inner.parameters() if p.dim() == 4]
        fmt = self.torch.channels_last
        if not fourd or not all(p.is_contiguous(memory_format=fmt) for p in fourd):
            return False, "the module's 4-D weights are not channels_last (the script converts them back?)"
        return True, f"{self._top_name()} and its 4-D inputs in channels_last ({len(fourd)} weights)"

    def _check_bf16_autocast(self):
        if self.top is None:
            return None, "no top-level module was found"
        if not self.counts["autocast"]:
            return None, (f"{self._top_name()}'s forward never ran through the switch (the script calls "
                          "another entry point): autocast needs a code change")
        return True, (f"{self._top_name()}.forward under torch.autocast({getattr(self, '_module_device', '?')!r}, "
                      "bfloat16)")

    def _check_compile(self):
        if self.top is None:
            return None, "no top-level module was found"
        graphs = self._dynamo_graphs() - self._dynamo_base
        if graphs <= 0:
            return None, f"{self._top_name()} was compiled but no graph ran by the check step"
        mode = self.values.get("compile") or "default"
        return True, (f"torch.compile({self._top_name()}, {mode}): {graphs} compiled frame(s), "
                      f"{self._graph_breaks()} graph break(s)")
