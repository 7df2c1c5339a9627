"""Which folders a report (or a CSV export) may write into: never over a file ptprof did not write.

A report writes fixed names (report.html, <table>.csv, <figure>.png). In a folder that already holds
one of those names from somewhere else (the user's own metrics.csv, a run bundle's raw nvml.csv) that
file would be replaced. So a folder is accepted when none of our names is there yet, or when it holds
the marker `.ptprof-report` (written before the first file of every export: a second report into the
same folder replaces only what the first wrote), or when its report.html is one of ours (reports made
before the marker existed). A run bundle is never a report folder: its nvml.csv is the raw NVML record,
and a report's tables inside it would be read back as bundle files. A symlink, FIFO, device or folder at
one of our names (or the marker's) refuses the folder too: core.atomic neither writes through such an
entry nor replaces it. `ptprof diff --csv DIR` uses the same guard with its own names (DIFF_NAMES).
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from core.atomic import atomic_write
from core.export.figures import FIGURE_NAMES

MARKER = ".ptprof-report"
MARKER_TEXT = b"ptprof report folder: report.html, *.csv and *.png here were written by ptprof\n"
TABLE_NAMES = ("kernels", "ops", "steps", "metrics", "findings", "nvml")
OUR_NAMES = ("report.html", *(f"{t}.csv" for t in TABLE_NAMES), *(f"{f}.png" for f in FIGURE_NAMES))
DIFF_NAMES = ("kernels_diff.csv", "ops_diff.csv", "steps_diff.csv")  # core/commands/diff.py write_csvs
_HTML_SIGNATURE = b"<p class=muted>ptprof report \xc2\xb7 generated "  # core/export/report.py's header line
_BUNDLE_FILES = ("run.json", "events.jsonl")


def _lstat_mode(path: Path) -> int | None:
    try:
        return os.lstat(path).st_mode
    except (OSError, ValueError):
        return None


def _regular(path: Path) -> bool:
    mode = _lstat_mode(path)
    return mode is not None and stat.S_ISREG(mode)


def is_run_bundle(folder: Path) -> bool:
    """The loader's test (core.trace.io.discover): run.json, or traces/ with events.jsonl."""
    return _regular(folder / "run.json") or (_regular(folder / "events.jsonl") and os.path.isdir(folder / "traces"))


def _our_html(path: Path) -> bool:
    if not _regular(path):
        return False
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    try:
        return _HTML_SIGNATURE in os.read(fd, 64 << 10)
    except OSError:
        return False
    finally:
        os.close(fd)


def is_ours(folder: Path) -> bool:
    return _regular(folder / MARKER) or _our_html(folder / "report.html")


def foreign_files(folder: str | Path, names: tuple[str, ...] = OUR_NAMES) -> list[str]:
    """Names an export would replace that ptprof did not write (empty for a missing or ours folder)."""
    folder = Path(folder).expanduser()
    if _lstat_mode(folder) is None or is_ours(folder):
        return []
    out = []
    for name in names:
        mode = _lstat_mode(folder / name)
        if mode is not None and not stat.S_ISLNK(mode):
            out.append(name)
    return out


def unsafe_entries(folder: str | Path, names: tuple[str, ...] = OUR_NAMES) -> list[str]:
    """"name (a symlink)" for each of our names (and the marker) that is there but not a regular file."""
    from core.atomic import kind_of
    folder = Path(folder).expanduser()
    out = []
    for name in (*names, MARKER):
        mode = _lstat_mode(folder / name)
        if mode is not None and not stat.S_ISREG(mode):
            out.append(f"{name} ({kind_of(mode)})")
    return out


class ExportRefused(OSError):
    """The folder holds what ptprof did not write; str(exc) is the one line for the user."""


def problem(folder: str | Path, names: tuple[str, ...] = OUR_NAMES) -> str | None:
    """Why an export must not write into `folder` (one line), or None."""
    folder = Path(folder).expanduser()
    if os.path.isdir(folder) and is_run_bundle(folder):
        return (f"{folder} is a run bundle (its nvml.csv and logs are the run's record): write the report into "
                f"a folder of its own, e.g. {folder / 'report'}")
    odd = unsafe_entries(folder, names) if os.path.isdir(folder) else []
    if odd:
        shown = ", ".join(odd[:3]) + (f" and {len(odd) - 3} more" if len(odd) > 3 else "")
        return (f"{folder} holds {shown}: ptprof neither writes through nor replaces such an entry; remove it "
                "or pick a new folder (nothing was written)")
    clash = foreign_files(folder, names)
    if clash:
        shown = ", ".join(clash[:4]) + (f" and {len(clash) - 4} more" if len(clash) > 4 else "")
        return (f"{folder} already holds {shown}, not written by ptprof: pick a new or empty folder "
                "(nothing was written)")
    return None


def subfolder(folder: str | Path, stem: str = "ptprof-report") -> Path:
    """A new folder name inside `folder` (for "write into a subfolder instead?")."""
    base = Path(folder).expanduser() / stem
    path, n = base, 1
    while os.path.lexists(path):
        n += 1
        path = base.with_name(f"{stem}-{n}")
    return path


def claim(folder: str | Path, names: tuple[str, ...] = OUR_NAMES) -> None:
    """Refuse (ExportRefused) or claim the folder before the first file is written: the marker goes in
    atomically (core.atomic: never through a link, never over one)."""
    why = problem(folder, names)
    if why:
        raise ExportRefused(why)
    path = Path(folder) / MARKER
    if not _regular(path):
        atomic_write(path, MARKER_TEXT)
