"""A trace's (or run.json's) deviceProperties entries, checked: no import of the rest of core/trace, so the
model (TraceMeta.from_json), the table builders and the bundle reader all use it without a circle."""
from __future__ import annotations

# deviceProperties keys that readers do arithmetic on or format as numbers (Kineto's, and run.json's facts)
_NUMERIC_DEVICE_KEYS = ("id", "totalGlobalMem", "computeMajor", "computeMinor", "numSms", "maxThreadsPerBlock",
                        "maxThreadsPerMultiprocessor", "regsPerBlock", "regsPerMultiprocessor", "warpSize",
                        "sharedMemPerBlock", "sharedMemPerMultiprocessor", "sharedMemPerBlockOptin",
                        "maxSmClockMHz", "maxMemClockMHz")


def _device_props(p: dict) -> dict:
    """A deviceProperties entry from a file (a trace's, or run.json's): a name that is not a string
    becomes one; a numeric key that is not a finite number >= 0 ("143771 MB", "lots", NaN, true, a
    list) is left out - it was a ValueError traceback in `report` (summary.metadata's fmt_bytes)."""
    out = dict(p)
    if "name" in out and not isinstance(out["name"], str):
        out["name"] = str(out["name"])[:256]
    for key in _NUMERIC_DEVICE_KEYS:
        v = out.get(key)
        if key in out and not (isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < 2**62):
            del out[key]  # also drops NaN (every comparison is False) and +-inf
    return out


def device_props(props) -> tuple[dict, ...]:
    """Every entry of a deviceProperties list checked (see _device_props); anything not a dict dropped."""
    return tuple(_device_props(p) for p in props if isinstance(p, dict)) if isinstance(props, (list, tuple)) else ()
