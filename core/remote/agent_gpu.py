"""GPU telemetry of a remote run, on its host (stdlib only, Python >= 3.9; uploaded with core/remote/agent.py).

`nvidia-smi --query-gpu=... --format=csv,noheader,nounits -lms N` runs next to the run and each line it
prints becomes one row of the bundle's nvml.csv, in the local sampler's format (core/gpu/sampler.py:
`t_unix_ns,gpu,<core.gpu.backend.COLUMNS>`, blank = not supported), stamped with this host's wall
clock when the line arrives - the clock the run's trace and events use, as locally. GPUs are numbered
as the run sees them (CUDA_VISIBLE_DEVICES, core/gpu/backend.py visible_devices). Without nvidia-smi
there is no telemetry and `reason` says so in one line.
"""
from __future__ import annotations

import shutil
import subprocess
import threading
import time

# the columns of core.gpu.backend.COLUMNS that nvidia-smi has, in that order; pcie_tx/rx and proc_mem stay blank
LIVE_QUERY = ("index", "utilization.gpu", "utilization.memory", "memory.used", "memory.total", "power.draw",
              "temperature.gpu", "clocks.sm")
N_COLUMNS = 10  # len(core.gpu.backend.COLUMNS)
CSV_HEADER = ("t_unix_ns,gpu,util_pct,mem_util_pct,mem_used_mb,mem_total_mb,power_w,temp_c,sm_clock_mhz,"
              "pcie_tx_mb_s,pcie_rx_mb_s,proc_mem_mb\n")
NO_TELEMETRY = "no GPU telemetry on this host"


def _number(text: str) -> str:
    """'23', '70.05 W' -> '23', '70.05'; '[N/A]', '[Not Supported]' -> '' (blank, as the local sampler writes)."""
    text = text.strip()
    try:
        value = float(text.split()[0]) if text else float("nan")
    except (ValueError, IndexError):
        return ""
    return "" if value != value else f"{value:g}"


class SmiFeed:
    def __init__(self, csv_path: str, rate_hz: float, cuda_visible, visible_devices):
        self.csv_path = csv_path
        self.interval_ms = max(20, int(round(1000.0 / max(rate_hz, 0.001))))
        self.cuda_visible = cuda_visible
        self._visible_devices = visible_devices  # core/gpu/backend.py's, loaded by path
        self.names: list[str] = []
        self.facts: list[dict] = []
        self.physical: list[int] = []
        self.reason = ""
        self.samples = 0
        self._proc = None
        self._thread = None
        self._smi = shutil.which("nvidia-smi")

    @property
    def available(self) -> bool:
        return bool(self.names)

    def open(self) -> "SmiFeed":
        if self._smi is None:
            self.reason = f"{NO_TELEMETRY} (nvidia-smi not found)"
            return self
        try:
            out = subprocess.run([self._smi, "--query-gpu=index,uuid,name,memory.total,clocks.max.sm,clocks.max.memory",
                                  "--format=csv,noheader,nounits"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 stdin=subprocess.DEVNULL, timeout=20)
        except (OSError, subprocess.TimeoutExpired) as exc:
            self.reason = f"{NO_TELEMETRY} (nvidia-smi failed: {exc})"
            return self
        if out.returncode != 0:
            first = (out.stdout or out.stderr).decode("utf-8", "replace").strip().splitlines()
            self.reason = f"{NO_TELEMETRY} (nvidia-smi: {first[0] if first else 'exit %d' % out.returncode})"
            return self
        rows = []
        for line in out.stdout.decode("utf-8", "replace").splitlines():
            cells = [c.strip() for c in line.split(",")]
            if len(cells) >= 6 and cells[0].isdigit():
                rows.append(cells)
        self.physical = self._visible_devices(self.cuda_visible, [r[1] for r in rows])
        for i, phys in enumerate(self.physical):
            cells = rows[phys]
            total = _number(cells[3])
            self.names.append(cells[2])
            self.facts.append({"index": i, "name": cells[2],
                               "total_memory_bytes": int(float(total) * (1 << 20)) if total else None,
                               "max_sm_clock_mhz": int(float(_number(cells[4]))) if _number(cells[4]) else None,
                               "max_mem_clock_mhz": int(float(_number(cells[5]))) if _number(cells[5]) else None})
        if not self.names:
            self.reason = f"{NO_TELEMETRY} (nvidia-smi sees no GPU of this run)"
        return self

    def start(self) -> "SmiFeed":
        if not self.available:
            return self
        try:
            self._proc = subprocess.Popen(
                [self._smi, "--query-gpu=" + ",".join(LIVE_QUERY), "--format=csv,noheader,nounits",
                 f"-lms={self.interval_ms}"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                stdin=subprocess.DEVNULL)
        except OSError as exc:
            self.reason = f"{NO_TELEMETRY} (nvidia-smi failed: {exc})"
            self.names = []
            return self
        self._thread = threading.Thread(target=self._pump, name="ptprof-smi", daemon=True)
        self._thread.start()
        return self

    def _pump(self) -> None:
        ours = {phys: i for i, phys in enumerate(self.physical)}
        with open(self.csv_path, "w") as fh:
            fh.write(CSV_HEADER)
            fh.flush()
            for raw in iter(self._proc.stdout.readline, b""):
                t_ns = time.time_ns()
                cells = raw.decode("utf-8", "replace").split(",")
                if len(cells) != len(LIVE_QUERY) or not cells[0].strip().isdigit():
                    continue
                gpu = ours.get(int(cells[0]))
                if gpu is None:
                    continue
                values = [_number(c) for c in cells[1:]] + [""] * (N_COLUMNS - len(LIVE_QUERY) + 1)
                fh.write(f"{t_ns},{gpu}," + ",".join(values) + "\n")
                fh.flush()  # the live plot reads this file over SSH: every sample as it comes
                self.samples += 1

    def stop(self) -> None:
        if self._proc is not None:
            try:
                self._proc.terminate()
                self._proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
        if self._thread is not None:
            self._thread.join(timeout=5)
