"""The hosts a user can pick: the `Host` entries of ~/.ssh/config and the files it `Include`s (Qt-free).

Patterns (`*`, `?`, `!negated`) are not hosts and are left out; `Include` follows ssh_config(5): relative
paths are under ~/.ssh, globs expand, at most 16 levels deep; unreadable files are skipped.
"""
from __future__ import annotations

import glob
import os
import shlex
from pathlib import Path

MAX_DEPTH = 16
MAX_BYTES = 1 << 20


def config_hosts(path: str | Path | None = None) -> list[str]:
    """Host aliases in the order they appear (duplicates once)."""
    root = Path(path).expanduser() if path else Path.home() / ".ssh" / "config"
    out: list[str] = []
    _read(root, out, 0, set())
    return list(dict.fromkeys(out))


def _read(path: Path, out: list[str], depth: int, seen: set) -> None:
    if depth > MAX_DEPTH or path in seen:
        return
    seen.add(path)
    try:
        if not path.is_file():
            return
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read(MAX_BYTES)
    except OSError:
        return
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, _, rest = line.replace("=", " ", 1).partition(" ") if "=" in line.split()[0] else line.partition(" ")
        key = key.strip().lower()
        try:
            words = shlex.split(rest, comments=True)
        except ValueError:
            words = rest.split()
        if key == "host":
            out.extend(w for w in words if not any(c in w for c in "*?!"))
        elif key == "include":
            for word in words:
                pattern = os.path.expanduser(word)
                if not os.path.isabs(pattern):
                    pattern = str(Path.home() / ".ssh" / pattern)
                for hit in sorted(glob.glob(pattern))[:256]:
                    _read(Path(hit), out, depth + 1, seen)
