"""SSH_ASKPASS for the command line (Qt-free): a password or a key's passphrase asked on ptprof's terminal.

ssh runs in its own session (a Ctrl-C meant for ptprof never cuts a channel), so it has no terminal to ask
on; with SSH_ASKPASS it runs this module's program instead, which asks the ptprof process that started
ssh over a private Unix socket (in the 0700 SSH socket folder, the peer checked to be this user), and that
process asks the user on its terminal, echo off - also for a reconnect in the middle of a run, from the
follower thread (`prompting` pauses the status line meanwhile). The answer goes to ssh alone: never
stored, never on a command line or in an environment variable. Host keys are never asked: the command
line keeps StrictHostKeyChecking=yes (an unknown key is one line with its fingerprint).

    asker = shared(control_dir())   # the CLI's, started once per process when stdin is a terminal
    env.update(asker.env())         # SSH_ASKPASS (+ SSH_ASKPASS_REQUIRE=force), PTPROF_ASKPASS_SOCKET
"""
from __future__ import annotations

import os
import socket
import struct
import sys
import threading

SOCKET_ENV = "PTPROF_ASKPASS_SOCKET"
MAX_PROMPT = 4096
_shared = None
_shared_lock = threading.Lock()


class TtyAskpass:
    def __init__(self, ask=None):
        self._ask = ask or ask_on_terminal  # (prompt) -> answer or None (tests: a function)
        self.prompting = False  # the user is being asked: the status line waits
        self.asked = 0
        self.sock_path = ""
        self.program = ""
        self._lock = threading.Lock()

    def start(self, folder) -> "TtyAskpass":
        """Listen in `folder` (ssh.control_dir(): private, 0700) and write the program there."""
        self.sock_path = str(folder / f"ask-{os.getpid()}-{os.urandom(4).hex()}.sock")
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            srv.bind(self.sock_path)
        finally:
            os.umask(old)
        srv.listen(4)
        self.program = _write_program(folder)
        threading.Thread(target=self._serve, args=(srv,), name="ptprof-askpass", daemon=True).start()
        import atexit
        atexit.register(lambda: os.path.exists(self.sock_path) and os.unlink(self.sock_path))
        return self

    def env(self) -> dict:
        return {"SSH_ASKPASS": self.program, "SSH_ASKPASS_REQUIRE": "force", SOCKET_ENV: self.sock_path,
                "DISPLAY": os.environ.get("DISPLAY") or ":0"}

    def _serve(self, srv) -> None:
        while True:
            conn, _ = srv.accept()
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn) -> None:
        with conn:
            try:
                creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
                if struct.unpack("3i", creds)[1] != os.getuid():
                    return  # not this user's ssh: no answer
                conn.settimeout(10)
                prompt = b""
                while not prompt.endswith(b"\n") and len(prompt) < MAX_PROMPT:
                    chunk = conn.recv(MAX_PROMPT)
                    if not chunk:
                        break
                    prompt += chunk
                conn.settimeout(None)
                text = prompt.decode("utf-8", "replace").strip()
                if "(yes/no" in text or "continue connecting" in text:
                    return  # host keys are never accepted here (StrictHostKeyChecking=yes)
                with self._lock:  # one question at a time on the terminal
                    self.prompting = True
                    try:
                        self.asked += 1
                        answer = self._ask(text)
                    finally:
                        self.prompting = False
                if answer is not None:
                    conn.sendall(answer.encode("utf-8") + b"\n")
            except OSError:
                return


def ask_on_terminal(prompt: str):
    """The prompt on the controlling terminal, echo off; None (ssh gives up) when there is none or on Ctrl-D."""
    import getpass
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return None
    with open(fd, "w", closefd=True) as tty:
        tty.write("\r\033[K")
        tty.flush()
        try:
            return getpass.getpass(f"ptprof (ssh): {_printable(prompt)} ", stream=tty)
        except (EOFError, OSError, KeyboardInterrupt):
            tty.write("\n")
            return None


def _printable(text: str) -> str:
    return "".join(c if c.isprintable() else " " for c in text)[:500]


def _write_program(folder) -> str:
    """A 0700 wrapper in the private folder (SSH_ASKPASS takes a program, no arguments)."""
    import shlex
    from pathlib import Path
    path = Path(folder) / "askpass-tty"
    repo = str(Path(__file__).resolve().parents[2])
    from core.atomic import write_program
    return write_program(path, f"#!/bin/sh\nPYTHONPATH={shlex.quote(repo)} exec {shlex.quote(sys.executable)} -S -m "
                               "core.remote.tty_askpass \"$@\"\n")


def shared(folder) -> TtyAskpass:
    """This process's asker, started at the first use (in `folder`, ssh.control_dir())."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = TtyAskpass().start(folder)
        return _shared


def main(argv: list) -> int:
    """The program ssh runs: the prompt to the ptprof process, its answer to ssh (stdout); exit 1 = no answer."""
    path = os.environ.get(SOCKET_ENV, "")
    prompt = " ".join(argv) or "Password:"
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(path)
            s.sendall(prompt.encode("utf-8", "replace")[:MAX_PROMPT - 1] + b"\n")
            answer = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                answer += chunk
    except OSError:
        return 1
    if not answer.endswith(b"\n"):
        return 1
    sys.stdout.buffer.write(answer)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
