"""The one loader of the shipped resources (resources/*.toml): `importlib.resources`, so it reads them from
a checkout, an installed wheel or a zip alike (issue 35, item 3). Thresholds, tables and colours live there,
each with the origin of its number; code never repeats a default.
"""
from __future__ import annotations

import copy
import functools
from importlib import resources

from core.compat import tomllib

PACKAGE = "resources"


def path(name: str):
    """The resource `name` (a Traversable: `.read_bytes()`, `.open()`, `.name`)."""
    return resources.files(PACKAGE).joinpath(name)


def names(suffix: str = ".toml") -> list[str]:
    """The shipped resource files ending in `suffix`, sorted."""
    return sorted(p.name for p in resources.files(PACKAGE).iterdir() if p.name.endswith(suffix))


@functools.cache
def _parsed(name: str) -> dict:
    return tomllib.loads(path(name).read_text(encoding="utf-8"))


def load_toml(name: str) -> dict:
    """resources/<name> parsed (a fresh copy: callers may change it). OSError when it is missing."""
    return copy.deepcopy(_parsed(name))
