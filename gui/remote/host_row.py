"""HostRow: the Run dialog's "Host" field - This computer, the Host entries of ~/.ssh/config (and its
Includes), recent hosts, or free text user@host[:port] - and Connect, which opens the SSH master (password,
passphrase and unknown host keys through the askpass dialog), uploads ptprof's runner if needed and probes
the host's interpreters (torch / CUDA / GPU names) in a worker thread: the UI never waits on the network.
"""
from __future__ import annotations

import shiboken6
from PySide6 import QtCore, QtWidgets
from superqt.utils import create_worker

from core.remote import probe as probe_mod
from core.remote.hosts import config_hosts
from core.remote.runner import Helper, RemoteError
from core.remote.ssh import SshError, SshHost

LOCAL = "This computer"


def recent_hosts() -> list[str]:
    from gui.settings import string_list
    return string_list("remote/hosts")


def remember_host(host: str) -> None:
    from gui.settings import settings
    s = settings()
    s.setValue("remote/hosts", ([host] + [h for h in recent_hosts() if h != host])[:10])


def make_host(text: str) -> SshHost:
    """An SshHost whose prompts (password, passphrase, unknown host key) are the app's askpass dialog."""
    from gui.remote.askpass import askpass_program
    return SshHost(text, askpass=askpass_program())


class HostRow(QtWidgets.QWidget):
    sig_host_changed = QtCore.Signal(str)  # "" = this computer
    sig_probe_done = QtCore.Signal(object)  # list of probe dicts, or an error line (str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.combo = QtWidgets.QComboBox(self)
        self.combo.setEditable(True)
        self.combo.setInsertPolicy(QtWidgets.QComboBox.InsertPolicy.NoInsert)
        self.combo.addItem(LOCAL)
        for h in dict.fromkeys([*recent_hosts(), *config_hosts()]):
            self.combo.addItem(h)
        self.combo.lineEdit().setPlaceholderText("This computer, an ~/.ssh/config Host, or user@host[:port]")
        self.combo.currentTextChanged.connect(self._on_combo_text_changed)
        self.connect_button = QtWidgets.QPushButton("Connect", self)
        self.connect_button.setToolTip("open the SSH connection, put ptprof's runner there (nothing is installed) "
                                       "and list the host's Python interpreters with their torch, CUDA and GPUs")
        self.connect_button.clicked.connect(lambda: self.connect_host())
        self.status = QtWidgets.QLabel("", self)
        self.status.setWordWrap(True)
        top = QtWidgets.QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.combo, 1)
        top.addWidget(self.connect_button)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addLayout(top)
        lay.addWidget(self.status)
        self.helper: Helper | None = None
        self.probed: list[dict] = []
        self._worker = None
        self.sig_probe_done.connect(self._on_probe_done)
        self._on_combo_text_changed(self.combo.currentText())

    def host_text(self) -> str:
        text = self.combo.currentText().strip()
        return "" if text in ("", LOCAL) else text

    def set_host(self, text: str) -> None:
        self.combo.setCurrentText(text or LOCAL)

    def _on_combo_text_changed(self, _text: str) -> None:
        remote = bool(self.host_text())
        self.connect_button.setEnabled(remote and self._worker is None)
        self.helper = None
        self.probed = []
        self.status.setText("paths below are on the host; the bundle comes back here" if remote else "")
        self.sig_host_changed.emit(self.host_text())

    def connect_host(self, folder: str = "~", python: str = "python3") -> bool:
        """Connect and probe in a worker; False when there is nothing to connect to or it is running."""
        text = self.host_text()
        if not text or self._worker is not None:
            return False
        try:
            host = make_host(text)
        except SshError as exc:
            self.status.setText(str(exc))
            return False
        self.connect_button.setEnabled(False)
        self.status.setText(f"connecting to {host.label} …")

        def work():
            try:
                helper = Helper(host.connect(), python=python).ensure()
                return helper, probe_mod.interpreters(helper, folder)
            except (SshError, RemoteError) as exc:
                return str(exc)
        self._worker = create_worker(work, _start_thread=False, _ignore_errors=True)
        self._worker.returned.connect(self.sig_probe_done.emit)
        self._worker.start()
        return True

    def _on_probe_done(self, result) -> None:
        self._worker = None
        if not shiboken6.isValid(self.status):
            return
        self.connect_button.setEnabled(bool(self.host_text()))
        if isinstance(result, str):
            self.status.setText(f'<span style="color:#d9534f">{_esc(result)}</span>')
            return
        self.helper, self.probed = result
        remember_host(self.host_text())
        usable = [p for p in self.probed if p.get("torch")]
        lines = [f"{_esc(p['path'])}: {_esc(probe_mod.describe(p))}" for p in self.probed]
        self.status.setText(f"connected to {self.helper.host.label} · {len(usable)} of {len(self.probed)} "
                            "interpreter(s) with torch<br>" + "<br>".join(lines[:6]))


def _esc(text: str) -> str:
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class RemoteRunMixin:
    """What the Run dialog (gui/run/dialog.py) does for a host: its Host row, remote pickers, the probed
    interpreters in the Python list, and Run without the local checks (paths are the host's)."""

    def _add_host_row(self, form) -> None:
        self.host_row = HostRow(self)
        self.host_row.sig_host_changed.connect(self._on_host_row_host_changed)
        self.host_row.sig_probe_done.connect(self._on_host_row_probe_done)
        self._host = None
        form.addRow("Host", self.host_row)
        # the bundle's folder on the host (ptprof record --remote-dir): DIR/<run id>; empty = ~/.cache/ptprof/runs
        self.remote_dir = QtWidgets.QLineEdit(self)
        self.remote_dir.setPlaceholderText("~/.cache/ptprof/runs (the run goes into <folder>/<run id> on the host)")
        self.remote_dir.setToolTip("Where the host writes the run's bundle (scratch space, a shared disk); "
                                   "Reattach and `ptprof remote runs` find it wherever it is")
        browse = QtWidgets.QToolButton(self, text="…")
        browse.setToolTip("Browse the host's folders (after Connect)")
        browse.clicked.connect(lambda: self._browse_remote(self.remote_dir, "dir"))
        row = QtWidgets.QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.remote_dir, 1)
        row.addWidget(browse)
        self._remote_dir_row = QtWidgets.QWidget(self)
        self._remote_dir_row.setLayout(row)
        self._host_form = form
        form.addRow("Bundle on host", self._remote_dir_row)
        form.setRowVisible(self._remote_dir_row, bool(self.host_row.host_text()))

    def _on_host_row_host_changed(self, host: str) -> None:
        if hasattr(self, "_remote_dir_row"):
            self._host_form.setRowVisible(self._remote_dir_row, bool(host))
        self.cwd.setPlaceholderText("your home folder on the host" if host else "the script's folder")
        self.check_button.setEnabled(not host)
        self.check_button.setToolTip("Connect (Host row) checks the host's interpreters" if host else "")
        self.doctor_label.setText("")

    def _on_host_row_probe_done(self, result) -> None:
        if isinstance(result, str) or not shiboken6.isValid(self.python):
            return
        current = self.python.currentText()
        self.python.clear()
        for info in sorted(result[1], key=lambda p: not p.get("torch")):
            self.python.addItem(info["path"])
            self.python.setItemData(self.python.count() - 1, probe_mod.describe(info),
                                    QtCore.Qt.ItemDataRole.ToolTipRole)
        if current and current != "python3" and self.python.findText(current) < 0:
            self.python.insertItem(0, current)
        if self.python.count():
            self.python.setCurrentIndex(0)

    def _browse_remote(self, field, want: str) -> bool:
        """The host's file picker for `field` (a QLineEdit); False on this computer (the local picker)."""
        if not self.host_row.host_text():
            return False
        if self.host_row.helper is None:
            self.host_row.status.setText("press Connect first: the pickers browse the host over its connection")
            return True
        from gui.remote.browser import RemoteBrowser
        start = self.cwd.text().strip() or "~"
        dlg = RemoteBrowser(self, self.host_row.helper, start=start, want=want)
        if dlg.exec() and dlg.selected:
            field.setText(dlg.selected)
        return True

    def _accept_remote(self) -> None:
        from core.remote.session import validate_remote
        from core.runner.config import ConfigError
        try:
            cfg = self.config()
            cfg = validate_remote(cfg.with_(python=cfg.python or "python3"))
            host = make_host(self.host_row.host_text())
        except (ConfigError, SshError) as exc:
            self.error.setText(str(exc))
            return
        probed = {p["path"]: p for p in self.host_row.probed}
        info = probed.get(cfg.python)
        if info is not None and not info.get("torch"):
            self.error.setText(f"cannot run with {cfg.python} on {host.label}: {probe_mod.describe(info)}")
            return
        remember_host(self.host_row.host_text())
        self._host = host
        self._config = cfg
        QtWidgets.QDialog.accept(self)

    @property
    def accepted_remote_dir(self) -> str:
        """The bundle's folder on the host ("" = the host's default, ~/.cache/ptprof/runs)."""
        return self.remote_dir.text().strip() if self.accepted_host is not None else ""

    @property
    def accepted_host(self):
        """core.remote.ssh.SshHost of the accepted config, or None (this computer)."""
        return self._host if self._config is not None else None
