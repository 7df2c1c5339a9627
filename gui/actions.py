"""Menu actions, recent files (QSettings) and file dialogs of the main window."""
from __future__ import annotations

import os
from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets

MAX_RECENT = 10
TRACE_FILTER = ("PyTorch profiler traces and CUDA memory snapshots (*.json *.json.gz *.gz *.xz *.pickle *.pkl);;"
                "PyTorch profiler traces (*.json *.json.gz *.gz *.xz);;"
                "CUDA memory snapshots (*.pickle *.pkl *.pickle.gz);;All files (*)")
SAMPLE = Path(__file__).resolve().parents[1] / "resources" / "sample.pt.trace.json.gz"


def settings() -> QtCore.QSettings:
    """App settings; $PTPROF_SETTINGS_DIR puts them in an ini file there (tests, portable installs)."""
    where = os.environ.get("PTPROF_SETTINGS_DIR")
    if where:
        return QtCore.QSettings(str(Path(where) / "ptprof-gui.ini"), QtCore.QSettings.Format.IniFormat)
    return QtCore.QSettings("ptprof", "ptprof-gui")


def recent_files() -> list[str]:
    value = settings().value("recent", [])
    if isinstance(value, str):
        value = [value]
    return [str(v) for v in (value or []) if v]


def add_recent(path: str | Path) -> list[str]:
    p = str(Path(path).resolve())
    items = [p] + [x for x in recent_files() if x != p]
    items = items[:MAX_RECENT]
    s = settings()
    s.setValue("recent", items)
    s.sync()
    return items


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
