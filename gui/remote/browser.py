"""RemoteBrowser: pick a folder or file on an SSH host (the helper's `ls` over the master, in a worker thread).

    dlg = RemoteBrowser(parent, helper, start="~/project", want="file")   # or "dir" / "any"
    if dlg.exec(): dlg.selected  # a path on the host
"""
from __future__ import annotations

import posixpath

import shiboken6
from PySide6 import QtCore, QtWidgets
from superqt.utils import create_worker

from core.remote.runner import RemoteError
from core.remote.ssh import SshError


class RemoteBrowser(QtWidgets.QDialog):
    sig_listing_done = QtCore.Signal(object)  # the helper's ls answer (dict) or an error line (str)

    def __init__(self, parent, helper, start: str = "~", want: str = "file"):
        super().__init__(parent)
        self.helper, self.want = helper, want
        self.setWindowTitle(f"{helper.host.label}: pick a {'folder' if want == 'dir' else 'file or folder'}")
        self.resize(640, 480)
        self.path = QtWidgets.QLineEdit(start or "~", self)
        self.path.returnPressed.connect(lambda: self.list_folder(self.path.text()))
        up = QtWidgets.QPushButton("Up", self)
        up.clicked.connect(lambda: self.list_folder(posixpath.dirname(self.path.text().rstrip("/")) or "/"))
        self.entries = QtWidgets.QListWidget(self)
        self.entries.itemDoubleClicked.connect(self._on_entries_double_clicked)
        self.status = QtWidgets.QLabel("", self)
        buttons = QtWidgets.QDialogButtonBox(QtWidgets.QDialogButtonBox.StandardButton.Open |
                                             QtWidgets.QDialogButtonBox.StandardButton.Cancel, self)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        top = QtWidgets.QHBoxLayout()
        top.addWidget(self.path, 1)
        top.addWidget(up)
        lay = QtWidgets.QVBoxLayout(self)
        lay.addLayout(top)
        lay.addWidget(self.entries, 1)
        lay.addWidget(self.status)
        lay.addWidget(buttons)
        self.selected = ""
        self._worker = None
        self.sig_listing_done.connect(self._on_listing_done)
        self.list_folder(start or "~")

    def list_folder(self, path: str) -> None:
        if self._worker is not None:
            return
        self.status.setText(f"listing {path} …")

        def ls():
            try:
                return self.helper.call("ls", path, timeout=60)
            except (SshError, RemoteError) as exc:
                return str(exc)
        self._worker = create_worker(ls, _start_thread=False, _ignore_errors=True)
        self._worker.returned.connect(self.sig_listing_done.emit)
        self._worker.start()

    def _on_listing_done(self, answer) -> None:
        self._worker = None
        if not shiboken6.isValid(self.entries):
            return
        if isinstance(answer, str):
            self.status.setText(answer)
            return
        self.path.setText(answer.get("path", ""))
        self.entries.clear()
        for name, is_dir, size in answer.get("entries", []):
            item = QtWidgets.QListWidgetItem(f"{name}/" if is_dir else f"{name}    ({size / 1e6:.1f} MB)")
            item.setData(QtCore.Qt.ItemDataRole.UserRole, (name, bool(is_dir)))
            self.entries.addItem(item)
        self.status.setText(f"{self.entries.count()} entries")

    def _on_entries_double_clicked(self, item) -> None:
        name, is_dir = item.data(QtCore.Qt.ItemDataRole.UserRole)
        full = posixpath.join(self.path.text(), name)
        if is_dir and self.want != "any":
            self.list_folder(full)
        else:
            self.selected = full
            super().accept()

    def accept(self) -> None:
        item = self.entries.currentItem()
        if item is not None:
            name, is_dir = item.data(QtCore.Qt.ItemDataRole.UserRole)
            if self.want == "dir" and not is_dir:
                return
            self.selected = posixpath.join(self.path.text(), name)
        elif self.want == "dir":
            self.selected = self.path.text()
        if self.selected:
            super().accept()
