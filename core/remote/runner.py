"""The runner on a remote host: child.py, the stdlib-only modules it and the agent load, and the agent itself,
uploaded once into `~/.cache/ptprof/runner-<content hash>/` (0700) and checked by that hash (Qt-free).

    helper = Helper(host, python="python3").ensure()   # uploads only when the folder is missing or differs
    helper.call("list")                                 # one JSON answer, or RemoteError (one line)
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import re
import tarfile
from pathlib import Path

from core.remote.ssh import SshError, SshHost

RUNNER_DIR = Path(__file__).resolve().parents[1] / "runner"
REMOTE_DIR = Path(__file__).resolve().parent
AGENT_FILES = ("agent.py", "agent_io.py", "agent_gpu.py", "agent_gpu_poll.py", "agent_index.py")
RUNNER_EXTRA = ("tree.py", "livestate.py", "events_check.py", "protocol.py", "auth.py")  # what the agent loads
REMOTE_ROOT = "~/.cache/ptprof"  # where the runner and runs live on the host (PTPROF_REMOTE_ROOT: elsewhere)
ANSWER_BYTES = 8 << 20

# unpacks the runner (a tar on stdin) into ROOT/runner-HASH, atomically, 0700; a folder that is there is kept
_UNPACK = r"""
import os, sys, tarfile, tempfile
root, name = os.path.expanduser(sys.argv[1]), sys.argv[2]
os.makedirs(root, mode=0o700, exist_ok=True)
final = os.path.join(root, name)
tmp = tempfile.mkdtemp(prefix=".runner-", dir=root)
with tarfile.open(fileobj=sys.stdin.buffer, mode="r|") as tar:
    for m in tar:
        if not m.isreg() or "/" in m.name or m.name.startswith("."):
            raise SystemExit("bad runner member " + m.name)
        with open(os.path.join(tmp, m.name), "wb") as fh:
            fh.write(tar.extractfile(m).read())
os.chmod(tmp, 0o700)
if os.path.isdir(final):
    import shutil; shutil.rmtree(final)
os.rename(tmp, final)
"""


class RemoteError(RuntimeError):
    """The helper on the host refused or failed; str(exc) is one line."""


def runner_files(overrides: dict[str, bytes] | None = None) -> dict[str, bytes]:
    """name -> content: child.py with every sibling it loads (its `_load_sibling("x")` calls), the agent's
    modules and what they load. `overrides` replaces files (tests: a hostile helper)."""
    names = set(RUNNER_EXTRA) | _siblings_of("child.py")
    files = {name: (RUNNER_DIR / name).read_bytes() for name in sorted(names)}
    files["backend.py"] = (RUNNER_DIR.parent / "gpu" / "backend.py").read_bytes()
    files["terminal.py"] = (RUNNER_DIR.parent / "terminal.py").read_bytes()  # livestate's printable
    for name in AGENT_FILES:
        files[name] = (REMOTE_DIR / name).read_bytes()
    files.update(overrides or {})
    return files


_SIBLING_CALL = re.compile(rb'_(?:load_)?sibling\("(\w+)"\)')


def _siblings_of(name: str) -> set[str]:
    """`name` and every runner module it loads by file, transitively (child.py's `_load_sibling("x")`,
    switches.py's `_sibling("x")`, ...): a module a sibling loads must travel too."""
    seen, todo = set(), [name]
    while todo:
        current = todo.pop()
        if current in seen or not (RUNNER_DIR / current).is_file():
            continue
        seen.add(current)
        todo.extend(f"{n.decode()}.py" for n in _SIBLING_CALL.findall((RUNNER_DIR / current).read_bytes()))
    return seen


def content_hash(files: dict[str, bytes]) -> str:
    """The agent's content_hash (core/remote/agent.py) over the same files."""
    h = hashlib.sha256()
    for name in sorted(files):
        if name.endswith(".py"):
            h.update(name.encode() + b"\0" + files[name] + b"\0")
    return h.hexdigest()


class Helper:
    def __init__(self, host: SshHost, python: str = "python3", root: str | None = None,
                 overrides: dict[str, bytes] | None = None):
        self.host, self.python, self.root = host, python or "python3", root or os.environ.get("PTPROF_REMOTE_ROOT") or REMOTE_ROOT
        self.files = runner_files(overrides)
        self.hash = content_hash(self.files)
        self.dir = f"{self.root}/runner-{self.hash[:16]}"

    def words(self, *args: str) -> list[str]:
        """sh -c 'exec PY "$HOME/.cache/..."/agent.py "$@"' sh ARGS...: only the fixed folder is shell text,
        every argument (the interpreter, run ids, paths) is a quoted word."""
        folder, root = _sh_path(self.dir), _sh_path(self.root)
        index = os.environ.get("PTPROF_REMOTE_INDEX")  # the host's index of runs (default ~/.cache/ptprof/runs.idx)
        index = f"PTPROF_REMOTE_INDEX={_sh_path(index)} " if index else ""
        script = f'PTPROF_REMOTE_ROOT={root} {index}PYTHONDONTWRITEBYTECODE=1 exec "$0" {folder}/agent.py "$@"'
        return ["sh", "-c", script, self.python, *args]

    def ensure(self) -> "Helper":
        """Upload the runner unless the host has this exact content (verified by hash there)."""
        r = self.host.run(self.words("verify"), timeout=60)
        if r.returncode == 0 and _answer(r).get("ok"):
            return self
        if r.returncode == 127 or b"not found" in r.stderr and b"agent.py" not in r.stderr:
            raise RemoteError(f"{self.python} not found on {self.host.label}: pick the interpreter with --python")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for name, data in sorted(self.files.items()):
                info = tarfile.TarInfo(name)
                info.size, info.mode = len(data), 0o600
                tar.addfile(info, io.BytesIO(data))
        r = self.host.run([self.python, "-c", _UNPACK, self.root, f"runner-{self.hash[:16]}"],
                          input=buf.getvalue(), timeout=120)
        if r.returncode != 0:
            raise RemoteError(f"cannot install ptprof's runner in {self.root} on {self.host.label}: "
                              f"{_err_line(r.stderr)}")
        r = self.host.run(self.words("verify"), timeout=60)
        if r.returncode != 0 or not _answer(r).get("ok"):
            raise RemoteError(f"ptprof's runner on {self.host.label} does not match what was uploaded: "
                              f"{_err_line(r.stderr) or 'hash differs'}")
        return self

    def call(self, *args: str, input: bytes | None = None, timeout: float = 60) -> dict:
        """One agent command with one JSON answer; RemoteError (one line) for an error answer or junk."""
        r = self.host.run(self.words(*args), input=input, timeout=timeout)
        answer = _answer(r)
        if not answer:
            raise RemoteError(f"the helper on {self.host.label} gave no answer to `{args[0]}` (exit {r.returncode}): "
                              f"{_err_line(r.stderr) or 'nothing on stderr'}")
        if not answer.get("ok"):
            raise RemoteError(str(answer.get("error") or "the helper refused")[:500])
        return answer

    def clock_offset(self, pings: int = 5, timeout: float = 20.0) -> tuple[int, int]:
        """(desktop clock - host clock, round trip) in ns: the host's time.time_ns() (the clock its samples and
        events are stamped with) asked `pings` times over one channel; the answer of the shortest round
        trip is taken as read at its midpoint (NTP's estimate: off by at most half that round trip).
        RemoteError when the host does not answer."""
        import subprocess
        import threading
        import time
        proc = self.popen("clock", stdin=subprocess.PIPE)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        best = None
        try:
            for _ in range(max(1, pings)):
                t0 = time.time_ns()
                proc.stdin.write(b"\n")
                proc.stdin.flush()
                line = proc.stdout.readline(64)
                t1 = time.time_ns()
                if not line.strip().isdigit():
                    break
                sample = (t1 - t0, (t0 + t1) // 2 - int(line))
                best = sample if best is None or sample[0] < best[0] else best
        except OSError:
            pass
        finally:
            timer.cancel()
            try:
                proc.stdin.close()
            except OSError:
                pass
            proc.kill()
            proc.wait()
        if best is None:
            raise RemoteError(f"{self.host.label} did not tell its time (agent.py clock)")
        return best[1], best[0]

    def popen(self, *args: str, stdin=None):
        import subprocess
        return self.host.popen(self.words(*args), stdin=subprocess.DEVNULL if stdin is None else stdin)


def _sh_path(path: str) -> str:
    """A path as shell text for sh -c: `~/x` becomes "$HOME"/'x' (expanded there), the rest is quoted."""
    import shlex
    if path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:])
    return shlex.quote(path)


def _answer(r) -> dict:
    text = r.stdout[:ANSWER_BYTES].decode("utf-8", "replace").strip().splitlines()
    try:
        data = json.loads(text[-1]) if text else None
    except (ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def _err_line(stderr: bytes) -> str:
    lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


__all__ = ["Helper", "RemoteError", "SshError", "runner_files", "content_hash"]
