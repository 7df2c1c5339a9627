"""Thresholds from resources/rules.toml (every number there carries its origin)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from core.compat import tomllib

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "resources" / "rules.toml"


def load_config(path: str | Path | None = None) -> dict[str, Any]:
    p = Path(path) if path else DEFAULT_PATH
    with open(p, "rb") as fh:
        return tomllib.load(fh)
