"""A small FAKE `torch` for the runner's compatibility job (tests/core/runner/test_compat_pythons.py, .ci/run):
just the hooks core/runner/child.py uses - global optimizer step hooks, global module forward hooks,
Tensor.backward / torch.autograd.backward, torch.profiler's schedule / profile / record_function,
torch.cuda (no GPU), backends flags, torch._logging, torch.compiler - so the child's protocol, step
detection, signals and window logic run on any Python without a torch download. Not a tensor library.

FAKE_TORCH_VERSION sets __version__ (default 2.1.0+fake). FAKE_TORCH_LEGACY=1 takes away what torch 2.1 /
2.2 lack (torch.compiler.is_compiling, _ExperimentalConfig(enable_cuda_sync_events=),
profile.preset_metadata_json); FAKE_TORCH_NO_OPT_HOOKS=1 takes away the global optimizer hooks (torch 1.x).
FAKE_TORCH_IMPORT_S sleeps that long in `import torch` (a slow import, for stop-during-import tests).
"""
import os as _os
import time as _time

__version__ = _os.environ.get("FAKE_TORCH_VERSION", "2.1.0+fake")
LEGACY = _os.environ.get("FAKE_TORCH_LEGACY") == "1"
if float(_os.environ.get("FAKE_TORCH_IMPORT_S", "0") or 0) > 0:
    _time.sleep(float(_os.environ["FAKE_TORCH_IMPORT_S"]))

from torch import version  # noqa: E402, F401, I001 - this order: the submodules import each other
from torch._tensor import Tensor, tensor, randn  # noqa: E402,F401
from torch import _C, autograd, backends, cuda, nn, optim, profiler, amp, _logging  # noqa: E402,F401
# torch._dynamo is not imported by `import torch` (as in torch 2.2: it loads with torch.compile)

if not LEGACY:
    from torch import compiler  # noqa: F401

autocast = amp.autocast
_matmul_precision = "highest"


def get_float32_matmul_precision():
    return _matmul_precision


def set_float32_matmul_precision(value):
    global _matmul_precision
    _matmul_precision = value


def are_deterministic_algorithms_enabled():
    return False


def manual_seed(seed):
    return None
