"""The host's index of runs (stdlib only, Python >= 3.9; uploaded with agent.py): one JSON line per run started
on this host, {"id", "ctl", "bundle"}, in ~/.cache/ptprof/runs.idx (PTPROF_REMOTE_INDEX), so that `list`,
`follow`, `stop` and `attach` find a run whatever root (PTPROF_REMOTE_ROOT) or bundle folder it had.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

INDEX_BYTES = 4 << 20  # the index's last 4 MiB are read (tens of thousands of runs)


def indexed(index: Path, run_id_re) -> list:
    """The index's runs whose ctl folder is still there, oldest first (a line that is not ours is skipped)."""
    try:
        with open(index, "rb") as fh:
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - INDEX_BYTES))
            lines = fh.read(INDEX_BYTES).splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if isinstance(e, dict) and isinstance(e.get("id"), str) and run_id_re.match(e["id"]) \
                and isinstance(e.get("ctl"), str) and Path(e["ctl"]).name == e["id"] \
                and Path(e["ctl"]).parent.name == "ctl" and (Path(e["ctl"]) / "agent.json").is_file():
            out.append(e)
    return out


def index_run(index: Path, run_id: str, ctl: Path, bundle: Path) -> None:
    """One line in the host's index of runs (0600, appended): `list` and `attach` find the run from any root."""
    try:
        index.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(index, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "a") as fh:
            fh.write(json.dumps({"id": run_id, "ctl": str(ctl.absolute()), "bundle": str(bundle)}) + "\n")
    except OSError:
        pass  # the run is still listed under its own root
