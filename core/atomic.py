"""Writing a file without ever following a link or leaving half a file: a fresh temp file in the
same folder (created exclusively, so never an existing file or a planted symlink), then os.replace.
A symlink already at the destination is replaced by the new file; its target is never touched."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write(path: str | Path, data: bytes) -> Path:
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; reports and bundles are meant to be shared
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write(path, text.encode("utf-8", "backslashreplace"))  # a non-UTF-8 file name: \udcff
