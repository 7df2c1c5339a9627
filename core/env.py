"""Numeric settings from environment variables: a bad value is one warning (once per value) and the default,
never a traceback and never a silent change of behaviour (an invalid PTPROF_MAX_INFLATE_BYTES switched the
compression-ratio check off)."""
from __future__ import annotations

import logging
import math
import os

log = logging.getLogger(__name__)
_warned: set[tuple[str, str]] = set()


def _warn_once(name: str, raw: str, what: str, default) -> None:
    if (name, raw) not in _warned:
        _warned.add((name, raw))
        log.warning("%s=%r is not %s; using %s", name, raw, what, default)


def env_int(name: str, default: int, lo: int = 1, hi: int = 1 << 20) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        value = None
    if value is None or not lo <= value <= hi:
        _warn_once(name, raw, f"a whole number in [{lo}, {hi}]", default)
        return default
    return value


def env_bytes(name: str, default_text: str = "the default") -> int | None:
    """A byte count (1e10 and 10000000000 both work, >= 1); None when unset - or invalid, with one warning
    naming what applies instead."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return None
    try:
        value = float(raw.strip())
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 1:
        _warn_once(name, raw, "a byte count", default_text)
        return None
    return int(value)
