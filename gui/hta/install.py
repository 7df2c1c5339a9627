"""Installs HTA (the optional extra `.[hta]`: traceinsight + psutil) into the app's own interpreter.

`pip install` runs in a QProcess (never in the UI thread): each output line is reported (`sig_line`, with
the count of packages pip has collected so far), Cancel kills the process, and `sig_done(ok, message)`
says how it ended. The command comes from core.analysis.hta.install_command (tests pass their own).
"""
from __future__ import annotations

from PySide6 import QtCore

from core.analysis.hta import install_command


class HtaInstaller(QtCore.QObject):
    sig_line = QtCore.Signal(str, int)
    """The last line pip printed, and how many packages it has collected so far."""
    sig_done = QtCore.Signal(bool, str)
    """ok, and one line: installed / cancelled / pip's exit status and last line."""

    def __init__(self, parent=None, command: list[str] | None = None) -> None:
        super().__init__(parent)
        self.command = command or install_command()
        self.proc: QtCore.QProcess | None = None
        self.collected = 0
        self._last = ""
        self._cancelled = False

    def running(self) -> bool:
        return self.proc is not None

    def start(self) -> None:
        if self.proc is not None:
            return
        self.collected, self._last, self._cancelled = 0, "", False
        proc = QtCore.QProcess(self)
        proc.setProcessChannelMode(QtCore.QProcess.ProcessChannelMode.MergedChannels)
        env = QtCore.QProcessEnvironment.systemEnvironment()
        env.insert("PYTHONUNBUFFERED", "1")
        env.insert("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        proc.setProcessEnvironment(env)
        proc.readyReadStandardOutput.connect(self._on_output)
        proc.finished.connect(self._on_finished)
        proc.errorOccurred.connect(self._on_error)
        self.proc = proc
        proc.start(self.command[0], self.command[1:])

    def cancel(self) -> None:
        if self.proc is None:
            return
        self._cancelled = True
        self.proc.kill()

    def _on_output(self) -> None:
        if self.proc is None:
            return
        text = bytes(self.proc.readAllStandardOutput()).decode("utf-8", "replace")
        for line in text.splitlines():
            line = line.strip()
            if not line:
                continue
            if line.startswith("Collecting "):
                self.collected += 1
            self._last = line
            self.sig_line.emit(line[:200], self.collected)

    def _on_error(self, error) -> None:
        if error == QtCore.QProcess.ProcessError.FailedToStart and self.proc is not None:
            self.proc = None
            self.sig_done.emit(False, f"could not start {self.command[0]}: {error.name}")

    def _on_finished(self, code: int, _status) -> None:
        if self.proc is None:
            return
        self._on_output()
        self.proc.deleteLater()
        self.proc = None
        if self._cancelled:
            self.sig_done.emit(False, "Install cancelled.")
        elif code == 0:
            self.sig_done.emit(True, "HTA installed.")
        else:
            self.sig_done.emit(False, f"pip exited with status {code}: {self._last}"[:300])
