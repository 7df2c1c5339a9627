"""File > Reattach Remote Run…: the remote runs this app started and stopped following (closed, crashed)
are found by their local folders (a placeholder run.json naming host and run; in ~/ptprof-runs or wherever
core/remote/mirrors.py's index noted one) and followed again from where each folder stops; the app says at
start when there are any."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6 import QtGui, QtWidgets

from core.remote.session import unfinished_mirrors
from core.remote.ssh import SshError, SshHost

RUNS = Path.home() / "ptprof-runs"


def install_reattach(win, attach: Callable[[SshHost, str, str], bool], show_dock: Callable[[], None]) -> QtGui.QAction:
    """File > Reattach Remote Run…: `attach(host, run_id, folder) -> bool` follows the chosen run again (the
    Run dock's RunPanel.attach), `show_dock()` shows the dock first."""
    action = QtGui.QAction("Reattach Remote &Run…", win)
    action.setStatusTip("Follow again a remote run that goes on on its host (the app was closed meanwhile)")
    action.triggered.connect(lambda _checked=False: ask_reattach(win, attach, show_dock))
    win.add_menu_action("File", action, before=win.action_export)
    found = unfinished_mirrors(RUNS)
    if found:
        win.statusBar().showMessage(f"{len(found)} remote run(s) went on without this app: "
                                    "File > Reattach Remote Run… follows one and brings its bundle back", 20000)
    return action


def ask_reattach(win, attach: Callable[[SshHost, str, str], bool], show_dock: Callable[[], None]) -> bool:
    found = unfinished_mirrors(RUNS)
    if not found:
        QtWidgets.QMessageBox.information(win, "Reattach", f"No remote run left unfollowed (in {RUNS} or any other "
                                          "folder a remote run was followed into).")
        return False
    labels = [f"{r['host']} · {r['id']} · {folder}" for folder, r in found]
    label, ok = QtWidgets.QInputDialog.getItem(win, "Reattach remote run", "Run:", labels, 0, False)
    if not ok:
        return False
    folder, remote = found[labels.index(label)]
    from gui.remote.askpass import askpass_program
    try:
        host = SshHost(remote["host"], config_file=remote.get("ssh_config") or None, askpass=askpass_program())
    except SshError as exc:
        QtWidgets.QMessageBox.warning(win, "Reattach", str(exc))
        return False
    show_dock()
    return attach(host, str(remote["id"]), str(folder))
