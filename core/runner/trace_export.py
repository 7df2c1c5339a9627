"""One profiler cycle written to the bundle as traces/<name> (gzip'd Chrome trace). Runs INSIDE the user's
interpreter (loaded by path from child.py): stdlib only, Python 3.9.

Temp files are created exclusively under unique names in the traces folder (mkstemp: O_EXCL, never a link
planted in an old bundle), then renamed over the final name, so a reader never sees half a trace.
"""
from __future__ import annotations

import gzip
import os
import shutil
import tempfile
from pathlib import Path


def export_cycle(prof, traces: Path, name: str) -> Path:
    """prof.export_chrome_trace -> traces/name (gzip level 3). Raises what the export or the disk raises;
    nothing but the final file is left behind."""
    final = traces / name
    tmp_json = part = None
    try:
        fd, tmp_json = tempfile.mkstemp(dir=str(traces), prefix=f".{name}.", suffix=".json.tmp")
        os.close(fd)
        prof.export_chrome_trace(tmp_json)
        fd, part = tempfile.mkstemp(dir=str(traces), prefix=f".{name}.", suffix=".part")
        os.chmod(part, 0o644)
        with open(tmp_json, "rb") as src, os.fdopen(fd, "wb") as raw, \
                gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=3) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        os.replace(part, final)
        part = None
    finally:
        for leftover in filter(None, (tmp_json, part)):
            Path(leftover).unlink(missing_ok=True)
    return final
