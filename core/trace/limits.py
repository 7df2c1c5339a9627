"""The trace loader's limits (resources/limits.toml) and the memory a load may use."""
from __future__ import annotations

import functools
import os
import resource
from pathlib import Path

from core.compat import tomllib

LIMITS_TOML = Path(__file__).resolve().parents[2] / "resources" / "limits.toml"


@functools.cache
def limits() -> dict:
    with open(LIMITS_TOML, "rb") as fh:
        return tomllib.load(fh)


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


def ratio_check_on() -> bool:
    """The compression-ratio check applies unless the user set the inflate bound explicitly."""
    return not os.environ.get("PTPROF_MAX_INFLATE_BYTES", "").strip()


def max_inflate_bytes() -> int:
    """How many bytes a compressed trace may inflate to: PTPROF_MAX_INFLATE_BYTES when set, else a
    fraction of the memory available now (and of the address-space limit), at most max_bytes."""
    cfg = limits()["inflate"]
    env = os.environ.get("PTPROF_MAX_INFLATE_BYTES", "").strip()
    if env:
        try:
            return max(1, int(float(env)))
        except (ValueError, OverflowError):
            pass  # a bad value is ignored: the memory-derived bound applies
    bound = int(cfg["max_bytes"])
    for room in (_mem_available_bytes(), _address_space_left_bytes()):
        if room is not None:
            bound = min(bound, int(room * float(cfg["fraction_of_available"])))
    return max(64 << 20, bound)
