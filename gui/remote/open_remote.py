"""File > Open Remote…: browse an SSH host's folders, pick a trace, a TensorBoard folder or a run bundle, bring
it back (compressed over the SSH connection, core/remote/fetch.py: progress, cancel, nothing written
outside its cache folder) into ~/.cache/ptprof/remote/<host>/ and open it through the normal open path.

    install_open_remote(win)     # adds the action before "Run Script…"
"""
from __future__ import annotations

import hashlib
import posixpath
import threading
from pathlib import Path

import shiboken6
from PySide6 import QtCore, QtGui, QtWidgets
from superqt.utils import create_worker

from core.remote.fetch import FetchCancelled, FetchError, fetch
from core.remote.runner import Helper, RemoteError
from core.remote.ssh import SshError
from gui.remote.host_row import HostRow, make_host, remember_host

CACHE = Path.home() / ".cache" / "ptprof" / "remote"


def local_folder(host: str, remote_path: str) -> Path:
    """Where a remote file / folder is kept here: one folder per (host, path)."""
    tag = hashlib.sha256(f"{host}\0{remote_path}".encode()).hexdigest()[:10]
    name = "".join(c if c.isalnum() or c in "._-" else "_" for c in posixpath.basename(remote_path.rstrip("/")))
    return CACHE / "".join(c if c.isalnum() or c in "._-@" else "_" for c in host) / f"{name or 'root'}-{tag}"


class OpenRemote(QtCore.QObject):
    """The flow, one step per worker: host -> connect -> browse -> fetch (progress, cancel) -> open."""
    sig_connected = QtCore.Signal(object)  # Helper or an error line
    sig_fetched = QtCore.Signal(object)  # (local path to open) or an error line
    sig_progress = QtCore.Signal(int, int)

    def __init__(self, win):
        super().__init__(win)
        self.win = win
        self._worker = None
        self._cancel = threading.Event()
        self.progress: QtWidgets.QProgressDialog | None = None
        self.sig_connected.connect(self._on_connected)
        self.sig_fetched.connect(self._on_fetched)
        self.sig_progress.connect(self._on_progress)

    def start(self) -> None:
        dlg = QtWidgets.QDialog(self.win)
        dlg.setWindowTitle("Open Remote")
        row = HostRow(dlg)
        row.connect_button.hide()
        row.combo.removeItem(0)  # "This computer" is File > Open
        buttons = QtWidgets.QDialogButtonBox(QtWidgets.QDialogButtonBox.StandardButton.Ok |
                                             QtWidgets.QDialogButtonBox.StandardButton.Cancel, dlg)
        buttons.button(QtWidgets.QDialogButtonBox.StandardButton.Ok).setText("Connect and browse")
        buttons.accepted.connect(dlg.accept)
        buttons.rejected.connect(dlg.reject)
        lay = QtWidgets.QFormLayout(dlg)
        lay.addRow("Host", row)
        lay.addRow(buttons)
        if not dlg.exec() or not row.host_text():
            return
        self.connect(row.host_text())

    def connect(self, text: str) -> None:
        try:
            host = make_host(text)
        except SshError as exc:
            self._fail(str(exc))
            return
        self.win.statusBar().showMessage(f"connecting to {host.label} …")

        def work():
            try:
                return Helper(host.connect()).ensure()
            except (SshError, RemoteError) as exc:
                return str(exc)
        self._worker = create_worker(work, _start_thread=False, _ignore_errors=True)
        self._worker.returned.connect(self.sig_connected.emit)
        self._worker.start()

    def _on_connected(self, helper) -> None:
        self._worker = None
        if isinstance(helper, str):
            self._fail(helper)
            return
        remember_host(helper.host.label)
        self.win.statusBar().clearMessage()
        from gui.remote.browser import RemoteBrowser
        browser = RemoteBrowser(self.win, helper, start="~", want="any")
        browser.setWindowTitle(f"{helper.host.label}: open a trace, a TensorBoard folder or a run bundle")
        if browser.exec() and browser.selected:
            self.fetch(helper, browser.selected)

    def fetch(self, helper, remote_path: str) -> None:
        dest = local_folder(helper.host.label, remote_path)
        self._cancel.clear()
        self.progress = QtWidgets.QProgressDialog(f"Fetching {remote_path} from {helper.host.label} …", "Cancel",
                                                  0, 1000, self.win)
        self.progress.setWindowModality(QtCore.Qt.WindowModality.WindowModal)
        self.progress.canceled.connect(self._cancel.set)
        self.progress.setMinimumDuration(0)
        self.progress.show()

        def work():
            try:
                got = fetch(helper, remote_path, dest, progress=self.sig_progress.emit, cancel=self._cancel.is_set)
            except FetchCancelled:
                return ""
            except (FetchError, SshError, RemoteError) as exc:
                return f"error:{exc}"
            entries = list(got.dest.iterdir())
            single = got.files == 1 and len(entries) == 1 and entries[0].is_file()
            return str(entries[0] if single else got.dest)
        self._worker = create_worker(work, _start_thread=False, _ignore_errors=True)
        self._worker.returned.connect(self.sig_fetched.emit)
        self._worker.start()

    def _on_progress(self, done: int, total: int) -> None:
        if self.progress is not None and shiboken6.isValid(self.progress) and total:
            self.progress.setValue(int(1000 * done / total))
            self.progress.setLabelText(f"Fetching … {done / 1e6:.1f} of {total / 1e6:.1f} MB")

    def _on_fetched(self, result: str) -> None:
        self._worker = None
        if self.progress is not None and shiboken6.isValid(self.progress):
            self.progress.close()
        self.progress = None
        if not result:
            self.win.statusBar().showMessage("fetch cancelled", 5000)
        elif result.startswith("error:"):
            self._fail(result[6:])
        else:
            self.win.open_path(result)

    def _fail(self, message: str) -> None:
        self.win.statusBar().clearMessage()
        QtWidgets.QMessageBox.warning(self.win, "Open Remote", message)


def install_open_remote(win) -> OpenRemote:
    flow = OpenRemote(win)
    action = QtGui.QAction("Open Re&mote…", win)
    action.setStatusTip("Open a trace, TensorBoard folder or run bundle on an SSH host (fetched here)")
    action.triggered.connect(lambda _checked=False: flow.start())
    win.add_menu_action("File", action, before=win.action_run_script)
    win.action_open_remote = action
    return flow
