"""The remote pieces that need no server: what is uploaded (stdlib only, Python 3.9 syntax), host specs,
quoting, fetch's name check, the mirrored GPU rows."""
from __future__ import annotations

import ast
import shlex
import sys

import pytest

from core.remote.fetch import safe_name
from core.remote.mirror import MirrorSampler
from core.remote.runner import Helper, content_hash, runner_files
from core.remote.ssh import HostSpec, SshError, quote_command


def test_uploaded_runner_is_stdlib_only_and_python39():
    files = runner_files()
    assert {"agent.py", "agent_io.py", "agent_gpu.py", "child.py", "tree.py", "livestate.py", "guards.py",
            "trace_export.py"} <= set(files)
    stdlib = set(sys.stdlib_module_names) | {"__future__", "torch", "pynvml"}
    for name, data in files.items():
        tree = ast.parse(data, filename=name, feature_version=(3, 9))  # the host may have Python 3.9
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                mods = {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                mods = {node.module.split(".")[0]}
            else:
                continue
            # auth.py's `core.runner.protocol` is the uploaded protocol.py (agent.py puts it in sys.modules);
            # livestate.py's `core.terminal` falls back to the uploaded terminal.py
            allowed = stdlib | ({"core"} if name in ("auth.py", "livestate.py") else set())
            assert mods <= allowed, f"{name} imports {mods - allowed}: it runs on a host with nothing installed"
        assert b"slots=True" not in data, f"{name}: dataclass(slots=True) needs Python 3.10"


def test_content_hash_names_the_folder():
    files = runner_files()
    assert content_hash(files) == content_hash(dict(reversed(list(files.items()))))
    assert content_hash(runner_files({"agent_io.py": b"x = 1\n"})) != content_hash(files)


@pytest.mark.parametrize("text,host,user,port", [
    ("gpu-box", "gpu-box", "", 0), ("me@gpu.example.org", "gpu.example.org", "me", 0),
    ("me@10.0.0.5:2222", "10.0.0.5", "me", 2222), ("[::1]:22", "::1", "", 22)])
def test_host_specs(text, host, user, port):
    spec = HostSpec.parse(text)
    assert (spec.host, spec.user, spec.port) == (host, user, port)


@pytest.mark.parametrize("text", ["", "-oProxyCommand=sh", "a b", "me@", "host:99999", "x@-y", "h;rm -rf /"])
def test_bad_host_specs_are_one_line(text):
    with pytest.raises(SshError) as info:
        HostSpec.parse(text)
    assert "\n" not in str(info.value)


def test_remote_words_are_quoted():
    words = ["python3", "a b", "$(reboot)", "it's", ";rm -rf ~"]
    assert shlex.split(quote_command(words)) == words


def test_helper_command_quotes_every_argument():
    class FakeHost:
        label = "h"
    h = Helper(FakeHost(), python="/opt/my env/bin/python", root="~/.cache/pt prof")
    words = h.words("follow", "$(id)")
    assert words[:2] == ["sh", "-c"] and words[3:] == ["/opt/my env/bin/python", "follow", "$(id)"]
    assert '"$HOME"/' in words[2] and "'.cache/pt prof/runner-" in words[2]


@pytest.mark.parametrize("name,ok", [("run.json", True), ("traces/rank0.cycle1.pt.trace.json.gz", True),
                                     ("../x", False), ("/etc/passwd", False), ("a/../../b", False), ("./a", True),
                                     ("a//b", True), ("a\\b", False), ("a\0b", False), ("", False),
                                     ("/".join(["d"] * 20), False)])
def test_fetch_names(name, ok):
    assert (safe_name(name) is not None) == ok


def test_mirror_sampler_rows_in_any_cut():
    s = MirrorSampler(["GPU 0"], "", rate_hz=10)
    data = (b"t_unix_ns,gpu,util_pct,mem_util_pct,mem_used_mb,mem_total_mb,power_w,temp_c,sm_clock_mhz,"
            b"pcie_tx_mb_s,pcie_rx_mb_s,proc_mem_mb\n1700000000000000000,0,55,10,1000,80000,300,40,1980,,,\n"
            b"1700000000100000000,0,inf,x,1,2,3,4,5,,,\n99999999999999999999999,0,1,2,3,4,5,6,7,,,\n")
    for i in range(0, len(data), 7):
        s.feed(data[i:i + 7])
    assert s.samples == 2 and s.bad_rows == 1
    t, last = s.rings[0].last()
    assert t == 1700000000100000000 and last[0] != last[0] and last[2] == 1.0  # inf / junk -> NaN
    assert MirrorSampler([], "no GPU telemetry on this host (nvidia-smi not found)").reason.startswith("no GPU")


def test_ssh_config_hosts_with_includes(tmp_path, monkeypatch):
    from core.remote.hosts import config_hosts
    monkeypatch.setenv("HOME", str(tmp_path))
    ssh = tmp_path / ".ssh"
    (ssh / "conf.d").mkdir(parents=True)
    (ssh / "config").write_text("Include conf.d/*.conf\nHost gpu-box gpu2 *.corp !bad\n  HostName 10.0.0.1\n"
                                "Host=eq-host\nHost *\n  ServerAliveInterval 5\nInclude ~/.ssh/config\n")
    (ssh / "conf.d" / "a.conf").write_text("Host cluster-login\n  ProxyJump gpu-box\n")
    (ssh / "conf.d" / "b.conf").write_text("host  lower\n")
    assert config_hosts() == ["cluster-login", "lower", "gpu-box", "gpu2", "eq-host"]
    assert config_hosts(tmp_path / "missing") == []


def test_bundle_fetched_from_an_h100_host_loads_with_its_nvidia_smi_samples():
    """tests/data/bundles/remote_h100_smi: `ptprof record --host 127.0.0.1` on the H100 machine (sshd from
    carried .debs, bench/device_remote.sh), brought back by fetch: nvml.csv from nvidia-smi loads as the
    local sampler's does, on the trace's clock."""
    import json

    from helpers import REPO

    from core.trace.loader import load
    root = REPO / "tests" / "data" / "bundles" / "remote_h100_smi"
    run = json.loads((root / "run.json").read_text())
    assert run["gpu"]["backend"] == "nvidia-smi" and run["steps"] == 400 and run["status"] == "ok"
    ts = load(str(root), use_cache=False)
    names = {ts.nvml_strings[int(i)] for i in set(ts.nvml.series.tolist())}
    assert {"gpu0/gpu_util", "gpu0/mem_used_mb", "gpu0/power_w", "gpu0/sm_clock_mhz"} <= names
    assert not any(n.startswith("gpu0/pcie") for n in names)  # nvidia-smi has no PCIe throughput: blank, as NaN
    util = [v for i, v in zip(ts.nvml.series.tolist(), ts.nvml.value.tolist()) if ts.nvml_strings[int(i)] == "gpu0/gpu_util"]
    assert len(util) == run["nvml"]["samples"] == 139 and max(util) > 50  # 10 Hz, the GPU worked


def test_the_uploaded_runner_holds_every_module_its_files_load():
    """A module a sibling loads by file (switches.py -> switch_module.py) travels too: the uploaded runner
    missed them once and every remote run failed at import."""
    import re

    from core.remote.runner import runner_files
    files = runner_files()
    for name, body in files.items():
        if not name.endswith(".py"):
            continue
        for wanted in re.findall(rb'_(?:load_)?sibling\("(\w+)"\)|\b_load\("(\w+)"\)', body):
            module = (wanted[0] or wanted[1]).decode()
            assert f"{module}.py" in files, f"{name} loads {module}.py, which is not uploaded"
