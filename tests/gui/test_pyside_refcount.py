"""Regression test for the PySide6 refcount trap: PySide6 6.12.0 on CPython 3.11 drops a reference to
None on most Qt calls returning None, and the process dies with `none_dealloc`. Keep PySide6 < 6.12
until a release passes this test."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from importlib.metadata import PackageNotFoundError, version

_CHILD = textwrap.dedent("""
    import os, sys
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    from PySide6 import QtCore, QtGui, QtWidgets
    app = QtWidgets.QApplication([])
    w = QtWidgets.QWidget()
    label = QtWidgets.QLabel(w)
    timer = QtCore.QTimer()
    before = sys.getrefcount(None)
    for i in range(20000):          # each call returns None
        w.setWindowTitle("x")
        label.setText(str(i & 7))
        w.resize(100 + (i & 3), 80)
        timer.setInterval(10)
        w.update()
    after = sys.getrefcount(None)
    print(before, after)
    sys.exit(0 if after >= before - 100 else 3)
""")


def _pyside_version() -> tuple[int, ...]:
    for dist in ("PySide6-Essentials", "PySide6"):
        try:
            return tuple(int(x) for x in version(dist).split(".")[:2])
        except (PackageNotFoundError, ValueError):
            continue
    import PySide6
    return tuple(int(x) for x in PySide6.__version__.split(".")[:2])


def test_installed_pyside_is_below_6_12():
    assert _pyside_version() < (6, 12), "PySide6 6.12 aborts with none_dealloc on CPython 3.11"


def test_none_refcount_survives_many_qt_calls():
    proc = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"rc={proc.returncode} stdout={proc.stdout!r} stderr={proc.stderr[-500:]!r}"
    before, after = (int(x) for x in proc.stdout.split())
    assert after >= before - 100
