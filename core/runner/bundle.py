"""Run bundle layout (ARCHITECTURE.md): run.json, traces/, events.jsonl, nvml.csv, compile.json, logs."""
from __future__ import annotations

import json
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

RUN_JSON = "run.json"
TRACES = "traces"
EVENTS = "events.jsonl"
NVML_CSV = "nvml.csv"
COMPILE_JSON = "compile.json"
COMPILE_LOG = "compile.log"
STDOUT_LOG = "stdout.log"
STDERR_LOG = "stderr.log"
_OWN_FILES = (RUN_JSON, EVENTS, NVML_CSV, COMPILE_JSON, COMPILE_LOG, STDOUT_LOG, STDERR_LOG)


@dataclass(frozen=True, slots=True)
class Bundle:
    root: Path

    @property
    def traces(self) -> Path:
        return self.root / TRACES

    @property
    def run_json(self) -> Path:
        return self.root / RUN_JSON

    @property
    def events(self) -> Path:
        return self.root / EVENTS

    @property
    def nvml_csv(self) -> Path:
        return self.root / NVML_CSV

    @property
    def compile_json(self) -> Path:
        return self.root / COMPILE_JSON

    @property
    def stdout_log(self) -> Path:
        return self.root / STDOUT_LOG

    @property
    def stderr_log(self) -> Path:
        return self.root / STDERR_LOG

    def trace_files(self) -> list[Path]:
        return sorted(self.traces.glob("*.pt.trace.json*")) if self.traces.is_dir() else []


def default_dir(script: str, root: str | Path = "ptprof-runs") -> Path:
    """<root>/<script stem>-<UTC time>, unique."""
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", Path(script).stem) or "run"
    base = Path(root) / f"{stem}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path


def prepare(root: str | Path) -> Bundle:
    """Create the folder (or empty an old bundle in it) and traces/."""
    b = Bundle(Path(root).expanduser().resolve())
    b.root.mkdir(parents=True, exist_ok=True)
    for name in _OWN_FILES:
        (b.root / name).unlink(missing_ok=True)
    if b.traces.is_dir():
        shutil.rmtree(b.traces)
    b.traces.mkdir()
    return b


def write_json(path: Path, data: dict) -> None:
    """Atomic write (temp file + rename) so a reader never sees half a run.json."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str))
    os.replace(tmp, path)


def read_json(path: Path) -> dict | None:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def iso_utc(t_ns: int | None = None) -> str:
    t = (t_ns if t_ns is not None else time.time_ns()) / 1e9
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1000):03d}Z"
