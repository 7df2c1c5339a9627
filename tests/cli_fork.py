"""`python -m core.cli ARGS` as a fork of one warm interpreter: the same `core.cli.main`, exit code,
stdout and stderr, under the same address-space limit and time limit, without the ~0.4 s of interpreter
start and imports that each of the hostile-input tests' hundred CLI runs paid (tests/hostile/gen_store.py).

The server (this file run as a script) imports the CLI and the modules its commands load, then forks one
child per request; the child takes the request's environment, working directory and RLIMIT_AS, points fd 1
and 2 at files, runs `main(args)`, waits for non-daemon threads (a background cache write) and the atexit
hooks as an interpreter's exit would, and exits with main's code. Nothing runs in the server but imports,
so every child starts from the same state. What a fork cannot show - a setting read while a module loads,
the console entry point, interpreter start-up - stays with real processes (`run_cli(..., real=True)`)."""
from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


class CliForkServer:
    """Client side: one server per test process, started on first use, restarted when it died."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.lock = threading.Lock()

    def _start(self) -> subprocess.Popen:
        if self.proc is None or self.proc.poll() is not None:
            env = {**os.environ, "PYTHONPATH": str(REPO), "OPENBLAS_NUM_THREADS": "1"}
            self.proc = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         cwd=REPO, env=env, text=True, bufsize=1)
            line = self.proc.stdout.readline()  # "ready" once the imports are done
            if line.strip() != "ready":
                raise RuntimeError(f"the CLI fork server did not start: {line!r}")
        return self.proc

    def run(self, args: list[str], env: dict, cwd: Path, memory: int, timeout: float) -> subprocess.CompletedProcess:
        with self.lock, tempfile.TemporaryDirectory(prefix="ptprof-clifork-") as d:
            out, err = Path(d) / "out", Path(d) / "err"
            proc = self._start()
            try:
                proc.stdin.write(json.dumps({"args": args, "env": env, "cwd": str(cwd), "memory": memory,
                                             "out": str(out), "err": str(err)}) + "\n")
                proc.stdin.flush()
                pid = int(proc.stdout.readline())
                ready, _, _ = select.select([proc.stdout], [], [], timeout)
                if not ready:  # a hang: kill the child as subprocess.run would, then say so the same way
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:  # it ended as the timeout fired (a loaded machine)
                        pass
                    proc.stdout.readline()
                    raise subprocess.TimeoutExpired(["ptprof", *args], timeout)
                rc = int(proc.stdout.readline())
            except subprocess.TimeoutExpired:
                raise
            except BaseException:
                # a request whose answer was not read whole would shift every later answer by a line (exit
                # codes read as pids: 18 hostile cases failed at once under load): start a new server
                proc.kill()
                proc.wait(timeout=30)
                self.proc = None
                raise
            return subprocess.CompletedProcess(["ptprof", *args], rc, out.read_text(errors="replace"),
                                               err.read_text(errors="replace"))

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        self.proc = None


_SERVER = CliForkServer()
atexit.register(_SERVER.close)


def run(args: list[str], env: dict, cwd: Path, memory: int, timeout: float) -> subprocess.CompletedProcess:
    return _SERVER.run(args, env, cwd, memory, timeout)


# ---- the server -----------------------------------------------------------------------------------

def _child(req: dict) -> None:
    """In the forked child: never returns."""
    code = 1
    try:
        import resource
        os.environ.clear()
        os.environ.update(req["env"])
        os.chdir(req["cwd"])
        resource.setrlimit(resource.RLIMIT_AS, (req["memory"], req["memory"]))
        for fd, path in ((1, req["out"]), (2, req["err"])):
            f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(f, fd)
            os.close(f)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        sys.argv = ["ptprof", *req["args"]]
        from core import cli
        try:
            code = cli.main(req["args"])
        except SystemExit as exc:  # argparse errors, as `python -m` would exit
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if exc.code is not None and not isinstance(exc.code, int):
                print(exc.code, file=sys.stderr)
        threading._shutdown()  # noqa: SLF001 - what the interpreter does at exit: join non-daemon threads
        atexit._run_exitfuncs()  # noqa: SLF001
    except BaseException:  # noqa: BLE001 - an uncaught exception: a traceback and exit 1, as python would
        import traceback
        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code & 0xFF if isinstance(code, int) else 1)


def serve() -> None:
    import core.cli  # noqa: F401 - the imports every child would otherwise repeat
    import core.commands.analyze  # noqa: F401
    import core.commands.info  # noqa: F401
    import core.commands.report  # noqa: F401
    import core.trace.loader  # noqa: F401
    print("ready", flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(req)
        print(pid, flush=True)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), flush=True)


if __name__ == "__main__":
    serve()
