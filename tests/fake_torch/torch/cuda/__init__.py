"""No GPU: the child's CUDA-only paths (window-end sync, sync debug, device properties) stay off."""
from torch.cuda import memory  # noqa: F401


class OutOfMemoryError(RuntimeError):
    pass


def is_available():
    return False


def is_initialized():
    return False


def device_count():
    return 0


def synchronize(device=None):
    return None


def set_sync_debug_mode(mode):
    return None


def get_device_properties(i):
    raise RuntimeError("no CUDA device")
