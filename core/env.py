"""Numeric settings from environment variables: a bad value is one warning and the default, never a traceback."""
from __future__ import annotations

import logging
import os

log = logging.getLogger(__name__)


def env_int(name: str, default: int, lo: int = 1, hi: int = 1 << 20) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        value = None
    if value is None or not lo <= value <= hi:
        log.warning("%s=%r is not a whole number in [%d, %d]; using %d", name, raw, lo, hi, default)
        return default
    return value
