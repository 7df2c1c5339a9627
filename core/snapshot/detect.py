"""Is a path a CUDA memory snapshot? Cheap (no numpy, no pickle machinery): `ptprof info` and the
window's open path ask it of every file they are given."""
from __future__ import annotations

from pathlib import Path

SNAPSHOT_SUFFIXES = (".pickle", ".pkl", ".pickle.gz", ".pkl.gz")
_PICKLE_PROTO = b"\x80"


def is_snapshot_path(path: str | Path) -> bool:
    """By name (.pickle/.pkl[.gz]) or, for a plain file, by the pickle protocol byte."""
    p = Path(path)
    if p.name.lower().endswith(SNAPSHOT_SUFFIXES):
        return True
    try:
        if p.is_file():
            with open(p, "rb") as fh:
                return fh.read(1) == _PICKLE_PROTO
    except OSError:
        return False
    return False
