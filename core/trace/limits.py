"""The trace loader's limits (resources/limits.toml) and the memory a load may use."""
from __future__ import annotations

import functools
import os
import resource

from core import resource_files
from core.env import env_bytes


@functools.cache
def limits() -> dict:
    return resource_files.load_toml("limits.toml")


def _mem_available_bytes() -> int | None:
    try:
        with open("/proc/meminfo", "rb") as fh:
            for line in fh:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _address_space_left_bytes() -> int | None:
    """Room under RLIMIT_AS (a sandboxed or `ulimit -v` process), None when unlimited."""
    try:
        soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    except (ValueError, OSError):
        return None
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        with open("/proc/self/statm", "rb") as fh:
            used = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        used = 0
    return max(0, soft - used)


def _inflate_env() -> int | None:
    """PTPROF_MAX_INFLATE_BYTES when it is a byte count; an invalid one ("abc", "inf", "-1") is one warning
    and changes nothing (it used to switch the compression-ratio check off: a 4.7 MB bomb inflated to 1.15 GB)."""
    return env_bytes("PTPROF_MAX_INFLATE_BYTES", "the memory-derived bound, with the compression-ratio check")


def ratio_check_on() -> bool:
    """The compression-ratio check applies unless the user set a valid inflate bound explicitly."""
    return _inflate_env() is None


def max_inflate_bytes() -> int:
    """How many bytes a compressed trace may inflate to: PTPROF_MAX_INFLATE_BYTES when set, else a
    fraction of the memory available now (and of the address-space limit), at most max_bytes."""
    cfg = limits()["inflate"]
    env = _inflate_env()
    if env is not None:
        return env
    bound = int(cfg["max_bytes"])
    for room in (_mem_available_bytes(), _address_space_left_bytes()):
        if room is not None:
            bound = min(bound, int(room * float(cfg["fraction_of_available"])))
    return max(64 << 20, bound)
