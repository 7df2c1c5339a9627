"""SSH transport: the system OpenSSH client, one multiplexed master connection per host (Qt-free).

`~/.ssh/config` (or `-F FILE`), keys, the agent, ProxyJump and known_hosts work as the user has them.
One master (ControlMaster=yes, ControlPersist) lives behind a socket in a private 0700 folder
(`$XDG_RUNTIME_DIR/ptprof-ssh` or `/tmp/ptprof-ssh-<uid>`, checked: ours, a real folder, 0700); every
command and stream rides it. Host keys are checked as OpenSSH does, never accepted silently:
StrictHostKeyChecking=yes for the command line (an unknown host is one line with its fingerprint and
how to accept it), `ask` through the SSH_ASKPASS dialog in the GUI (OpenSSH itself shows the
fingerprint there). Passwords and passphrases go only through that dialog or, on the command line, the
terminal (tty_askpass.py: also for a reconnect mid-run), never stored or on a command line. A
remote command is one string of `shlex.quote`d words; nothing runs through a local shell.
"""
from __future__ import annotations

import hashlib
import os
import re
import shlex
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

MASTER_PERSIST_S = 300
CONNECT_TIMEOUT_S = 20
_HOST = re.compile(r"^(?:(?P<user>[^@\s/]+)@)?(?P<host>\[[0-9A-Fa-f:.]+\]|[^@\s:/\[\]]+)(?::(?P<port>\d{1,5}))?$")


class SshError(RuntimeError):
    """The host cannot be used; str(exc) is one line meant for the user."""


class HostKeyUnknown(SshError):
    pass


class AuthFailed(SshError):
    pass


class Unreachable(SshError):
    pass


@dataclass(frozen=True, slots=True)
class HostSpec:
    """`alias`, `user@host` or `user@host:port` (IPv6 as `[::1]:22`)."""

    host: str
    user: str = ""
    port: int = 0

    @classmethod
    def parse(cls, text: str) -> "HostSpec":
        text = (text or "").strip()
        m = _HOST.match(text)
        if not m or m.group("host").startswith("-"):
            raise SshError(f"not an SSH host: {text!r} (expected an alias of ~/.ssh/config, host, user@host or "
                           "user@host:port)")
        port = int(m.group("port") or 0)
        if m.group("port") and not 0 < port < 65536:
            raise SshError(f"not a port: {m.group('port')}")
        return cls(m.group("host").strip("[]"), m.group("user") or "", port)

    @property
    def label(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.user + '@' if self.user else ''}{host}{':%d' % self.port if self.port else ''}"


def control_dir() -> Path:
    """The private folder of the master sockets: created 0700, refused when it is not ours."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    root = Path(base) / "ptprof-ssh" if base and Path(base).is_dir() else \
        Path(tempfile.gettempdir()) / f"ptprof-ssh-{os.getuid()}"
    try:
        root.mkdir(mode=0o700, exist_ok=True)
        st = os.lstat(root)
    except OSError as exc:
        raise SshError(f"cannot create the SSH socket folder {root}: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or stat.S_IMODE(st.st_mode) & 0o077:
        raise SshError(f"the SSH socket folder {root} is not a private folder of this user (0700): "
                       "remove it and try again")
    return root


def quote_command(words: list[str]) -> str:
    """One remote command line: every word quoted for the remote POSIX shell."""
    return " ".join(shlex.quote(str(w)) for w in words)


class SshHost:
    """One host. run() / popen() execute a quoted command there over the master connection."""

    def __init__(self, spec: str | HostSpec, config_file: str | None = None, askpass: str | None = None,
                 interactive: bool = False, ssh: str = "ssh"):
        self.spec = spec if isinstance(spec, HostSpec) else HostSpec.parse(spec)
        self.config_file = str(Path(config_file).expanduser()) if config_file else None
        if self.config_file and not Path(self.config_file).is_file():
            raise SshError(f"SSH config file not found: {self.config_file}")
        self.askpass = askpass  # program path: the GUI's password / host key dialog
        # a terminal asks for a password or passphrase (the CLI with stdin a TTY), at the start and on every
        # reconnect: through core/remote/tty_askpass.py, since ssh runs without a terminal of its own
        self.interactive = interactive
        self.ssh = ssh
        # one master per (config file, host): %C alone (a hash of host, port, user) would let a master opened
        # through one config file serve another with other keys / known_hosts
        tag = hashlib.sha256(f"{self.config_file}\0{self.spec.label}".encode()).hexdigest()[:12]
        self.socket = str(control_dir() / f"{tag}-%C")

    @property
    def label(self) -> str:
        return self.spec.label

    def _options(self) -> list[str]:
        opts = [self.ssh]
        if self.config_file:
            opts += ["-F", self.config_file]
        opts += ["-o", f"ControlPath={self.socket}", "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3",
                 "-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}", "-o", "LogLevel=ERROR",
                 "-o", f"StrictHostKeyChecking={'ask' if self.askpass else 'yes'}"]
        if not self.askpass and not self.interactive:
            opts += ["-o", "BatchMode=yes"]
        if self.spec.port:
            opts += ["-p", str(self.spec.port)]
        if self.spec.user:
            opts += ["-l", self.spec.user]
        return opts

    def _env(self) -> dict:
        env = dict(os.environ)
        if self.askpass:
            env.update(SSH_ASKPASS=self.askpass, SSH_ASKPASS_REQUIRE="force", DISPLAY=env.get("DISPLAY") or ":0")
        elif self.interactive:
            from core.remote import tty_askpass
            env.update(tty_askpass.shared(control_dir()).env())
        return env

    @property
    def prompting(self) -> bool:
        """The terminal is asking the user for this host's password / passphrase (the status line waits)."""
        if not self.interactive or self.askpass:
            return False
        from core.remote import tty_askpass
        return bool(tty_askpass._shared is not None and tty_askpass._shared.prompting)

    # -- the master connection ------------------------------------------------------------------------------
    def master_alive(self) -> bool:
        r = subprocess.run([*self._options(), "-O", "check", "--", self.spec.host], stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=self._env(), timeout=15,
                           start_new_session=True)
        return r.returncode == 0

    def connect(self) -> "SshHost":
        """Open the master connection (or find it open). SshError with one line when it cannot."""
        try:
            if self.master_alive():
                return self
        except subprocess.TimeoutExpired:
            pass
        with tempfile.TemporaryFile() as log:  # a file, not a pipe: the backgrounded master keeps it open
            argv = [*self._options(), "-o", "ControlMaster=yes", "-o", f"ControlPersist={MASTER_PERSIST_S}",
                    "-f", "-N", "--", self.spec.host]
            asks = self.interactive or self.askpass  # the user may take a while to type
            try:
                r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                                   env=self._env(), timeout=600 if asks else CONNECT_TIMEOUT_S * 3,
                                   start_new_session=True)
            except FileNotFoundError:
                raise SshError(f"the OpenSSH client ({self.ssh}) is not installed") from None
            except subprocess.TimeoutExpired:
                raise Unreachable(f"cannot connect to {self.label}: no answer within "
                                  f"{600 if asks else CONNECT_TIMEOUT_S * 3} s") from None
            log.seek(0)
            err = log.read(1 << 16).decode("utf-8", "replace")
        if r.returncode != 0:
            raise self.explain(err, r.returncode)
        return self

    def close(self) -> None:
        subprocess.run([*self._options(), "-O", "exit", "--", self.spec.host], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=self._env(), timeout=15)

    def explain(self, stderr: str, code: int) -> SshError:
        """ssh's failure as one line for the user (the kind of failure as the exception type)."""
        lines = [ln.strip() for ln in stderr.splitlines() if ln.strip() and not ln.startswith(("@", "Warning:"))]
        text = " ".join(stderr.split())
        host = self.label
        if "REMOTE HOST IDENTIFICATION HAS CHANGED" in stderr or "Host key for" in stderr and "has changed" in stderr:
            return HostKeyUnknown(f"the host key of {host} has CHANGED since it was accepted: someone may be "
                                  "intercepting the connection, or the host was reinstalled; check with its "
                                  "administrator, then fix ~/.ssh/known_hosts (ssh-keygen -R)")
        if "host key is known" in text or "Host key verification failed" in text:
            fp = self.fingerprint()
            how = "ssh " + " ".join(shlex.quote(a) for a in self.user_argv())
            return HostKeyUnknown(f"the host key of {host} is not known{' (' + fp + ')' if fp else ''}: check "
                                  f"this fingerprint with the host's owner, then accept it once with `{how}` "
                                  "(answer yes) and run again")
        if "Permission denied" in text or "Too many authentication failures" in text:
            hint = "" if self.interactive or self.askpass else (
                "; a password or key passphrase is asked only when ptprof runs in a terminal (or load the key into "
                "ssh-agent)")
            return AuthFailed(f"cannot log in to {host}: {_last(lines, 'Permission denied')} - check the user "
                              f"name and key (ssh -v shows which keys were tried){hint}")
        if any(s in text for s in ("Connection refused", "Could not resolve", "timed out", "No route to host",
                                   "Network is unreachable", "Connection closed", "Connection reset")):
            return Unreachable(f"cannot connect to {host}: {_last(lines, '')}")
        return SshError(f"ssh to {host} failed (exit {code}): {_last(lines, '') or 'no message'}")

    def user_argv(self) -> list[str]:
        """What the user types to connect by hand (to accept a host key)."""
        out = []
        if self.config_file:
            out += ["-F", self.config_file]
        if self.spec.port:
            out += ["-p", str(self.spec.port)]
        return out + [f"{self.spec.user + '@' if self.spec.user else ''}{self.spec.host}"]

    def fingerprint(self) -> str:
        """SHA256 fingerprint(s) of the host's keys as the host presents them (ssh-keyscan), for the user to
        check; "" when they cannot be read. Reading it accepts nothing."""
        try:
            resolved = subprocess.run([self.ssh, *(["-F", self.config_file] if self.config_file else []),
                                       *(["-p", str(self.spec.port)] if self.spec.port else []), "-G", "--",
                                       self.spec.host], capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
            conf = dict(ln.split(" ", 1) for ln in resolved.stdout.decode(errors="replace").splitlines() if " " in ln)
            scan = subprocess.run(["ssh-keyscan", "-T", "5", "-p", conf.get("port", "22"), "--",
                                   conf.get("hostname", self.spec.host)], capture_output=True, timeout=15,
                                  stdin=subprocess.DEVNULL)
            lines = subprocess.run(["ssh-keygen", "-l", "-f", "-"], input=scan.stdout, capture_output=True,
                                   timeout=10).stdout.decode(errors="replace").splitlines()
        except (OSError, subprocess.TimeoutExpired, ValueError):
            return ""
        prints = [f"{ln.split()[-1].strip('()')} {ln.split()[1]}" for ln in lines if len(ln.split()) >= 3]
        return ", ".join(sorted(prints))

    # -- commands -------------------------------------------------------------------------------------------
    def argv(self, words: list[str]) -> list[str]:
        return [*self._options(), "-o", "ControlMaster=no", "--", self.spec.host, quote_command(words)]

    def run(self, words: list[str], input: bytes | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
        """Run a command there; SshError (one line) when ssh itself failed (exit 255)."""
        try:
            r = subprocess.run(self.argv(words), input=input if input is not None else b"",
                               capture_output=True, env=self._env(), timeout=timeout, start_new_session=True)
        except subprocess.TimeoutExpired:
            raise Unreachable(f"{self.label} did not answer within {timeout:.0f} s") from None
        if r.returncode == 255:
            raise self.explain(r.stderr.decode("utf-8", "replace"), 255)
        return r

    def popen(self, words: list[str], stdin=subprocess.DEVNULL) -> subprocess.Popen:
        """A long command (a stream) in its own session: a Ctrl-C meant for ptprof never cuts it."""
        return subprocess.Popen(self.argv(words), stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=self._env(), start_new_session=True)


def _last(lines: list[str], prefer: str) -> str:
    hits = [ln for ln in lines if prefer and prefer in ln]
    return (hits or lines or [""])[-1][:300]
