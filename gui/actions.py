"""Menu actions, recent files (QSettings) and file dialogs of the main window."""
from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets

from core.trace.safefile import read_json_file

MAX_RECENT = 10
TRACE_FILTER = ("PyTorch profiler traces and CUDA memory snapshots (*.json *.json.gz *.gz *.xz *.pickle *.pkl);;"
                "PyTorch profiler traces (*.json *.json.gz *.gz *.xz);;"
                "CUDA memory snapshots (*.pickle *.pkl *.pickle.gz);;All files (*)")
from gui.settings import settings, string_list  # noqa: E402, F401 - settings: used by tests and older callers

log = logging.getLogger(__name__)
SAMPLE = Path(__file__).resolve().parents[1] / "resources" / "sample.pt.trace.json.gz"


# The recent list lives in its own small JSON file beside the settings, written off the UI thread
# with plain Python I/O (temp file, fsync, rename: the GIL is released while it waits). Through
# QSettings.sync() the fsync waited 120-160 ms after a 10 GB load (GBs of cache pages in writeback)
# while holding the GIL: the longest UI gap of the open, from any thread. The newest list is held
# here until written, so a reader never sees an older one; `flush_recent` waits for it (quit).
_lock = threading.Lock()
_pending: tuple[Path, list[str]] | None = None  # (file, list)
_writer: threading.Thread | None = None
MAX_RECENT_BYTES = 1 << 20


def _recent_file() -> Path:
    return Path(settings().fileName()).with_name("ptprof-gui.recent.json")


def recent_files() -> list[str]:
    target = _recent_file()
    with _lock:
        if _pending is not None and _pending[0] == target:
            return list(_pending[1])
    try:
        value = read_json_file(target, MAX_RECENT_BYTES)
    except FileNotFoundError:
        value = string_list("recent")  # written by an older version
    except (OSError, ValueError):
        value = []  # unreadable or not JSON: start a new list
    if isinstance(value, str):
        value = [value]
    return [str(v) for v in (value if isinstance(value, list) else []) if v][:MAX_RECENT]


def add_recent(path: str | Path) -> list[str]:
    global _pending, _writer
    p = str(Path(path).resolve())
    items = [p] + [x for x in recent_files() if x != p]
    items = items[:MAX_RECENT]
    with _lock:
        _pending = (_recent_file(), items)
        if _writer is None:
            _writer = threading.Thread(target=_write_recent, name="ptprof-settings", daemon=True)
            _writer.start()
    return items


def _write_recent() -> None:
    global _pending, _writer
    while True:
        with _lock:
            pending = _pending
        target, items = pending
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(items, fh)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except OSError:
            log.warning("could not save the recent files to %s", target, exc_info=True)
        with _lock:
            if _pending is pending:  # nothing newer came meanwhile
                _pending = None
                _writer = None
                return


def flush_recent(timeout_s: float = 5.0) -> None:
    """Wait (bounded) for the recent list's write: at quit, so the last opened file is kept."""
    with _lock:
        writer = _writer
    if writer is not None:
        writer.join(timeout_s)


def make_action(parent: QtCore.QObject, text: str, slot=None, shortcut=None, tip: str = "",
                enabled: bool = True) -> QtGui.QAction:
    act = QtGui.QAction(text, parent)
    if shortcut is not None:
        act.setShortcut(QtGui.QKeySequence(shortcut))
    if tip:
        act.setStatusTip(tip)
        act.setToolTip(tip)
    if slot is not None:
        act.triggered.connect(slot)
    act.setEnabled(enabled)
    return act


def ask_trace_file(parent: QtWidgets.QWidget) -> str | None:
    path, _ = QtWidgets.QFileDialog.getOpenFileName(parent, "Open trace", "", TRACE_FILTER)
    return path or None


def ask_trace_folder(parent: QtWidgets.QWidget) -> str | None:
    path = QtWidgets.QFileDialog.getExistingDirectory(
        parent, "Open folder (TensorBoard log dir, multi-rank dir or run bundle)")
    return path or None


SHORTCUTS_HTML = """<table cellspacing=4>
<tr><td><b>Wheel</b> / <b>Ctrl+Wheel</b></td><td>zoom time at the cursor</td></tr>
<tr><td><b>Shift+Wheel</b></td><td>scroll rows</td></tr>
<tr><td><b>Drag</b></td><td>pan</td></tr>
<tr><td><b>W</b> / <b>S</b></td><td>zoom in / out</td></tr>
<tr><td><b>A</b> / <b>D</b></td><td>pan left / right</td></tr>
<tr><td><b>F</b></td><td>fit the selected slice (nothing selected: the whole trace)</td></tr>
<tr><td><b>Double-click</b></td><td>step band: zoom to the step; slice: zoom to it</td></tr>
<tr><td><b>Click a track label</b></td><td>collapse / expand its rows</td></tr>
<tr><td><b>Ctrl+F</b>, <b>Enter</b>, <b>Shift+Enter</b></td><td>search, next, previous</td></tr>
<tr><td><b>Ctrl+C</b> in a table</td><td>copy the selected rows</td></tr>
</table>"""
