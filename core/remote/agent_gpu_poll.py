"""The polled telemetry sources of a remote host (stdlib only, Python >= 3.9; uploaded with agent.py and
driven by agent_gpu.PollFeed): NVML in this interpreter, `amd-smi`, `rocm-smi`.

A reader: `open(visible, visible_devices)` fills `names`, `facts`, `physical` (the run's GPUs, in its own
numbering) or `reason` (one line); `sample(slow)` -> [(gpu, [cells in core.gpu.backend.COLUMNS order])],
a cell "" where the source has no such value; `close()`.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

TOOL_TIMEOUT_S = 10.0
_MB = 1 << 20


def _cell(value) -> str:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return ""
    return "" if v != v or v in (float("inf"), float("-inf")) else f"{v:g}"


class _Reader:
    backend = "none"

    def __init__(self):
        self.names: list[str] = []
        self.facts: list[dict] = []
        self.physical: list[int] = []
        self.reason = ""

    def close(self) -> None:
        pass


class NvmlReader(_Reader):
    """pynvml in the run's interpreter (nvidia-ml-py), through core/gpu/backend.py's NvmlBackend."""

    backend = "nvml"

    def __init__(self, backend_mod):
        super().__init__()
        self._mod = backend_mod
        self._b = None

    def open(self, visible, visible_devices) -> None:
        try:
            import pynvml  # noqa: F401  (the user's interpreter may have nvidia-ml-py)
        except ImportError:
            self.reason = f"no pynvml in {sys.executable}"
            return
        try:
            self._b = self._mod.NvmlBackend(visible)
        except Exception as exc:  # no driver, no library: NVMLError's text
            self.reason = f"NVML: {str(exc)[:200] or type(exc).__name__}"
            return
        self.names = self._b.device_names()
        self.facts = self._b.device_facts()
        self.physical = list(self._b.physical)
        if not self.names:
            self.reason = "NVML sees no GPU of this run"

    def sample(self, slow: bool):
        return [(gpu, [_cell(v) for v in values]) for gpu, values in self._b.sample(None, slow)]

    def close(self) -> None:
        if self._b is not None:
            self._b.close()


def _run_json(argv: list):
    """A tool's --json answer (any JSON), or raises RuntimeError with one line."""
    try:
        out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                             timeout=TOOL_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RuntimeError(f"{argv[0]} failed: {exc}") from None
    text = out.stdout.decode("utf-8", "replace")
    start = min([i for i in (text.find("{"), text.find("[")) if i >= 0], default=-1)  # warnings before the JSON
    if out.returncode != 0 or start < 0:
        first = (out.stderr or out.stdout).decode("utf-8", "replace").strip().splitlines()
        raise RuntimeError(f"{argv[0].rsplit('/', 1)[-1]}: {first[0][:200] if first else 'exit %d' % out.returncode}")
    try:
        return json.loads(text[start:])
    except ValueError:
        raise RuntimeError(f"{argv[0].rsplit('/', 1)[-1]} printed no JSON") from None


def _amount(value, mem_unit: str = ""):
    """12, "12", "12 %", "(1900Mhz)", {"value": 12, "unit": "W"} -> 12.0; None for "N/A" and the like.
    `mem_unit`: a memory amount, returned in MB, read in its own unit (B, KB/KiB, MB/MiB, GB/GiB) or,
    when it has none, in mem_unit."""
    unit = ""
    if isinstance(value, dict):
        unit, value = str(value.get("unit") or ""), value.get("value")
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    else:
        m = re.search(r"(-?\d+(?:\.\d+)?)\s*([A-Za-z%]*)", str(value))
        if not m:
            return None
        number, unit = float(m.group(1)), unit or m.group(2)
    if mem_unit:
        scale = {"b": 1 / _MB, "kb": 1 / 1024, "kib": 1 / 1024, "mb": 1.0, "mib": 1.0, "gb": 1024.0, "gib": 1024.0}
        number *= scale.get((unit or mem_unit).lower(), 1.0)
    return number


def _first(d: dict, *keys):
    for key in keys:
        if isinstance(d, dict) and d.get(key) not in (None, "", "N/A"):
            return d[key]
    return None


class _SmiReader(_Reader):
    tool = ""

    def __init__(self):
        super().__init__()
        self._exe = shutil.which(self.tool)
        self._n = 0

    def open(self, visible, visible_devices) -> None:
        if self._exe is None:
            self.reason = f"{self.tool} not found"
            return
        try:
            devices = self.devices()
        except RuntimeError as exc:
            self.reason = str(exc)
            return
        self.physical = visible_devices(visible, [""] * len(devices))  # HIP_VISIBLE_DEVICES: indices
        for i, phys in enumerate(self.physical):
            name, total_mb = devices[phys]
            self.names.append(name)
            self.facts.append({"index": i, "name": name, "total_memory_bytes": int(total_mb * _MB) if total_mb else None,
                               "max_sm_clock_mhz": None, "max_mem_clock_mhz": None})
        if not self.names:
            self.reason = f"{self.tool} sees no GPU of this run"

    def sample(self, slow: bool):
        rows = self.rows()
        out = []
        for i, phys in enumerate(self.physical):
            if phys < len(rows) and rows[phys] is not None:
                util, mem_util, used, total, power, temp, clock = rows[phys]
                out.append((i, [_cell(util), _cell(mem_util), _cell(used), _cell(total), _cell(power), _cell(temp),
                                _cell(clock), "", "", ""]))
        return out


class RocmSmiReader(_SmiReader):
    """`rocm-smi ... --json`: {"card0": {"GPU use (%)": "12", ...}, ...} (key names differ across ROCm
    releases: each value is looked up under the names they used)."""

    backend = tool = "rocm-smi"
    QUERY = ("--showuse", "--showmemuse", "--showpower", "--showtemp", "--showmeminfo", "vram", "--showclocks", "--json")

    def _cards(self, data) -> list:
        cards = [(int(k[4:]), v) for k, v in (data.items() if isinstance(data, dict) else [])
                 if re.fullmatch(r"card\d{1,3}", str(k)) and isinstance(v, dict)]
        return [v for _, v in sorted(cards, key=lambda kv: kv[0])]

    def devices(self):
        names = self._cards(_run_json([self._exe, "--showproductname", "--showmeminfo", "vram", "--json"]))
        return [(str(_first(c, "Card Series", "Card series", "Card model", "Card Model", "Device Name") or "AMD GPU"),
                 _amount(_first(c, "VRAM Total Memory (B)"), "B")) for c in names]

    def rows(self):
        out = []
        for c in self._cards(_run_json([self._exe, *self.QUERY])):
            out.append((_amount(_first(c, "GPU use (%)")),
                        _amount(_first(c, "GPU Memory Read/Write Activity (%)", "GPU memory use (%)",
                                       "GPU Memory Allocated (VRAM%)")),
                        _amount(_first(c, "VRAM Total Used Memory (B)"), "B"),
                        _amount(_first(c, "VRAM Total Memory (B)"), "B"),
                        _amount(_first(c, "Average Graphics Package Power (W)",
                                       "Current Socket Graphics Package Power (W)")),
                        _amount(_first(c, "Temperature (Sensor edge) (C)", "Temperature (Sensor junction) (C)")),
                        _amount(_first(c, "sclk clock speed:"))))
        return out


class AmdSmiReader(_SmiReader):
    """`amd-smi metric ... --json`: [{"gpu": 0, "usage": {"gfx_activity": {"value": 12, "unit": "%"}}, ...}]
    (ROCm 6.3+ wraps the list as {"gpu_data": [...]}; older releases print bare values)."""

    backend = tool = "amd-smi"

    @staticmethod
    def _gpus(data) -> list:
        if isinstance(data, dict):
            data = data.get("gpu_data", [data])
        gpus = [g for g in data if isinstance(g, dict)] if isinstance(data, list) else []
        return sorted(gpus, key=lambda g: g.get("gpu") if isinstance(g.get("gpu"), int) else 0)

    def devices(self):
        out = []
        for g in self._gpus(_run_json([self._exe, "static", "--asic", "--vram", "--json"])):
            asic, vram = g.get("asic") or {}, g.get("vram") or {}
            out.append((str(_first(asic, "market_name", "marketing_name") or "AMD GPU"),
                        _amount(_first(vram, "size", "vram_size"), "MB")))
        return out

    def rows(self):
        out = []
        for g in self._gpus(_run_json([self._exe, "metric", "--usage", "--power", "--temperature", "--clock",
                                       "--mem-usage", "--json"])):
            usage, power, temp = g.get("usage") or {}, g.get("power") or {}, g.get("temperature") or {}
            mem, clock = g.get("mem_usage") or {}, g.get("clock") or {}
            gfx = _first(clock, "gfx_0", "GFX_0", "gfx")
            out.append((_amount(_first(usage, "gfx_activity", "gfx_usage")),
                        _amount(_first(usage, "umc_activity", "mem_activity")),
                        _amount(_first(mem, "used_vram"), "MB"), _amount(_first(mem, "total_vram"), "MB"),
                        _amount(_first(power, "socket_power", "average_socket_power")),
                        _amount(_first(temp, "edge", "hotspot")),
                        _amount(_first(gfx, "clk", "cur_clk") if isinstance(gfx, dict) else gfx)))
        return out
