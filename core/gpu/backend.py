"""Where GPU samples come from: NVML (nvidia-ml-py, imported lazily), a fake for tests, or none (with why).

Every backend's sample() returns one row per GPU: (gpu index, values in COLUMNS order); NaN where
the device does not support a value.
"""
from __future__ import annotations

import logging
import math
import time
from typing import Protocol, runtime_checkable

log = logging.getLogger(__name__)

COLUMNS = ("util_pct", "mem_util_pct", "mem_used_mb", "mem_total_mb", "power_w", "temp_c", "sm_clock_mhz",
           "pcie_tx_mb_s", "pcie_rx_mb_s", "proc_mem_mb")
NAN = float("nan")
_MB = 1 << 20


@runtime_checkable
class GpuBackend(Protocol):
    name: str
    available: bool
    reason: str  # why there is no GPU data ("" when available)

    def device_names(self) -> list[str]: ...

    def sample(self, pids: set[int] | None = None, slow: bool = False) -> list[tuple[int, tuple[float, ...]]]:
        """One row per GPU. `slow`: also read the costly values (PCIe throughput, per-process memory)."""
        ...

    def close(self) -> None: ...


class NoGpu:
    """No GPU data, and the reason in words (shown by the live panel and the CLI status)."""

    name = "none"
    available = False

    def __init__(self, reason: str):
        self.reason = reason

    def device_names(self) -> list[str]:
        return []

    def sample(self, pids=None, slow=False):
        return []

    def close(self) -> None:
        pass


class FakeBackend:
    """Deterministic synthetic GPUs for tests and benchmarks (no driver needed)."""

    name = "fake"
    available = True
    reason = ""

    def __init__(self, n_gpus: int = 2, total_mb: float = 81_559.0):
        self.n = n_gpus
        self.total_mb = total_mb
        self.calls = 0
        self.t0 = time.monotonic()

    def device_names(self) -> list[str]:
        return [f"Fake GPU {i}" for i in range(self.n)]

    def device_facts(self) -> list[dict]:
        return [{"index": i, "name": f"Fake GPU {i}", "total_memory_bytes": int(self.total_mb * _MB),
                 "max_sm_clock_mhz": 1980, "max_mem_clock_mhz": 2619} for i in range(self.n)]

    def sample(self, pids=None, slow=False):
        self.calls += 1
        t = time.monotonic() - self.t0
        rows = []
        for i in range(self.n):
            util = 50.0 + 45.0 * math.sin(t * 2.0 + i)
            used = self.total_mb * (0.2 + 0.1 * i) + 100.0 * math.sin(t)
            rows.append((i, (round(util, 1), round(util * 0.6, 1), round(used, 1), self.total_mb,
                             150.0 + util * 3, 40.0 + i, 1980.0, 120.0 if slow else NAN, 80.0 if slow else NAN,
                             round(used * 0.9, 1) if slow and pids else NAN)))
        return rows

    def close(self) -> None:
        pass


class NvmlBackend:
    """Real GPUs through NVML. Construct with open_backend(), which turns failures into NoGpu."""

    name = "nvml"
    available = True
    reason = ""

    def __init__(self, cuda_visible_devices: str | None = None):
        import pynvml  # nvidia-ml-py

        self._nv = pynvml
        pynvml.nvmlInit()
        n = pynvml.nvmlDeviceGetCount()
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(n)]
        uuids = []
        for h in handles:
            try:
                u = pynvml.nvmlDeviceGetUUID(h)
                uuids.append(u.decode() if isinstance(u, bytes) else str(u))
            except pynvml.NVMLError:
                uuids.append("")
        # sample the GPUs the run sees, numbered as the run (and its trace) numbers them
        self.physical = visible_devices(cuda_visible_devices, uuids)
        self._handles = [handles[i] for i in self.physical]
        self._names = []
        for h in self._handles:
            name = pynvml.nvmlDeviceGetName(h)
            self._names.append(name.decode() if isinstance(name, bytes) else str(name))
        self._unsupported: set[tuple[int, str]] = set()

    def device_names(self) -> list[str]:
        return list(self._names)

    def device_facts(self) -> list[dict]:
        """Per GPU of the run: total memory and peak (max) SM / memory clocks, for run.json gpu.facts."""
        nv = self._nv
        out = []
        for i, h in enumerate(self._handles):
            mem = self._get(i, "mem", nv.nvmlDeviceGetMemoryInfo, h)
            out.append({"index": i, "name": self._names[i], "total_memory_bytes": int(mem.total) if mem else None,
                        "max_sm_clock_mhz": self._get(i, "maxclock", nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_SM),
                        "max_mem_clock_mhz": self._get(i, "maxmemclock", nv.nvmlDeviceGetMaxClockInfo, h,
                                                       nv.NVML_CLOCK_MEM)})
        return out

    def _get(self, i: int, what: str, fn, *args):
        if (i, what) in self._unsupported:
            return None
        try:
            return fn(*args)
        except self._nv.NVMLError as exc:
            if isinstance(exc, (self._nv.NVMLError_NotSupported, self._nv.NVMLError_NoPermission)):
                self._unsupported.add((i, what))
            return None

    def sample(self, pids=None, slow=False):
        nv = self._nv
        rows = []
        for i, h in enumerate(self._handles):
            util = self._get(i, "util", nv.nvmlDeviceGetUtilizationRates, h)
            mem = self._get(i, "mem", nv.nvmlDeviceGetMemoryInfo, h)
            power = self._get(i, "power", nv.nvmlDeviceGetPowerUsage, h)
            temp = self._get(i, "temp", nv.nvmlDeviceGetTemperature, h, nv.NVML_TEMPERATURE_GPU)
            clock = self._get(i, "clock", nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_SM)
            tx = rx = proc = None
            if slow:  # PCIe counters are sampled by the driver over 20 ms; read them at a lower rate
                tx = self._get(i, "pcie", nv.nvmlDeviceGetPcieThroughput, h, nv.NVML_PCIE_UTIL_TX_BYTES)
                rx = self._get(i, "pcie", nv.nvmlDeviceGetPcieThroughput, h, nv.NVML_PCIE_UTIL_RX_BYTES)
                if pids:
                    procs = self._get(i, "procs", nv.nvmlDeviceGetComputeRunningProcesses, h) or []
                    used = [p.usedGpuMemory for p in procs if p.pid in pids and p.usedGpuMemory is not None]
                    proc = sum(used) / _MB if used else None
            rows.append((i, (
                _f(util.gpu if util else None), _f(util.memory if util else None),
                _f(mem.used / _MB if mem else None), _f(mem.total / _MB if mem else None),
                _f(power / 1000.0 if power is not None else None), _f(temp), _f(clock),
                _f(tx / 1024.0 if tx is not None else None), _f(rx / 1024.0 if rx is not None else None), _f(proc))))
        return rows

    def close(self) -> None:
        try:
            self._nv.nvmlShutdown()
        except Exception:
            pass


def visible_devices(spec: str | None, uuids: list[str]) -> list[int]:
    """NVML indices of the devices a process with CUDA_VISIBLE_DEVICES=`spec` sees, in its CUDA order
    (its device 0 first). Like CUDA: entries are indices or (prefixes of) GPU UUIDs, parsing stops at
    the first entry that matches nothing, and an unset variable means every GPU. Indices assume
    CUDA_DEVICE_ORDER=PCI_BUS_ID order (NVML's), which matches the default on hosts of one GPU model.
    MIG entries cannot be mapped to a whole GPU here: every GPU is sampled then."""
    everything = list(range(len(uuids)))
    if spec is None:
        return everything
    out: list[int] = []
    for raw in spec.split(","):
        entry = raw.strip()
        if not entry:
            break
        if entry.startswith("MIG-"):
            return everything
        if entry.lstrip("-").isdigit():
            i = int(entry)
            if not 0 <= i < len(uuids) or i in out:
                break
            out.append(i)
            continue
        key = entry if entry.startswith("GPU-") else f"GPU-{entry}"
        hits = [i for i, u in enumerate(uuids) if u and u.startswith(key)]
        if len(hits) != 1 or hits[0] in out:
            break
        out.append(hits[0])
    return out


def _f(v) -> float:
    return NAN if v is None else float(v)


def open_backend(cuda_visible_devices: str | None = None) -> GpuBackend:
    """NvmlBackend when a driver and a GPU are there, else NoGpu saying which of them is missing.
    `cuda_visible_devices`: the run's CUDA_VISIBLE_DEVICES (None = unset: every GPU)."""
    try:
        import pynvml
    except ImportError:
        return NoGpu("no NVML: the nvidia-ml-py package is not installed")
    try:
        backend = NvmlBackend(cuda_visible_devices)
    except pynvml.NVMLError_LibraryNotFound:
        return NoGpu("no NVIDIA driver: the NVML library (libnvidia-ml.so) was not found")
    except pynvml.NVMLError_DriverNotLoaded:
        return NoGpu("no NVIDIA driver loaded")
    except pynvml.NVMLError as exc:
        return NoGpu(f"NVML could not start: {exc}")
    except Exception as exc:  # broken installs: say so, never crash the run
        log.warning("NVML failed: %s", exc)
        return NoGpu(f"NVML failed: {exc}")
    if not backend.device_names():
        backend.close()
        return NoGpu("no GPU: NVML sees no NVIDIA device")
    return backend
