"""The app's version (`ptprof --version`, Help > About) and where its documentation is.

The installed distribution's metadata wins; a checkout run from PYTHONPATH (no install) reads
pyproject.toml beside the package.
"""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def version() -> str:
    try:
        from importlib.metadata import PackageNotFoundError, version as dist_version
        try:
            return dist_version("ptprof-gui")
        except PackageNotFoundError:
            pass
    except ImportError:  # pragma: no cover
        pass
    try:
        from core.compat import tomllib
        return str(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"])
    except (OSError, KeyError, ValueError):
        return "unknown"


def docs_path() -> Path | None:
    """The README (user guide) of this install, when it is on disk (a checkout or an editable install)."""
    readme = ROOT / "README.md"
    return readme if readme.is_file() else None


def docs_url() -> str:
    path = docs_path()
    return path.as_uri() if path else "https://pypi.org/project/ptprof-gui/"
