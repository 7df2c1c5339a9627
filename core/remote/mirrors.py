"""The local side of remote runs that is not the follower itself (Qt-free): the local folders that mirror a
remote run (found again for File > Reattach), what of a remote RunConfig can be checked here, and the
host's clock as seen from this desktop.
"""
from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from core.remote.runner import Helper, RemoteError
from core.runner import bundle as bl
from core.runner.config import ConfigError, RunConfig, check_values

log = logging.getLogger(__name__)


def _mirror_of(root: Path) -> str:
    """The remote run id a local folder mirrors (its placeholder run.json), or ""."""
    data = bl.read_json(Path(root) / bl.RUN_JSON) if (Path(root) / bl.RUN_JSON).is_file() else None
    remote = data.get("remote") if isinstance(data, dict) and data.get("format") == bl.FORMAT else None
    return str(remote.get("id") or "") if isinstance(remote, dict) else ""


def mirrors_index() -> Path:
    """This desktop's list of the local folders that mirror a remote run (one absolute path a line)."""
    return Path(os.environ.get("PTPROF_MIRRORS_INDEX") or "~/.cache/ptprof/remote-mirrors.idx").expanduser()


def note_mirror(folder: Path) -> None:
    """Remember a mirror folder wherever the user put it (the Run dialog's Output, --out): Reattach finds it."""
    index = mirrors_index()
    try:
        index.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(index, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "a") as fh:
            fh.write(str(Path(folder).absolute()) + "\n")
    except OSError as exc:
        log.info("cannot note %s in %s: %s", folder, index, exc)


def unfinished_mirrors(root: str | Path) -> list[tuple[Path, dict]]:
    """Local folders of remote runs nobody finished following (the app was closed, the desktop died), in
    `root` and wherever the mirrors index says one was made: (folder, its run.json "remote": host,
    ssh_config, id, python), newest first."""
    try:
        folders = sorted(Path(root).expanduser().iterdir(), key=lambda p: p.name, reverse=True)[:500]
    except OSError:
        folders = []
    try:
        with open(mirrors_index(), "rb") as fh:
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - (1 << 20)))
            noted = [Path(ln.decode("utf-8", "replace")) for ln in fh.read().splitlines()[-2000:] if ln.strip()]
    except OSError:
        noted = []
    out, seen = [], set()
    for folder in [*folders, *reversed(noted)]:
        key = os.path.abspath(folder)
        if key in seen:
            continue
        seen.add(key)
        data = bl.read_json(folder / bl.RUN_JSON) if (folder / bl.RUN_JSON).is_file() else None
        if isinstance(data, dict) and data.get("status") == "running" and isinstance(data.get("remote"), dict) \
                and data["remote"].get("id") and data["remote"].get("host") and "exit_code" not in data:
            out.append((folder, data["remote"]))
    return out


def measure_clock(helper: Helper) -> int:
    """desktop - host clock in ns; 0 (the clocks assumed equal, said in the log) when the host cannot tell."""
    try:
        return helper.clock_offset()[0]
    except (RemoteError, OSError) as exc:
        log.warning("%s; live times assume its clock agrees with this desktop's", exc)
        return 0


def _iso_ns(text) -> int:
    """agent.py's iso_utc ("2026-12-07T21:40:00.123Z") -> ns since the epoch; 0 when it is not that."""
    import calendar
    try:
        whole, _, ms = str(text).rstrip("Z").partition(".")
        return (calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S")) * 1000 + int(ms or 0)) * 1_000_000
    except (ValueError, OverflowError):
        return 0


def validate_remote(cfg: RunConfig) -> RunConfig:
    """What can be checked here (values, not paths: those are the host's, checked there)."""
    if not cfg.module and not cfg.script:
        raise ConfigError("no script given")
    if not cfg.python:
        raise ConfigError("no interpreter given (--python)")
    check_values(cfg)
    if cfg.out_dir:
        problem = bl.out_dir_problem(cfg.out_dir)
        if problem:
            raise ConfigError(problem)
    cwd = cfg.cwd or (os.path.dirname(cfg.script) if cfg.script.startswith(("/", "~/")) else "") or "~"
    return cfg.with_(cwd=cwd)
