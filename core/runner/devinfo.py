"""The GPUs the run sees, as the child records them in its start event (-> run.json
environment.device_properties). Runs INSIDE the user's interpreter (stdlib + torch passed in); loaded by path.

Keys are Kineto's deviceProperties keys, so core (core/trace/bundle_devices.py) can use them for traces that
lack deviceProperties; peak clocks come from NVML in the launcher (run.json gpu.facts) when torch's
properties have none.
"""
from __future__ import annotations

_OPTIONAL = (("maxThreadsPerMultiProcessor", "max_threads_per_multi_processor"), ("warpSize", "warp_size"),
             ("L2CacheSize", "L2_cache_size"), ("regsPerMultiprocessor", "regs_per_multiprocessor"),
             ("sharedMemPerBlock", "shared_memory_per_block"),
             ("sharedMemPerMultiprocessor", "shared_memory_per_multiprocessor"),
             ("clockRateKHz", "clock_rate"), ("memoryClockRateKHz", "memory_clock_rate"),
             ("memoryBusWidth", "memory_bus_width"))


def device_properties(torch) -> list[dict]:
    cuda = torch.cuda
    out: list[dict] = []
    if not cuda.is_available():
        return out
    for i in range(cuda.device_count()):
        try:
            p = cuda.get_device_properties(i)
        except Exception:  # a device the process cannot open: the rest still count
            continue
        d = {"id": i, "name": p.name, "totalGlobalMem": int(p.total_memory), "computeMajor": p.major,
             "computeMinor": p.minor, "numSms": p.multi_processor_count}
        for key, attr in _OPTIONAL:
            value = getattr(p, attr, None)
            if isinstance(value, int) and not isinstance(value, bool):
                d[key] = value
        out.append(d)
    return out
