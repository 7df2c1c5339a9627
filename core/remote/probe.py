"""What the Run dialog offers for a host: its Python interpreters, each with its torch / CUDA / GPUs, found by
running a tiny probe script in each over the SSH master (Qt-free; runs in a worker thread)."""
from __future__ import annotations

import json

from core.remote.runner import Helper, RemoteError
from core.remote.ssh import SshError

PROBE = """import json, sys
r = {"python": sys.version.split()[0], "executable": sys.executable}
try:
    import torch
    r["torch"] = torch.__version__
    r["cuda"] = torch.version.cuda
    r["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] \\
        if torch.cuda.is_available() else []
except Exception as exc:
    r["error"] = (type(exc).__name__ + ": " + str(exc))[:300]
print(json.dumps(r))
"""
MAX_INTERPRETERS = 8


def describe(info: dict) -> str:
    """One line: 'Python 3.11 · torch 2.5.1 · CUDA 12.4 · 8x NVIDIA H100' or why it cannot run a script."""
    if info.get("error") and not info.get("torch"):
        return f"Python {info.get('python', '?')} · no torch ({info['error'][:80]})"
    gpus = info.get("gpus") or []
    names = sorted(set(gpus))
    gpu = " + ".join(f"{gpus.count(n)}x {n}" for n in names) if gpus else "no CUDA GPU"
    return f"Python {info.get('python', '?')} · torch {info.get('torch')} · CUDA {info.get('cuda') or '-'} · {gpu}"


def probe(helper: Helper, python: str, timeout: float = 90) -> dict:
    try:
        r = helper.host.run([python, "-c", PROBE], timeout=timeout)
    except SshError as exc:
        return {"path": python, "error": str(exc)}
    lines = r.stdout.decode("utf-8", "replace").strip().splitlines()
    try:
        info = json.loads(lines[-1]) if lines else {}
    except ValueError:
        info = {}
    if not isinstance(info, dict) or "python" not in info:
        err = r.stderr.decode("utf-8", "replace").strip().splitlines()
        return {"path": python, "error": (err[-1] if err else f"exit {r.returncode}")[:300]}
    return {**info, "path": python}


def interpreters(helper: Helper, folder: str = "~") -> list[dict]:
    """Every interpreter the host offers (PATH, conda, venvs under `folder`), probed. SshError / RemoteError
    when the host cannot be used."""
    found = helper.call("interpreters", folder or "~", timeout=60).get("interpreters") or []
    paths = [p for p in found if isinstance(p, str)][:MAX_INTERPRETERS]
    return [probe(helper, p) for p in paths]


__all__ = ["PROBE", "describe", "probe", "interpreters", "RemoteError", "SshError"]
