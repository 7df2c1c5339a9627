"""The app's one settings accessor (QSettings) and typed reads.

`$PTPROF_SETTINGS_DIR` puts every setting in an ini file there (tests, portable installs); otherwise Qt's
native place (~/.config/ptprof/ptprof-gui.conf). Every QSettings of the app is made here: a second
`QtCore.QSettings(...)` elsewhere would ignore the variable (the Run dialog's did, so the test suite wrote
pytest paths into the user's real config; tests/gui/test_settings.py holds the rule).

QSettings returns a plain str for a one-item list read back from an ini/conf file and None or other types
for hand-edited values: read lists with `string_list`, never iterate `.value()` directly (iterating a str gave
the Run dialog an interpreter list of single characters).
"""
from __future__ import annotations

import os
from pathlib import Path

from PySide6 import QtCore

ORG, APP = "ptprof", "ptprof-gui"


def settings() -> QtCore.QSettings:
    where = os.environ.get("PTPROF_SETTINGS_DIR")
    if where:
        return QtCore.QSettings(str(Path(where) / f"{APP}.ini"), QtCore.QSettings.Format.IniFormat)
    return QtCore.QSettings(ORG, APP)


def string_list(key: str, store: QtCore.QSettings | None = None) -> list[str]:
    """The list of non-empty strings stored at `key`: [] when absent, one item for a plain string."""
    value = (store or settings()).value(key, [])
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)):
        return []
    return [v for v in value if isinstance(v, str) and v]


def string(key: str, default: str = "", store: QtCore.QSettings | None = None) -> str:
    value = (store or settings()).value(key, default)
    return value if isinstance(value, str) else default
