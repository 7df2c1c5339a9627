"""What a step is, decided at run time (never from the script's text). Runs INSIDE the user's interpreter:
stdlib + torch only; core/runner/child.py loads it by path.

Sources, strongest first; a stronger one replaces a weaker one the moment it is first seen:
- "optimizer": the first optimizer that calls step() (global pre/post step hooks). A closure optimizer
  (LBFGS, Lightning's `optimizer.step(closure)`) runs the closure's backward passes inside step(): they are
  not steps. Other optimizers (a GAN's second one) are not counted.
- "backward": loops that update parameters by hand (`p.data.add_(p.grad, alpha=-lr)`): one step per
  backward pass of the main loss = `Tensor.backward` / `torch.autograd.backward` called from the same code
  line as the first one (a second loss's backward elsewhere in the loop is not a step boundary). The
  source starts at the second such backward with no optimizer step in between, so step 1 is the first
  whole iteration; a gradient-accumulation loop runs on backward steps until its first optimizer step.
  `torch.autograd.grad` (gradient penalties) never counts.
- "forward": inference: a top-level module runs a second time before any backward or optimizer step
  (global module forward hooks; a bounded window of forwards, see child.py).
The forward hooks go away at the first backward or optimizer step; when torch.compile has already
compiled a graph with them in place they stay, doing nothing, until the script ends (removing them
would fail dynamo's guards and recompile every compiled region once).
"""
from __future__ import annotations

import sys

OPTIMIZER, BACKWARD, FORWARD = "optimizer", "backward", "forward"
RANK = {None: 0, FORWARD: 1, BACKWARD: 2, OPTIMIZER: 3}


class StepSources:
    """Calls `switch(new_source)` when the source changes and `step(source, module=None)` at each step
    boundary of the current source. `guard(fn)` wraps every hook (held signals, step-aside on errors)."""

    def __init__(self, torch, switch, step, forward_pre, guard, compat=None):
        self.torch = torch
        self.source: str | None = None
        self._switch, self._step, self._guard = switch, step, guard
        self._opt_id: int | None = None
        self._in_opt = False
        self._bwd_depth = 0
        self._bwd_site: tuple[str, int] | None = None
        self._handles: list = []
        self._fwd_handles: list = []
        self._fwd_on = False
        self._depth = 0
        self._patched: list[tuple[object, str, object]] = []
        # torch.compiler.is_compiling (2.3+), torch._dynamo.is_compiling before (core/runner/compat.py)
        compiling = compat.is_compiling(torch) if compat is not None else \
            getattr(getattr(torch, "compiler", None), "is_compiling", None)
        self._compiling = compiling or (lambda: False)
        self._backward_guarded = guard(self._backward_step)
        self._forward_guarded = guard(forward_pre)

    # -- install / remove ------------------------------------------------------------------------
    def install(self) -> bool:
        """False when torch has no global optimizer hooks (torch < 2.0)."""
        try:
            from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
            from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
        except ImportError:
            return False
        self._handles += [register_optimizer_step_pre_hook(self._guard(self._on_opt_pre)),
                          register_optimizer_step_post_hook(self._guard(self._on_opt_post))]
        self._fwd_handles = [register_module_forward_pre_hook(self._on_forward_pre),
                             register_module_forward_hook(self._on_forward_post)]
        self._fwd_on = True
        self._patch_backward()
        return True

    def remove(self) -> None:
        for h in self._handles + self._fwd_handles:
            h.remove()
        self._handles, self._fwd_handles = [], []
        for owner, name, original in reversed(self._patched):
            setattr(owner, name, original)
        self._patched = []

    def _patch_backward(self) -> None:
        torch, sources = self.torch, self

        def wrap(original, owner, name):
            def backward(*args, **kwargs):
                if sources.source == OPTIMIZER or sources._in_opt or sources._bwd_depth or sources._compiling():
                    return original(*args, **kwargs)
                sources._bwd_depth += 1
                try:
                    result = original(*args, **kwargs)
                finally:
                    sources._bwd_depth -= 1
                caller = sys._getframe(1)
                sources._after_backward((caller.f_code.co_filename, caller.f_lineno))
                return result
            backward.__name__, backward.__qualname__ = original.__name__, getattr(original, "__qualname__", name)
            backward.__doc__ = original.__doc__
            backward.__wrapped__ = original
            self._patched.append((owner, name, original))
            setattr(owner, name, backward)

        wrap(torch.Tensor.backward, torch.Tensor, "backward")
        wrap(torch.autograd.backward, torch.autograd, "backward")

    # -- sources ---------------------------------------------------------------------------------
    def _become(self, source: str) -> None:
        old, self.source = self.source, source
        if source != FORWARD:
            self._forward_off()
        self._switch(old, source)

    def _forward_off(self) -> None:
        if not self._fwd_on:
            return
        self._fwd_on = False
        if not self._compiled_anything():
            for h in self._fwd_handles:
                h.remove()
            self._fwd_handles = []

    def _compiled_anything(self) -> bool:
        dynamo_utils = sys.modules.get("torch._dynamo.utils")
        counters = getattr(dynamo_utils, "counters", None)
        try:
            return bool(counters and counters["stats"].get("unique_graphs", 0))
        except Exception:
            return True  # unknown: keeping idle hooks is the safe side

    def _on_opt_pre(self, optimizer, args, kwargs) -> None:
        self._in_opt = True
        if self._opt_id is None:
            self._opt_id = id(optimizer)
            self._become(OPTIMIZER)

    def _on_opt_post(self, optimizer, args, kwargs) -> None:
        self._in_opt = False
        if id(optimizer) == self._opt_id:  # a second optimizer (GAN, multi-optimizer): the first one's steps only
            self._step(OPTIMIZER)

    def _after_backward(self, site: tuple[str, int]) -> None:
        if self._bwd_site is None:
            # the first backward is a training signal, not yet a step source: in most loops an optimizer
            # step follows it in the same iteration
            self._bwd_site = site
            self._forward_off()
            return
        if site != self._bwd_site:
            return  # another loss's backward in the same iteration
        self._backward_guarded()

    def _backward_step(self) -> None:
        if self.source != BACKWARD:
            self._become(BACKWARD)
        self._step(BACKWARD)

    def _on_forward_pre(self, module, args) -> None:
        if self._compiling() or not self._fwd_on:
            return
        self._depth += 1
        if self._depth == 1 and RANK[self.source] <= RANK[FORWARD]:
            self._forward_guarded(module)

    def _on_forward_post(self, module, args, output) -> None:
        if self._compiling() or not self._fwd_on:
            return
        self._depth = max(0, self._depth - 1)

    def become_forward(self) -> None:
        """The runner decided the top-level forwards are steps (inference)."""
        if self.source is None:
            self._become(FORWARD)
