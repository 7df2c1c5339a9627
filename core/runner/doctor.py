"""Interpreter check: what the chosen Python can do, asked in a short subprocess of that Python.

    report = check("/path/to/venv/bin/python", compile_test=False)
    report.ok, report.messages   # [("error" | "warning" | "info", "one line"), ...]

The probe below runs in the user's interpreter: stdlib + torch only, prints one JSON object. It compiles on
any Python from 2.7 on (an old interpreter is told as such, not "not a working Python"); on 3.9+ it loads
core/runner/compat.py by path and asks which ptprof features this Python + torch supports.
"""
from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from core.runner.config import resolve_python

COMPAT = Path(__file__).resolve().with_name("compat.py")

PROBE = r'''
import ctypes, json, os, platform, sys
out = {"python": sys.executable, "python_version": platform.python_version(), "machine": platform.machine()}
MIN_PYTHON = (3, 9)
out["python_too_old"] = tuple(sys.version_info[:2]) < MIN_PYTHON
flags = set()
try:
    with open("/proc/cpuinfo") as fh:
        for line in fh:
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split()); break
except (OSError, IOError):
    pass
out["cpu_isa"] = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_tile", "fma") if f in flags]
import re
out["driver_version"] = None
try:
    import pynvml
    pynvml.nvmlInit()
    v = pynvml.nvmlSystemGetDriverVersion()
    out["driver_version"] = v.decode() if isinstance(v, bytes) else str(v)
    pynvml.nvmlShutdown()
except Exception:
    try:
        with open("/proc/driver/nvidia/version") as fh:
            m = re.search(r"\s(\d{3,}\.\d+(?:\.\d+)?)\s", fh.readline())
            out["driver_version"] = m.group(1) if m else None
    except (OSError, IOError):
        pass
try:
    v = ctypes.c_int()
    ctypes.CDLL("libcuda.so.1").cuDriverGetVersion(ctypes.byref(v))
    out["driver_cuda"] = "%d.%d" % (v.value // 1000, v.value % 1000 // 10)
except Exception:
    out["driver_cuda"] = None
try:
    import torch
except Exception as exc:
    out["torch_error"] = "%s: %s" % (type(exc).__name__, exc)
    print(json.dumps(out)); sys.exit(0)
out["torch_version"] = torch.__version__
out["cuda_runtime"] = torch.version.cuda
out["cuda_available"] = torch.cuda.is_available()
try:
    out["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
except Exception:
    out["cpu_capability"] = None
devs = []
if out["cuda_available"]:
    out["cudnn_version"] = torch.backends.cudnn.version()
    for i in range(torch.cuda.device_count()):
        p = torch.cuda.get_device_properties(i)
        devs.append({"index": i, "name": p.name, "total_mb": round(p.total_memory / 2**20),
                     "capability": "%d.%d" % (p.major, p.minor), "sms": p.multi_processor_count})
out["devices"] = devs
if not out["python_too_old"] and len(sys.argv) > 1:
    try:
        import importlib.util
        spec = importlib.util.spec_from_file_location("_ptprof_compat", sys.argv[1])
        compat = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(compat)
        out["torch_too_old"] = compat.too_old(torch)
        out["features"] = compat.features(torch, out["cuda_available"])
    except Exception as exc:
        out["features_error"] = "%s: %s" % (type(exc).__name__, exc)
if os.environ.get("PTPROF_DOCTOR_COMPILE") == "1":
    import time
    t0 = time.perf_counter()
    try:
        dev = "cuda" if out["cuda_available"] else "cpu"
        f = torch.compile(lambda x: torch.relu(x) * 2 + 1)
        f(torch.randn(64, device=dev))
        out["compile"] = {"ok": True, "seconds": round(time.perf_counter() - t0, 2)}
    except Exception as exc:
        out["compile"] = {"ok": False, "error": "%s: %s" % (type(exc).__name__, str(exc).splitlines()[0][:300])}
print(json.dumps(out))
'''


@dataclass(frozen=True, slots=True)
class DoctorReport:
    python: str
    ok: bool  # torch importable: a run can start
    facts: dict = field(default_factory=dict)
    messages: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict:
        return {"python": self.python, "ok": self.ok, "facts": self.facts, "messages": [list(m) for m in self.messages]}


def check(python: str, compile_test: bool = False, timeout_s: float = 60.0) -> DoctorReport:
    exe = resolve_python(python)
    if exe is None:
        return DoctorReport(python, False, {}, (("error", f"interpreter not found or not executable: {python}"),))
    env = None
    if compile_test:
        import os
        env = {**os.environ, "PTPROF_DOCTOR_COMPILE": "1"}
    try:
        r = subprocess.run([exe, "-c", PROBE, str(COMPAT)], capture_output=True, text=True,
                           timeout=timeout_s + (120 if compile_test else 0), env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return DoctorReport(exe, False, {}, (("error", f"{exe} did not answer within {timeout_s:.0f} s"),))
    except OSError as exc:
        return DoctorReport(exe, False, {}, (("error", f"cannot run {exe}: {exc.strerror or exc}"),))
    try:
        facts = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        tail = (r.stderr.strip().splitlines() or ["no output"])[-1]
        return DoctorReport(exe, False, {}, (("error", f"{exe} is not a working Python: {tail}"),))
    ok = "torch_version" in facts and not facts.get("python_too_old") and not facts.get("torch_too_old")
    return DoctorReport(exe, ok, facts, tuple(messages(facts)))


def messages(f: dict) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    py = f.get("python", "?")
    if f.get("python_too_old"):
        out.append(("error", f"Python {f.get('python_version')} at {py} is too old for ptprof's runner: it needs "
                              "Python 3.9 or newer with torch 2.1+"))
        return out
    if "torch_error" in f:
        out.append(("error", f"torch not installed in {py} ({f['torch_error']})"))
        return out
    out.append(("info", f"Python {f.get('python_version')} · torch {f.get('torch_version')}"
                        f" (CUDA runtime {f.get('cuda_runtime') or 'none'})"))
    if f.get("cuda_available"):
        for d in f.get("devices", []):
            out.append(("info", f"GPU {d['index']}: {d['name']} · {d['total_mb'] / 1024:.0f} GiB · sm_{d['capability']}"))
        drv = f.get("driver_version") or "?"
        out.append(("info", f"driver {drv} (CUDA {f.get('driver_cuda') or '?'}) · cuDNN {f.get('cudnn_version')}"))
    else:
        why = "no NVIDIA driver" if not f.get("driver_version") and not f.get("driver_cuda") else \
            ("this torch is a CPU build" if not f.get("cuda_runtime") else "driver/runtime mismatch or no GPU visible")
        out.append(("warning", f"CUDA not available: running on CPU ({why})"))
    isa = f.get("cpu_isa") or []
    out.append(("info", "CPU: " + (", ".join(i.upper() for i in isa) or "no AVX2") +
                (f" · torch uses {f['cpu_capability']}" if f.get("cpu_capability") else "")))
    c = f.get("compile")
    if c is not None:
        out.append(("info", f"torch.compile works ({c['seconds']} s)") if c.get("ok")
                   else ("warning", f"torch.compile failed: {c.get('error')}"))
    out += feature_messages(f)
    return out


def feature_messages(f: dict) -> list[tuple[str, str]]:
    """What ptprof can do with this Python + torch (core/runner/compat.py features): one line of what works,
    one warning per feature this torch lacks (and why), an error when the torch is too old to run at all."""
    if f.get("torch_too_old"):
        return [("error", f["torch_too_old"])]
    feats = f.get("features")
    if not isinstance(feats, dict):
        return [("warning", f"could not ask which ptprof features work here ({f['features_error']})")] \
            if f.get("features_error") else []
    on = [n.replace("_", " ") for n, v in feats.items() if v.get("on") is True]
    na = [n.replace("_", " ") for n, v in feats.items() if v.get("on") is None]
    out = [("info", "ptprof features: " + (", ".join(on) or "none")
            + (f" (CUDA only, not used here: {', '.join(na)})" if na else ""))]
    out += [("warning", f"{n.replace('_', ' ')} off - {v.get('why')}")
            for n, v in feats.items() if v.get("on") is False]
    return out
