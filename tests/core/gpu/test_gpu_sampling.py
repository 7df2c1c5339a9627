"""Ring buffer, fake backend sampler, nvml.csv round trip through the trace loader's reader."""
from __future__ import annotations

import math
import os
import time

import numpy as np

from core.gpu.backend import COLUMNS, FakeBackend, NoGpu, open_backend
from core.gpu.ring import RingBuffer
from core.gpu.sampler import Sampler, group_pids
from core.trace.extras import read_nvml_csv


def test_ring_wraps_oldest_first():
    r = RingBuffer(4, 2)
    assert len(r) == 0 and r.last() is None
    for i in range(6):
        r.append(i * 10, (i, i * 2))
    t, v = r.snapshot()
    assert t.tolist() == [20, 30, 40, 50] and v[:, 0].tolist() == [2, 3, 4, 5]
    assert r.total == 6 and r.last()[0] == 50
    t[0] = -1  # snapshots are copies
    assert r.snapshot()[0][0] == 20


def test_sampler_fake_backend_writes_csv_the_loader_reads(tmp_path):
    csv = tmp_path / "nvml.csv"
    s = Sampler(FakeBackend(2), rate_hz=50, csv_path=csv, pids=lambda: {os.getpid()}).start()
    time.sleep(0.5)
    s.stop()
    assert s.samples >= 10
    t, v = s.rings[1].snapshot()
    assert len(t) == s.samples and np.all(np.diff(t) > 0)
    assert np.all((v[:, 0] >= 0) & (v[:, 0] <= 100))
    header = csv.read_text().splitlines()[0]
    assert header.split(",")[:3] == ["t_unix_ns", "gpu", "util_pct"] and "sm_clock_mhz" in header
    base = int(t[0])
    table, strings = read_nvml_csv(csv, base)
    names = {strings[int(i)] for i in np.unique(table.series)}
    assert {"gpu0/gpu_util", "gpu1/mem_used_mb", "gpu1/power_w", "gpu0/pcie_tx_mb_s"} <= names
    util0 = table.value[table.series == strings.find("gpu0/gpu_util")]
    assert len(util0) == s.samples
    assert table.ts_ns.min() == 0  # aligned on the given wall-clock base
    assert s.cpu_fraction(0.5) < 0.2


def test_no_gpu_backend_says_why():
    s = Sampler(NoGpu("no NVIDIA driver")).start()
    assert not s.available and s.reason == "no NVIDIA driver"
    s.stop()
    b = open_backend()  # on CI: no driver -> NoGpu with a reason; on a GPU box: NVML
    assert b.available or b.reason
    b.close()


def test_fake_rows_have_every_column():
    rows = FakeBackend(1).sample({1}, slow=True)
    assert rows[0][0] == 0 and len(rows[0][1]) == len(COLUMNS)
    assert not any(math.isnan(x) for x in rows[0][1])


def test_group_pids_finds_this_process():
    assert os.getpid() in group_pids(os.getpgid(0))


def test_visible_devices_follow_cuda_visible_devices():
    """The run's device 0 is the first GPU it sees: NVML samples are taken and numbered that way."""
    from core.gpu.backend import visible_devices
    uuids = ["GPU-aaaa1111", "GPU-bbbb2222", "GPU-cccc3333", "GPU-dddd4444"]
    assert visible_devices(None, uuids) == [0, 1, 2, 3]
    assert visible_devices("2", uuids) == [2]
    assert visible_devices("3,1", uuids) == [3, 1]  # the run's cuda:0 is NVML GPU 3
    assert visible_devices("GPU-bbbb2222,GPU-aaaa", uuids) == [1, 0]  # UUIDs and unique prefixes
    assert visible_devices("cccc", uuids) == [2]
    assert visible_devices("1,7,2", uuids) == [1]  # CUDA stops at the first invalid entry
    assert visible_devices("", uuids) == [] and visible_devices("-1", uuids) == []
    assert visible_devices("GPU-", uuids) == []  # ambiguous prefix
    assert visible_devices("MIG-GPU-aaaa1111/1/0", uuids) == [0, 1, 2, 3]  # MIG: sample every GPU
