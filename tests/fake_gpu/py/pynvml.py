"""A fake nvidia-ml-py: two GPUs with moving utilisation, enough of NVML's API for core/gpu/backend.py."""
import time
from collections import namedtuple

NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 0, 2, 0
NVML_PCIE_UTIL_TX_BYTES, NVML_PCIE_UTIL_RX_BYTES = 0, 1
_Util = namedtuple("_Util", "gpu memory")
_Mem = namedtuple("_Mem", "total free used")
_N = 2


class NVMLError(Exception):
    pass


class NVMLError_NotSupported(NVMLError):
    pass


class NVMLError_NoPermission(NVMLError):
    pass


class NVMLError_LibraryNotFound(NVMLError):
    pass


class NVMLError_DriverNotLoaded(NVMLError):
    pass


def nvmlInit():
    pass


def nvmlShutdown():
    pass


def nvmlDeviceGetCount():
    return _N


def nvmlDeviceGetHandleByIndex(i):
    return i


def nvmlDeviceGetUUID(h):
    return f"GPU-fake-{h}"


def nvmlDeviceGetName(h):
    return f"Fake NVML H100 {h}"


def nvmlDeviceGetMemoryInfo(h):
    return _Mem(80 << 30, (80 << 30) - ((10 + h) << 30), (10 + h) << 30)


def nvmlDeviceGetMaxClockInfo(h, kind):
    return 1980 if kind == NVML_CLOCK_SM else 2619


def nvmlDeviceGetUtilizationRates(h):
    return _Util(40 + 10 * h + int(time.monotonic() * 10) % 5, 20)


def nvmlDeviceGetPowerUsage(h):
    return 300_000 + 1000 * h


def nvmlDeviceGetTemperature(h, kind):
    return 50 + h


def nvmlDeviceGetClockInfo(h, kind):
    return 1755


def nvmlDeviceGetPcieThroughput(h, kind):
    raise NVMLError_NotSupported()


def nvmlDeviceGetComputeRunningProcesses(h):
    return []
