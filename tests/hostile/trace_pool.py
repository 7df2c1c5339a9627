"""Parent side of tests/hostile/trace_worker.py: one worker process per loader configuration,
each case under a time limit; a hang or a crash (killed by a signal, out of memory) is an outcome,
and the worker is restarted for the next case."""
from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path

WORKER = Path(__file__).with_name("trace_worker.py")
REPO = Path(__file__).resolve().parents[2]
# the loader configurations: both decode paths, in this process and with workers / threads,
# with Kineto-sized chunks and with tiny ones (cuts, merges and resyncs at every few events)
CONFIGS = {
    "scanner": ("--scanner", "on", "--workers", "1"),
    "msgspec": ("--scanner", "off", "--workers", "1"),
    "scanner-chunked": ("--scanner", "on", "--workers", "2", "--chunk-bytes", "2048"),
    "msgspec-chunked": ("--scanner", "off", "--workers", "2", "--chunk-bytes", "2048"),
}


class Worker:
    def __init__(self, config: str, rss_bytes: int, cache_dir: str) -> None:
        self.args = [sys.executable, str(WORKER), *CONFIGS[config], "--rss-bytes", str(rss_bytes)]
        self.env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PTPROF_CACHE_DIR": cache_dir,
                    "PYTHONWARNINGS": "ignore::DeprecationWarning"}
        self.proc: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(self.args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, cwd=REPO, env=self.env, text=True, bufsize=1)
        return self.proc

    def run(self, path: Path, mode: str = "load", timeout_s: float = 60.0, cache: bool = False) -> dict:
        proc = self._start()
        try:
            proc.stdin.write(json.dumps({"path": str(path), "mode": mode, "cache": cache}) + "\n")
            proc.stdin.flush()
        except BrokenPipeError:
            return self._dead(proc)
        ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
        if not ready:
            self.close()
            return {"outcome": "hang", "detail": f"no answer in {timeout_s:.0f} s"}
        line = proc.stdout.readline()
        if not line:
            return self._dead(proc)
        return json.loads(line)

    def _dead(self, proc: subprocess.Popen) -> dict:
        rc = proc.wait(timeout=30)
        self.proc = None
        return {"outcome": "crash", "detail": f"worker exited with {rc}"}

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(timeout=30)
            self.proc = None


def acceptable(result: dict) -> str | None:
    """None when the outcome keeps the contract, else what broke it."""
    outcome = result["outcome"]
    if outcome == "traceset":
        return None
    if outcome == "parse_error":
        reason = result["detail"]
        return None if reason and "\n" not in reason and len(reason) < 500 else f"bad reason: {reason!r}"
    if outcome == "cli":
        lines = result["stderr"].splitlines()
        if result["rc"] not in (0, 2):
            return f"exit code {result['rc']}: {result['stderr'][-2000:]}"
        if "Traceback" in result["stderr"] or len(lines) > 1 or (result["rc"] == 2 and len(lines) != 1):
            return f"stderr is not one line (rc {result['rc']}): {result['stderr'][-2000:]}"
        return None
    return f"{outcome}: {result.get('detail')}\n{result.get('traceback', '')}"
