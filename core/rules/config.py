"""Thresholds of the rules from resources/rules.toml (every number there carries its origin), checked.

The shipped rules.toml is the schema and the only place a default is written: a config given to the rules
(`load_config(path)`, `analyze(config=...)`) is laid over it, and a table or key it does not know, or a value
of another type, fails at load with one line naming it (a typo never silently falls back to the default).
Rules read `ctx.cfg("rule")["key"]`.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from core import resource_files
from core.compat import tomllib

RULES_TOML = "rules.toml"


class ConfigError(ValueError):
    """A rules config with a key (or table, or value type) resources/rules.toml does not have."""


def defaults() -> dict[str, Any]:
    """The shipped thresholds (resources/rules.toml), a fresh copy."""
    return resource_files.load_toml(RULES_TOML)


def _same_type(value, default) -> bool:
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(value, bool) and isinstance(default, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float))
    return isinstance(value, type(default))


def check(config: dict[str, Any], where: str = "rules config") -> None:
    """ConfigError for a table or key the shipped rules.toml lacks, or a value of another type."""
    shipped = resource_files.load_toml(RULES_TOML)
    for table, values in config.items():
        if table not in shipped:
            raise ConfigError(f"{where}: unknown table [{table}] (known: {', '.join(sorted(shipped))})")
        if not isinstance(values, dict):
            raise ConfigError(f"{where}: [{table}] must be a table of keys")
        known = shipped[table]
        for key, value in values.items():
            if key not in known:
                raise ConfigError(f"{where}: unknown key {key!r} in [{table}] "
                                  f"(known: {', '.join(sorted(known)) or 'none'})")
            if not _same_type(value, known[key]):
                raise ConfigError(f"{where}: [{table}] {key} = {value!r} is not a {type(known[key]).__name__}")


def with_defaults(config: dict[str, Any] | None) -> dict[str, Any]:
    """`config` checked and laid over the shipped thresholds (tables merged key by key)."""
    merged = defaults()
    if not config:
        return merged
    check(config)
    for table, values in config.items():
        merged[table] = {**merged[table], **copy.deepcopy(values)}
    return merged


def load_config(path: str | Path | None = None) -> dict[str, Any]:
    """The shipped thresholds, or the TOML file at `path` checked and laid over them."""
    if path is None:
        return defaults()
    with open(path, "rb") as fh:
        user = tomllib.load(fh)
    check(user, str(path))
    return with_defaults(user)
