"""The runtime switches that act on the top-level module (bf16_autocast, channels_last, compile): a mixin of
switches.Switches. Runs INSIDE the user's interpreter (stdlib + torch only, Python 3.9); loaded by path.

The top-level module is the root nn.Module (no other module holds it) sharing most parameters with the first
optimizer (found when it is constructed, before any forward), or with the most parameters at the first step
when no optimizer is ever made. Its forward is wrapped on the instance (autocast region, 4-D inputs to
channels_last); compile uses nn.Module.compile (in place: the script's own reference runs compiled).
"""
from __future__ import annotations

import gc
import weakref

COMPILE_BACKENDS = ("eager", "aot_eager", "inductor")


class ModuleSwitches:
    # -- module switches: bf16_autocast, channels_last, compile ----------------------------------------
    def _module_switches(self) -> list:
        return [n for n in ("channels_last", "bf16_autocast", "compile") if n in self.values]

    def find_top_module(self, optimizer=None):
        """The root nn.Module (no other module holds it) sharing most parameters with `optimizer`, or with the
        most parameters when no optimizer is given; None when there is none."""
        nn = self.torch.nn
        module_cls = nn.Module
        modules = [o for o in gc.get_objects() if issubclass(type(o), module_cls)]  # type(): no __class__ lookups
        children = set()
        for m in modules:
            for c in m.children():
                children.add(id(c))
        roots = [m for m in modules if id(m) not in children]
        wanted = None
        if optimizer is not None:
            wanted = {id(p) for g in optimizer.param_groups for p in g["params"]}

        def score(m):
            ids = [id(p) for p in m.parameters()]
            return (sum(1 for i in ids if i in wanted) if wanted is not None else len(ids), len(ids))
        best = max(roots, key=score, default=None)
        if best is None or score(best)[0] == 0:
            return None
        return best

    def _apply_module(self, optimizer) -> None:
        names = self._module_switches()
        if not names:
            self._module_done = True
            return
        top = self.find_top_module(optimizer)
        if top is None:
            if optimizer is not None:
                return  # an optimizer of parameters no module holds: try again at the first step
            self._module_done = True
            for n in names:
                self._set(n, "refused", "no nn.Module with parameters was found (a custom loop over raw tensors)")
            return
        self._module_done = True
        self.top = weakref.ref(top)
        inner = getattr(top, "_orig_mod", top)  # the script compiled it itself: the module inside
        if "compile" in names and (inner is not top or getattr(top, "_compiled_call_impl", None) is not None):
            self._set("compile", "refused", f"the script compiles {type(inner).__name__} itself")
            names.remove("compile")
        if "channels_last" in names:
            fourd = [p for p in inner.parameters() if p.dim() == 4]
            if not fourd:
                self._set("channels_last", "refused", f"{type(inner).__name__} has no 4-D (convolution) weights")
                names.remove("channels_last")
            else:
                inner.to(memory_format=self.torch.channels_last)
        if "channels_last" in names or "bf16_autocast" in names:
            self._wrap_forward(inner, "channels_last" in names, "bf16_autocast" in names)
        if "compile" in names:
            value = self.values.get("compile") or "default"
            kwargs = {"backend": value} if value in COMPILE_BACKENDS else {"mode": None if value == "default" else value}
            if hasattr(top, "compile"):
                top.compile(**kwargs)
            else:
                top.forward = self.torch.compile(top.forward, **kwargs)

    def _wrap_forward(self, module, channels_last: bool, autocast: bool) -> None:
        t = self.torch
        forward = module.forward
        params = [p for p in module.parameters()]
        device = params[0].device.type if params else ("cuda" if t.cuda.is_available() else "cpu")
        fmt = t.channels_last
        counts = self.counts

        def convert(a):
            if isinstance(a, t.Tensor) and a.dim() == 4 and a.is_floating_point() \
                    and not a.is_contiguous(memory_format=fmt):
                return a.contiguous(memory_format=fmt)
            return a

        def to_fp32(out, depth=0):
            if isinstance(out, t.Tensor):
                return out.float() if out.dtype == t.bfloat16 else out
            if depth < 2 and isinstance(out, tuple) and not hasattr(out, "_fields"):
                return tuple(to_fp32(o, depth + 1) for o in out)
            if depth < 2 and isinstance(out, list):
                return [to_fp32(o, depth + 1) for o in out]
            if depth < 2 and isinstance(out, dict):
                for k in list(out.keys()):
                    out[k] = to_fp32(out[k], depth + 1)
            return out

        def wrapped(*args, **kwargs):
            if channels_last:
                args = tuple(convert(a) for a in args)
                kwargs = {k: convert(v) for k, v in kwargs.items()}
            if not autocast:
                return forward(*args, **kwargs)
            counts["autocast"] += 1
            with t.autocast(device_type=device, dtype=t.bfloat16):
                out = forward(*args, **kwargs)
            return to_fp32(out)
        module.forward = wrapped
        self._module_device = device
