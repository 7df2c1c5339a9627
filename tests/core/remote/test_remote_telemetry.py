"""GPU telemetry of remote runs and the live view's clock, against the real sshd of conftest.py: the host's
interpreter is a wrapper (as a user's venv python would be) that puts tests/fake_gpu's fakes on the
host's PYTHONPATH / PATH - a fake pynvml, fake rocm-smi / amd-smi, a wall clock one hour off."""
from __future__ import annotations

import importlib.util
import json
import shutil
import sys
import time
from pathlib import Path

import pytest
from runner_scripts import TRAIN, write
from sshd_server import ALIAS

from core.remote.mirror import MirrorSampler
from core.remote.session import RemoteSession
from core.remote.ssh import SshHost
from core.runner.config import RunConfig, Schedule

REPO = Path(__file__).resolve().parents[3]
FAKE = REPO / "tests" / "fake_gpu"
COLUMNS = ("t_unix_ns,gpu,util_pct,mem_util_pct,mem_used_mb,mem_total_mb,power_w,temp_c,sm_clock_mhz,"
           "pcie_tx_mb_s,pcie_rx_mb_s,proc_mem_mb")
SKEW_S = -3600.0  # the host's clock is an hour behind


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"_t_{name}", REPO / "core" / "remote" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _bin(tmp_path: Path, *tools: str) -> Path:
    """A PATH folder holding only these fake tools."""
    folder = tmp_path / ("bin-" + "-".join(tools or ("none",)))
    folder.mkdir()
    for tool in tools:
        shutil.copy(FAKE / "bin" / tool, folder / tool)
    return folder


def _python(tmp_path: Path, path: Path, fake_nvml: bool, skew_s: float = 0.0) -> str:
    """The host's interpreter: sys.executable with PATH / PYTHONPATH / the clock skew set for it."""
    py = [str(FAKE / "py")] if fake_nvml or skew_s else []
    if not fake_nvml and py:  # the skew alone: sitecustomize without the fake pynvml
        only = tmp_path / "py-skew"
        only.mkdir()
        shutil.copy(FAKE / "py" / "sitecustomize.py", only)
        py = [str(only)]
    wrapper = tmp_path / "python-on-host"
    wrapper.write_text(f"#!/bin/sh\nPATH={path}:/usr/bin:/bin; export PATH\n"
                       + (f"PYTHONPATH={':'.join(py)}; export PYTHONPATH\n" if py else "")
                       + f"PTPROF_TEST_SKEW_S={skew_s}; export PTPROF_TEST_SKEW_S\n"
                       + f"exec {sys.executable} \"$@\"\n")
    wrapper.chmod(0o755)
    return str(wrapper)


def _feed(tmp_path, monkeypatch, *tools):
    monkeypatch.setenv("PATH", f"{_bin(tmp_path, *tools)}:/usr/bin:/bin")
    gpu, poll, backend = _load("agent_gpu"), _load("agent_gpu_poll"), importlib.import_module("core.gpu.backend")
    monkeypatch.setattr(poll.NvmlReader, "open", lambda self, *a: setattr(self, "reason", "no pynvml in test"))
    return gpu.open_feed(str(tmp_path / "nvml.csv"), 20.0, {}, backend, poll)


def _rows(feed, tmp_path, n=3):
    feed.start()
    deadline = time.monotonic() + 30
    while feed.samples < n and time.monotonic() < deadline:
        time.sleep(0.02)
    feed.stop()
    lines = (tmp_path / "nvml.csv").read_text().splitlines()
    assert lines[0] == COLUMNS
    return [ln.split(",") for ln in lines[1:]]


def test_rocm_smi_samples_in_the_local_columns(tmp_path, monkeypatch):
    feed = _feed(tmp_path, monkeypatch, "rocm-smi")
    assert feed.backend == "rocm-smi" and feed.names == ["AMD Instinct MI250X"] * 2
    assert feed.facts[0]["total_memory_bytes"] == 68702699520
    rows = _rows(feed, tmp_path)
    card0 = next(r for r in rows if r[1] == "0")
    assert card0[2:9] == ["87", "41", "20480", "65520", "412", "48", "1700"] and card0[9:] == ["", "", ""]
    card1 = next(r for r in rows if r[1] == "1")  # other key names (junction only, socket power), N/A blank
    assert card1[2:9] == ["5", "", "1024", "65520", "90", "39", "800"]


def test_amd_smi_is_preferred_and_read_with_units(tmp_path, monkeypatch):
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "0")
    feed = _feed(tmp_path, monkeypatch, "amd-smi", "rocm-smi")
    assert feed.backend == "amd-smi" and feed.names == ["AMD Instinct MI300X"]
    row = _rows(feed, tmp_path)[0]
    assert row[1:9] == ["0", "93", "57", "150000", "196592", "640", "71", "2100"]


def test_no_telemetry_is_one_line_naming_what_was_looked_for(tmp_path, monkeypatch):
    feed = _feed(tmp_path, monkeypatch)
    assert not feed.available
    assert feed.reason.startswith("no GPU telemetry on this host (") and "\n" not in feed.reason
    for what in ("nvidia-smi not found", "no pynvml", "amd-smi not found", "rocm-smi not found"):
        assert what in feed.reason


def test_a_broken_tool_falls_through_to_the_next(tmp_path, monkeypatch):
    folder = _bin(tmp_path, "rocm-smi")
    (folder / "amd-smi").write_text("#!/bin/sh\necho 'amd-smi: no GPU found' >&2\nexit 3\n")
    (folder / "amd-smi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}:/usr/bin:/bin")
    gpu, poll = _load("agent_gpu"), _load("agent_gpu_poll")
    monkeypatch.setattr(poll.NvmlReader, "open", lambda self, *a: setattr(self, "reason", "no pynvml in test"))
    feed = gpu.open_feed(str(tmp_path / "nvml.csv"), 10.0, {}, importlib.import_module("core.gpu.backend"), poll)
    assert feed.backend == "rocm-smi"


def test_mirror_puts_host_stamps_on_the_desktop_clock():
    m = MirrorSampler(["g"], "", clock_offset_ns=3600 * 10**9)
    host_now = time.time_ns() - 3600 * 10**9
    m.feed(f"{host_now},0,1,2,3,4,5,6,7,,,\n".encode())
    t, _ = m.rings[0].last()
    assert abs(t - time.time_ns()) < 5 * 10**9 and max(m.latencies_ns) < 5 * 10**9


def _run(sshd, tmp_path, python: str, steps: str = "30") -> RemoteSession:
    pytest.importorskip("torch")
    script = write(tmp_path, "train.py", TRAIN.replace("import sys, torch", "import sys, time, torch")
                   .replace("    i += 1\n", "    i += 1\n    time.sleep(0.05)\n"))
    cfg = RunConfig(script=str(script), args=(steps,), python=python, cwd=str(tmp_path),
                    env=(("OMP_NUM_THREADS", "1"),), schedule=Schedule(1, 1, 2, 1), out_dir=str(tmp_path / "b"))
    return RemoteSession(cfg, SshHost(ALIAS, config_file=str(sshd.config))).start()


def _finish(s: RemoteSession, timeout_s: float = 150) -> list[dict]:
    events = []
    deadline = time.monotonic() + timeout_s
    while not s.finished:
        events += s.poll().events
        assert time.monotonic() < deadline, "the remote run did not end"
        time.sleep(0.05)
    return events


@pytest.mark.timeout(240)
def test_nvml_on_the_host_and_a_skewed_host_clock(sshd, remote_root, tmp_path):
    """No nvidia-smi, pynvml importable in the host's interpreter: NVML samples it; the host's clock is an
    hour behind and the live view (rings, event times) is on the desktop's clock all the same."""
    s = _run(sshd, tmp_path, _python(tmp_path, _bin(tmp_path), fake_nvml=True, skew_s=SKEW_S))
    assert abs(s.clock_offset_ns / 1e9 + SKEW_S) < 2.0, s.clock_offset_ns  # desktop - host = +1 h
    assert s.sampler.names == ["Fake NVML H100 0", "Fake NVML H100 1"]
    events = _finish(s)
    assert s.exit_code == 0, s.state.exception
    run = json.loads((tmp_path / "b" / "run.json").read_text())
    assert run["gpu"]["backend"] == "nvml" and run["gpu"]["devices"] == s.sampler.names
    assert run["gpu"]["facts"][0]["total_memory_bytes"] == 80 << 30 and run["nvml"]["samples"] > 0
    lines = (tmp_path / "b" / "nvml.csv").read_text().splitlines()
    assert lines[0] == COLUMNS
    row = lines[1].split(",")
    assert row[1] == "0" and row[5:9] == ["81920", "300", "50", "1755"] and row[9:] == ["", "", ""]
    host_t = int(row[0])  # the bundle keeps the host's own clock (its trace and events use it too)
    assert abs(host_t / 1e9 - (time.time() + SKEW_S)) < 300
    desktop_t, _ = s.sampler.rings[0].last()  # the live rings: the desktop's clock
    assert abs(desktop_t / 1e9 - time.time()) < 300
    steps = [e for e in events if e["type"] == "step"]
    x = [(s.live_t_ns(e) - s.started_ns) / 1e9 for e in steps]
    assert steps and all(-5 < v < 300 for v in x), x[:3]  # the live plot's seconds since Run, not -3600
    assert max(s.sampler.latencies_ns) < 60 * 10**9


@pytest.mark.timeout(240)
def test_rocm_host_and_no_telemetry_host(sshd, remote_root, tmp_path):
    s = _run(sshd, tmp_path, _python(tmp_path, _bin(tmp_path, "rocm-smi"), fake_nvml=False), steps="6")
    assert s.sampler.available and s.sampler.names == ["AMD Instinct MI250X"] * 2
    _finish(s)
    run = json.loads((tmp_path / "b" / "run.json").read_text())
    assert s.exit_code == 0 and run["gpu"]["backend"] == "rocm-smi"
    assert any(ln.split(",")[2] == "87" for ln in (tmp_path / "b" / "nvml.csv").read_text().splitlines()[1:])
    # the same host without any tool (pynvml there or not, NVML finds no driver)
    second = tmp_path / "second"
    second.mkdir()
    s = _run(sshd, second, _python(second, _bin(second), fake_nvml=False), steps="4")
    assert not s.sampler.available
    assert s.sampler.reason.startswith("no GPU telemetry on this host") and "rocm-smi not found" in s.sampler.reason
    _finish(s)
    from core.commands.recording import status_line
    assert "no GPU telemetry on this host" in status_line(s)


@pytest.mark.parametrize("output", ["[" * 200_000, '{"card0": ' * 50_000, "null", '{"card0": {"GPU use (%)": [1, 2]}}',
                                    '{"card0": "x", "card99999999": {}}', "\x00\xff garbage"])
def test_hostile_tool_output_never_breaks_the_run(tmp_path, monkeypatch, output):
    """A host's rocm-smi that prints garbage (deep nesting, wrong types, junk bytes): no telemetry or blank
    cells, one line why, never an exception out of the feed."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (tmp_path / "out.txt").write_text(output)
    (folder / "rocm-smi").write_text(f"#!/bin/sh\ncat {tmp_path / 'out.txt'}\n")
    (folder / "rocm-smi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}:/usr/bin:/bin")
    gpu, poll = _load("agent_gpu"), _load("agent_gpu_poll")
    monkeypatch.setattr(poll.NvmlReader, "open", lambda self, *a: setattr(self, "reason", "no pynvml in test"))
    feed = gpu.open_feed(str(tmp_path / "nvml.csv"), 20.0, {}, importlib.import_module("core.gpu.backend"), poll)
    assert feed.reason.startswith("no GPU telemetry on this host") or feed.backend == "rocm-smi"
    assert "\n" not in feed.reason
    if feed.available:  # names came through: the samples are blank or numbers, never junk
        for row in _rows(feed, tmp_path, n=1):
            assert all(c == "" or float(c) == float(c) for c in row[2:])
