"""Colours and sizes of the report figures, from resources/report.toml (Qt-free: hex strings, ints)."""
from __future__ import annotations

from functools import lru_cache

from core import resource_files


@lru_cache(maxsize=1)
def config() -> dict:
    return resource_files.load_toml("report.toml")


def timeline_config() -> dict:
    return config()["timeline"]


def colour(key: str) -> str:
    """Hex colour of a key: a Kind name ("KERNEL"), "KERNEL:<shade>", or a series / page name."""
    cfg = config()
    base = key.split(":", 1)[0]
    for section in ("kind", "series", "page"):
        if base in cfg[section]:
            return cfg[section][base]
    return cfg["kind"]["OTHER"]


def shade(key: str) -> int:
    """0, 1 or 2: variants of one kind colour so neighbouring slices stay distinguishable."""
    _, _, s = key.partition(":")
    return int(s) if s.isdigit() else 0
