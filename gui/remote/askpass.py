"""SSH_ASKPASS for the app: ssh runs this program for a password, a key's passphrase or an unknown host key
(OpenSSH's own prompt, with the fingerprint); it shows the prompt in a dialog and prints the answer for
ssh alone. Nothing is stored. Cancel = exit 1 (ssh then fails: one line in the app).

    askpass_program()  -> path of a 0700 wrapper in the private SSH socket folder (SSH_ASKPASS takes no args)
"""
from __future__ import annotations

import shlex
import sys
from pathlib import Path


def askpass_program() -> str:
    from core.remote.ssh import control_dir
    path = control_dir() / "askpass"
    repo = str(Path(__file__).resolve().parents[2])
    from core.atomic import write_program
    return write_program(path, f"#!/bin/sh\nPYTHONPATH={shlex.quote(repo)}${{PYTHONPATH:+:$PYTHONPATH}} "
                               f"exec {shlex.quote(sys.executable)} -m gui.remote.askpass \"$@\"\n")


def main(argv: list[str]) -> int:
    from PySide6 import QtWidgets
    prompt = " ".join(argv) or "Password:"
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([sys.argv[0]])
    confirm = "(yes/no" in prompt or "continue connecting" in prompt
    dlg = QtWidgets.QInputDialog()
    dlg.setWindowTitle("SSH - unknown host key" if confirm else "SSH")
    dlg.setLabelText(prompt + ("\n\nCompare the fingerprint with the one the host's owner gives you. Type yes "
                               "to accept it (it is added to ~/.ssh/known_hosts)." if confirm else ""))
    if not confirm:
        dlg.setTextEchoMode(QtWidgets.QLineEdit.EchoMode.Password)
    dlg.resize(640, dlg.sizeHint().height())
    ok = dlg.exec()
    app.processEvents()
    if not ok:
        return 1
    sys.stdout.write(dlg.textValue() + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
