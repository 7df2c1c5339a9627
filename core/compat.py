"""What differs between the Pythons the app runs on (CPython 3.10-3.13; pyproject's requires-python).

- `tomllib` is stdlib from 3.11; 3.10 reads TOML with `tomli` (same API; a dependency only there).
- `Weakrefable`: a base class whose one slot is `__weakref__`, for slots dataclasses that are keys of a
  WeakKeyDictionary (`@dataclass(slots=True, weakref_slot=True)` needs 3.11).

core/runner/child.py and what it loads run in the USER's interpreter (3.9 and up) and never import this:
their version probes are core/runner/compat.py.
"""
from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised by the 3.10 compatibility job (.ci/run)
    import tomli as tomllib

__all__ = ["tomllib", "Weakrefable"]


class Weakrefable:
    """Slots dataclasses that subclass this can be weakly referenced on every supported Python."""

    __slots__ = ("__weakref__",)
