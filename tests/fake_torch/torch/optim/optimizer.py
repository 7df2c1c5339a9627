"""Optimizer.step runs the global step pre / post hooks (torch 2.0+; FAKE_TORCH_NO_OPT_HOOKS=1: torch 1.x)."""
import os
from collections import OrderedDict

from torch.nn.modules.module import _register

_global_optimizer_pre_hooks = OrderedDict()
_global_optimizer_post_hooks = OrderedDict()


class Optimizer:
    def __init__(self, params, lr=0.01):
        self.params, self.lr = list(params), lr

    def zero_grad(self, set_to_none=True):
        for p in self.params:
            p.grad = None

    def _update(self):
        for p in self.params:
            if p.grad is not None:
                p.value -= self.lr * p.grad

    def step(self, closure=None):
        for hook in list(_global_optimizer_pre_hooks.values()):
            hook(self, (), {})
        loss = closure() if closure is not None else None
        self._update()
        for hook in list(_global_optimizer_post_hooks.values()):
            hook(self, (), {})
        return loss


class SGD(Optimizer):
    pass


if os.environ.get("FAKE_TORCH_NO_OPT_HOOKS") != "1":
    def register_optimizer_step_pre_hook(hook):
        return _register(_global_optimizer_pre_hooks, hook)

    def register_optimizer_step_post_hook(hook):
        return _register(_global_optimizer_post_hooks, hook)
