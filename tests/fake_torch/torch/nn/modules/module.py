"""Module.__call__ runs the global forward pre / post hooks (register_module_forward_*_hook), as torch's does."""
from collections import OrderedDict

_global_forward_pre_hooks = OrderedDict()
_global_forward_hooks = OrderedDict()
_next_id = [0]


class RemovableHandle:
    def __init__(self, table):
        self.table = table
        self.id = _next_id[0]
        _next_id[0] += 1

    def remove(self):
        self.table.pop(self.id, None)


def _register(table, hook):
    handle = RemovableHandle(table)
    table[handle.id] = hook
    return handle


def register_module_forward_pre_hook(hook):
    return _register(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook):
    return _register(_global_forward_hooks, hook)


class Module:
    def __init__(self):
        self.training = True

    def forward(self, *args):
        raise NotImplementedError

    def parameters(self):
        return []

    def __call__(self, *args):
        for hook in list(_global_forward_pre_hooks.values()):
            hook(self, args)
        out = self.forward(*args)
        for hook in list(_global_forward_hooks.values()):
            hook(self, args, out)
        return out
