"""The Run dock's height: tall enough for the live plots when it first opens, folded to its status line
while the run's trace is shown (gui/subscriptions.py `connect_run` calls these)."""
from __future__ import annotations

from functools import partial

from PySide6 import QtCore, QtWidgets


def run_dock_px(win) -> int:
    """Run dock height the first time it opens: ~40 % of the window, room for the live plots' four rows."""
    return max(360, win.height() * 40 // 100)


def show_run_dock(win, dock: QtWidgets.QDockWidget) -> None:
    """Show the Run dock; the first time at run_dock_px (its size hint left the live plots ~30 px tall),
    later at whatever height the user gave it."""
    first = not dock.property("ptprof_sized")
    dock.show()
    dock.raise_()
    if first:
        dock.setProperty("ptprof_sized", True)
        win.resizeDocks([dock], [run_dock_px(win)], QtCore.Qt.Orientation.Vertical)


def fit_run_dock(win, panel, dock, folded: bool) -> None:
    """Folded: the dock shrinks to its status line; unfolded: back to the height it had."""
    if not dock.isVisible():
        return
    if folded:
        dock.setProperty("ptprof_unfolded_px", dock.height())
        px = panel.minimumSizeHint().height() + 28
        QtCore.QTimer.singleShot(0, partial(win.resizeDocks, [dock], [px], QtCore.Qt.Orientation.Vertical))
    else:
        px = dock.property("ptprof_unfolded_px") or run_dock_px(win)
        win.resizeDocks([dock], [int(px)], QtCore.Qt.Orientation.Vertical)
