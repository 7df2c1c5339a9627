"""GPU telemetry of a remote run, on its host (stdlib only, Python >= 3.9; uploaded with core/remote/agent.py).

Whatever the host has, tried in this order (`open_feed`), first one that sees a GPU of the run wins:

1. `nvidia-smi --query-gpu=... --format=csv,noheader,nounits -lms N` next to the run (SmiFeed);
2. NVML in the run's interpreter when `pynvml` is importable there (agent_gpu_poll.NvmlFeed, through
   core/gpu/backend.py's NvmlBackend, as a local run samples);
3. ROCm: `amd-smi` or `rocm-smi` polled (agent_gpu_poll.AmdSmiFeed / RocmSmiFeed);
4. none: `reason` is one line, "no GPU telemetry on this host (...)", naming what was looked for.

Every feed writes the bundle's nvml.csv in the local sampler's format (core/gpu/sampler.py:
`t_unix_ns,gpu,<core.gpu.backend.COLUMNS>`, blank = not supported), stamped with this host's wall clock
when the sample is taken - the clock the run's trace and events use, as locally. GPUs are numbered as
the run sees them (CUDA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES on ROCm; core/gpu/backend.py visible_devices).
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


def cell(value) -> str:
    """A float (NaN = unsupported) or None as an nvml.csv cell."""
    if value is None or value != value:
        return ""
    return f"{float(value):g}"


class Feed:
    """What every feed has: the run's GPUs (names, facts, physical indices) or the reason there are none,
    and the nvml.csv it writes."""

    backend = "none"

    def __init__(self, csv_path: str, rate_hz: float, visible, visible_devices):
        self.csv_path = csv_path
        self.interval_s = max(0.02, 1.0 / max(rate_hz, 0.001))
        self.visible = visible  # CUDA_VISIBLE_DEVICES (HIP_VISIBLE_DEVICES on ROCm), None = unset
        self._visible_devices = visible_devices  # core/gpu/backend.py's, loaded by path
        self.names: list[str] = []
        self.facts: list[dict] = []
        self.physical: list[int] = []
        self.reason = ""
        self.samples = 0
        self._thread = None
        self._stop = threading.Event()

    @property
    def available(self) -> bool:
        return bool(self.names)

    def open(self) -> "Feed":
        return self

    def start(self) -> "Feed":
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _csv(self):
        fh = open(self.csv_path, "w")
        fh.write(CSV_HEADER)
        fh.flush()
        return fh

    def write(self, fh, t_ns: int, gpu: int, cells: list) -> None:
        cells = list(cells)[:N_COLUMNS] + [""] * max(0, N_COLUMNS - len(cells))
        fh.write(f"{t_ns},{gpu}," + ",".join(cells) + "\n")
        fh.flush()  # the live plot reads this file over SSH: every sample as it comes
        self.samples += 1


class SmiFeed(Feed):
    backend = "nvidia-smi"

    def __init__(self, csv_path: str, rate_hz: float, visible, visible_devices):
        super().__init__(csv_path, rate_hz, visible, visible_devices)
        self.interval_ms = max(20, int(round(self.interval_s * 1000)))
        self._proc = None
        self._smi = shutil.which("nvidia-smi")

    def open(self) -> "SmiFeed":
        if self._smi is None:
            self.reason = "nvidia-smi not found"
            return self
        try:
            out = subprocess.run([self._smi, "--query-gpu=index,uuid,name,memory.total,clocks.max.sm,clocks.max.memory",
                                  "--format=csv,noheader,nounits"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 stdin=subprocess.DEVNULL, timeout=20)
        except (OSError, subprocess.TimeoutExpired) as exc:
            self.reason = f"nvidia-smi failed: {exc}"
            return self
        if out.returncode != 0:
            first = (out.stdout or out.stderr).decode("utf-8", "replace").strip().splitlines()
            self.reason = f"nvidia-smi: {first[0] if first else 'exit %d' % out.returncode}"
            return self
        rows = []
        for line in out.stdout.decode("utf-8", "replace").splitlines():
            cells = [c.strip() for c in line.split(",")]
            if len(cells) >= 6 and cells[0].isdigit():
                rows.append(cells)
        self.physical = self._visible_devices(self.visible, [r[1] for r in rows])
        for i, phys in enumerate(self.physical):
            cells = rows[phys]
            total = _number(cells[3])
            self.names.append(cells[2])
            self.facts.append({"index": i, "name": cells[2],
                               "total_memory_bytes": int(float(total) * (1 << 20)) if total else None,
                               "max_sm_clock_mhz": int(float(_number(cells[4]))) if _number(cells[4]) else None,
                               "max_mem_clock_mhz": int(float(_number(cells[5]))) if _number(cells[5]) else None})
        if not self.names:
            self.reason = "nvidia-smi sees no GPU of this run"
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
        with self._csv() as fh:
            for raw in iter(self._proc.stdout.readline, b""):
                t_ns = time.time_ns()
                cells = raw.decode("utf-8", "replace").split(",")
                if len(cells) != len(LIVE_QUERY) or not cells[0].strip().isdigit():
                    continue
                gpu = ours.get(int(cells[0]))
                if gpu is None:
                    continue
                self.write(fh, t_ns, gpu, [_number(c) for c in cells[1:]])

    def stop(self) -> None:
        if self._proc is not None:
            try:
                self._proc.terminate()
                self._proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
        super().stop()


class PollFeed(Feed):
    """A reader of agent_gpu_poll.py (NVML in this interpreter, amd-smi, rocm-smi) asked every interval
    from a thread; a sample is stamped when the reader returns it, as core/gpu/sampler.py stamps."""

    def __init__(self, reader, csv_path: str, rate_hz: float, visible, visible_devices):
        super().__init__(csv_path, rate_hz, visible, visible_devices)
        self.reader = reader
        self.backend = reader.backend
        self.errors = 0

    def open(self) -> "PollFeed":
        self.reader.open(self.visible, self._visible_devices)
        self.names, self.facts, self.physical = list(self.reader.names), list(self.reader.facts), list(self.reader.physical)
        self.reason = self.reader.reason
        return self

    def start(self) -> "PollFeed":
        if self.available:
            self._thread = threading.Thread(target=self._loop, name=f"ptprof-{self.backend}", daemon=True)
            self._thread.start()
        return self

    def _loop(self) -> None:
        next_t, last_slow = time.monotonic(), -1e9
        with self._csv() as fh:
            while not self._stop.is_set():
                slow = time.monotonic() - last_slow >= 1.0  # PCIe counters: once a second, as locally
                if slow:
                    last_slow = time.monotonic()
                try:
                    rows = self.reader.sample(slow)
                except Exception:  # a flaky driver or tool must not end the run's telemetry
                    self.errors += 1
                    rows = []
                t_ns = time.time_ns()
                for gpu, cells in rows:
                    self.write(fh, t_ns, gpu, cells)
                next_t += self.interval_s
                delay = next_t - time.monotonic()
                if delay < 0:  # a slow tool (rocm-smi takes ~0.1-0.5 s): skip ticks instead of bursting
                    next_t, delay = time.monotonic(), 0
                self._stop.wait(delay)
        self.reader.close()


def open_feed(csv_path: str, rate_hz: float, env: dict, backend_mod, poll_mod) -> Feed:
    """The first telemetry source of this host that sees a GPU of the run, opened (not started); else a
    Feed without GPUs whose `reason` is one line naming what was looked for."""
    cuda_visible = env.get("CUDA_VISIBLE_DEVICES")
    hip_visible = env.get("HIP_VISIBLE_DEVICES", cuda_visible)
    why = []
    makers = [lambda: SmiFeed(csv_path, rate_hz, cuda_visible, backend_mod.visible_devices)]
    for reader, visible in ((lambda: poll_mod.NvmlReader(backend_mod), cuda_visible),
                            (poll_mod.AmdSmiReader, hip_visible), (poll_mod.RocmSmiReader, hip_visible)):
        makers.append(lambda reader=reader, visible=visible: PollFeed(reader(), csv_path, rate_hz, visible,
                                                                      backend_mod.visible_devices))
    for make in makers:
        feed = make()
        try:
            feed.open()
        except Exception as exc:  # a broken tool or module: the next source, never a failed run
            feed.names, feed.reason = [], f"{feed.backend} failed: {type(exc).__name__}: {str(exc)[:200]}"
        if feed.available:
            return feed
        if feed.reason:
            why.append(feed.reason)
    none = Feed(csv_path, rate_hz, cuda_visible, backend_mod.visible_devices)
    none.reason = f"{NO_TELEMETRY} ({'; '.join(why)})" if why else NO_TELEMETRY
    return none
