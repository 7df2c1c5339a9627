"""Run bundle layout (ARCHITECTURE.md): run.json, traces/, events.jsonl, nvml.csv, compile.json, logs."""
from __future__ import annotations

import json
import re
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from core.atomic import atomic_write

RUN_JSON = "run.json"
TRACES = "traces"
EVENTS = "events.jsonl"
NVML_CSV = "nvml.csv"
COMPILE_JSON = "compile.json"
COMPILE_LOG = "compile.log"
STDOUT_LOG = "stdout.log"
STDERR_LOG = "stderr.log"
SWITCHES_JSON = "switches.json"  # what --apply did (core/runner/switches.py)
TRIED_JSON = "tried.json"  # savings measured by `ptprof try` on this (before) run (core/tryfix/store.py)
FORMAT = "ptprof-run/1"  # run.json "format": how a folder is known to be one of our bundles
_OWN_FILES = (RUN_JSON, EVENTS, NVML_CSV, COMPILE_JSON, COMPILE_LOG, STDOUT_LOG, STDERR_LOG, SWITCHES_JSON, TRIED_JSON)
# what the child writes into traces/ (child.py _on_trace_ready): the only names a re-record removes there
# (the temp files: unique mkstemp names since issue 37, older fixed names too)
_OWN_TRACE = re.compile(r"rank\d+\.cycle\d+\.pt\.trace\.json\.gz(\.part)?"
                        r"|\.rank\d+\.cycle\d+\.pt\.trace\.json\.gz(\.\w+)?\.(json\.tmp|part)")


class BundleError(ValueError):
    """The output folder cannot be used; str(exc) is one line meant for the user."""


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
        """The saved traces: regular files, not the runner's temp files (hidden, .part, .tmp) nor links."""
        if not self.traces.is_dir():
            return []
        return sorted(p for p in self.traces.glob("*.pt.trace.json*")
                      if not p.name.startswith(".") and not p.name.endswith((".part", ".tmp"))
                      and stat.S_ISREG(p.lstat().st_mode))


def default_dir(script: str, root: str | Path = "ptprof-runs") -> Path:
    """<root>/<script stem>-<UTC time>, unique."""
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", Path(script).stem) or "run"
    base = Path(root) / f"{stem}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path


def is_bundle(root: str | Path) -> bool:
    """A folder we recorded: its run.json is a regular file holding our format tag."""
    run_json = Path(root) / RUN_JSON
    if run_json.is_symlink() or not run_json.is_file():
        return False
    data = read_json(run_json)
    return data is not None and data.get("format") == FORMAT


def out_dir_problem(root: str | Path) -> str | None:
    """Why `root` cannot receive a bundle (one line), or None: missing, empty, or one of our bundles."""
    path = Path(root).expanduser()
    if path.is_symlink() and not path.is_dir():
        return f"output path is a symlink that does not lead to a folder: {path}"
    if path.exists() and not path.is_dir():
        return f"output path exists and is not a folder: {path}"
    if not path.is_dir():
        return None
    try:
        empty = next(path.iterdir(), None) is None
    except OSError as exc:
        return f"cannot read the output folder {path}: {exc.strerror or exc}"
    if empty or is_bundle(path):
        return None
    return (f"output folder is not empty and not a ptprof run bundle: {path} "
            "(pick a new or empty folder, or leave out --out for ./ptprof-runs/<script>-<time>)")


def prepare(root: str | Path) -> Bundle:
    """Create the folder and traces/; in an old bundle remove only what ptprof wrote there (its own
    file names; in traces/ only its cycle files): anything else, and anything behind a symlink, stays.
    BundleError (one line) for a folder that is not empty and not ours, or that cannot be made."""
    b = Bundle(Path(root).expanduser().resolve())
    problem = out_dir_problem(b.root)
    if problem:
        raise BundleError(problem)
    try:
        b.root.mkdir(parents=True, exist_ok=True)
        if b.traces.is_symlink() or (b.traces.exists() and not b.traces.is_dir()):
            raise BundleError(f"{b.traces} is a symlink or a file, not the bundle's own traces folder: "
                              "ptprof does not write through it")
        for name in _OWN_FILES:  # unlink never follows a symlink: a link is removed, never its target
            path = b.root / name
            if path.is_symlink() or path.is_file():
                path.unlink()
        if b.traces.is_dir():
            for entry in b.traces.iterdir():
                if _OWN_TRACE.fullmatch(entry.name) and stat.S_ISREG(entry.lstat().st_mode):
                    entry.unlink()
        b.traces.mkdir(exist_ok=True)
    except OSError as exc:
        raise BundleError(f"cannot create the bundle folder {b.root}: {exc.strerror or exc}") from None
    return b


def write_json(path: Path, data: dict) -> None:
    """Atomic write (core.atomic: a fresh temp file in the same folder + rename) so a reader never sees
    half a run.json. The name is the bundle's own: a symlink planted there (by the run's script) is
    removed first - unlink never follows it - and never written through."""
    path = Path(path)
    if path.is_symlink():
        path.unlink()
    atomic_write(path, json.dumps(data, indent=1, default=str).encode("utf-8"))


def read_json(path: Path) -> dict | None:
    """A JSON object from a regular file, or None: a FIFO, a huge file or a 100,000-deep array in a
    folder given to --out is "not one of our bundles", never a blocked read or a RecursionError."""
    from core.trace.safefile import read_json_file
    try:
        data = read_json_file(path)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def iso_utc(t_ns: int | None = None) -> str:
    t = (t_ns if t_ns is not None else time.time_ns()) / 1e9
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1000):03d}Z"
