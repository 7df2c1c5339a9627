"""Runs on an SSH host, end to end against a real OpenSSH server on 127.0.0.1 (conftest.py): no mock of
the transport. `ptprof record --host` and `ptprof remote` as a user runs them (real processes), the
RemoteSession API where a test must act mid-run (restart sshd)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from runner_scripts import TRAIN, write
from sshd_server import ALIAS

from core.remote.session import RemoteSession
from core.remote.ssh import SshHost
from core.runner.config import RunConfig, Schedule
from core.runner.protocol import read_events

pytest.importorskip("torch")
REPO = Path(__file__).resolve().parents[3]
SLOW = """
import sys, time, torch
from torch import nn
steps = int(sys.argv[1])
model = nn.Linear(16, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(steps):
    opt.zero_grad(); model(torch.randn(8, 16)).sum().backward(); opt.step()
    print("step", i, flush=True)
    time.sleep(0.15)
print("finished", steps)
"""


def cli(*args, cwd=None, timeout=150, env=None):
    e = dict(os.environ, PYTHONPATH=str(REPO), **(env or {}))
    r = subprocess.run([sys.executable, "-m", "core.cli", *args], cwd=cwd, capture_output=True, text=True,
                       timeout=timeout, env=e)
    return r.returncode, r.stdout, r.stderr


def host_args(sshd, config=None):
    return ["--host", ALIAS, "--ssh-config", str(config or sshd.config)]


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def _cfg(script: Path, *args, out: Path, schedule=Schedule(1, 1, 2, 1)) -> RunConfig:
    return RunConfig(script=str(script), args=tuple(args), python=sys.executable, cwd=str(script.parent),
                     env=(("OMP_NUM_THREADS", "1"),), schedule=schedule, out_dir=str(out))


def _wait(predicate, timeout_s: float, session=None, what: str = "") -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if session is not None:
            session.poll()
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.mark.timeout(200)
def test_record_host_bundle_matches_a_local_run(sshd, remote_root, tmp_path):
    script = write(tmp_path, "train.py", TRAIN)
    common = ["--wait", "1", "--warmup", "1", "--active", "2", "--env", "OMP_NUM_THREADS=1", "--python", sys.executable]
    code, _, err_local = cli("record", *common, "--out", str(tmp_path / "local"), str(script), "8")
    assert code == 0, err_local
    code, out, err = cli("record", *host_args(sshd), *common, "--cwd", str(tmp_path), "--out",
                         str(tmp_path / "remote"), "train.py", "8")
    assert code == 0, err
    assert "Traceback" not in err and "finished 8" in out
    local, remote = tmp_path / "local", tmp_path / "remote"
    assert _files(local) == _files(remote)  # same files: run.json, events, logs, traces/rank0.cycle1...
    rl, rr = (json.loads((p / "run.json").read_text()) for p in (local, remote))
    for key in ("status", "exit_code", "steps", "cycles", "step_source", "traces", "format", "argv"):
        assert rl[key] == rr[key], key
    assert rr["remote"]["id"] and rr["gpu"]["reason"].startswith("no GPU telemetry on this host")
    steps = lambda root: [e["step"] for e in read_events(str(root / "events.jsonl")) if e["type"] == "step"]  # noqa: E731
    assert steps(local) == steps(remote) == list(range(1, 9))
    findings = []
    for root in (local, remote):
        code, out, err = cli("analyze", "--json", str(root))
        assert code in (0, 1), err
        findings.append(sorted(f["rule"] for f in json.loads(out)["findings"]))
    assert findings[0] == findings[1]
    code, out, err = cli("remote", "runs", ALIAS, "--ssh-config", str(sshd.config))
    assert code == 0 and rr["remote"]["id"] in out and "finished" in out, err


@pytest.mark.timeout(150)
def test_live_events_then_stop(sshd, remote_root, tmp_path):
    script = write(tmp_path, "slow.py", SLOW)
    s = RemoteSession(_cfg(script, "400", out=tmp_path / "b"), SshHost(ALIAS, config_file=str(sshd.config))).start()
    seen, lines = [], []

    def live():
        up = s.poll()
        seen.extend(e for e in up.events if e["type"] == "step")
        lines.extend(up.lines)
        return len(seen) >= 3
    _wait(live, 90, what="three live steps")
    assert not s.finished and any("step" in text for _, text in lines)  # the console comes live too
    s.request_stop()
    _wait(lambda: s.finished, 90, session=s, what="the stop")
    assert s.exit_code == 130
    run = json.loads((tmp_path / "b" / "run.json").read_text())
    assert run["status"] == "stopped" and run["stop_signals"][0] == "SIGINT" and run["stop_reason"] == "requested"
    assert run["traces"] and (tmp_path / "b" / run["traces"][0]).is_file()
    assert s.state.step >= 3 and not s.fetch_error


@pytest.mark.timeout(200)
def test_desktop_killed_mid_run_then_attach_and_fetch(sshd, remote_root, tmp_path):
    write(tmp_path, "slow.py", SLOW)
    out = tmp_path / "first"
    e = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "core.cli", "record", *host_args(sshd), "--python", sys.executable,
                             "--env", "OMP_NUM_THREADS=1", "--cwd", str(tmp_path), "--out", str(out), "slow.py", "60"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=e)
    try:
        _wait(lambda: (out / "events.jsonl").is_file() and b'"step"' in (out / "events.jsonl").read_bytes(), 90,
              what="the first live step")
    finally:
        proc.send_signal(signal.SIGKILL)  # the desktop dies: no stop is ever sent
        err = proc.communicate(timeout=30)[1].decode()
    run_id = err.split(" as ", 1)[1].split()[0]
    code, listing, err = cli("remote", "runs", ALIAS, "--ssh-config", str(sshd.config))
    assert code == 0 and run_id in listing and "running" in listing.split(run_id, 1)[1].splitlines()[0], listing + err
    code, _, err = cli("remote", "attach", ALIAS, run_id, "--ssh-config", str(sshd.config), "--out", str(out),
                       "--quiet")
    assert code == 0, err
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "ok" and run["steps"] == 60 and run["traces"]
    steps = [ev["step"] for ev in read_events(str(out / "events.jsonl")) if ev["type"] == "step"]
    assert steps == list(range(1, 61))  # resumed from the offsets: no step twice, none lost
    code, _, err = cli("remote", "fetch", ALIAS, run_id, "--ssh-config", str(sshd.config), "--out",
                       str(tmp_path / "again"))
    assert code == 0 and _files(tmp_path / "again") == _files(out), err


@pytest.mark.timeout(200)
def test_sshd_restarted_mid_run_reconnects(sshd, remote_root, tmp_path):
    script = write(tmp_path, "slow.py", SLOW)
    host = SshHost(ALIAS, config_file=str(sshd.config))
    s = RemoteSession(_cfg(script, "80", out=tmp_path / "b"), host).start()
    _wait(lambda: s.state.step >= 2, 90, session=s, what="live steps")
    sshd.stop()  # every connection drops; the run goes on on the host
    try:
        _wait(lambda: s.connection.startswith("disconnected - reconnecting"), 60, session=s, what="the drop")
        time.sleep(1.0)
        s.poll()
        assert not s.finished
    finally:
        sshd.start()
    _wait(lambda: s.finished, 150, session=s, what="the end after the reconnect")
    assert s.exit_code == 0 and s.reconnects >= 1 and not s.fetch_error
    run = json.loads((tmp_path / "b" / "run.json").read_text())
    assert run["status"] == "ok" and run["steps"] == 80
    steps = [ev["step"] for ev in read_events(str(tmp_path / "b" / "events.jsonl")) if ev["type"] == "step"]
    assert steps == list(range(1, 81))


@pytest.mark.timeout(90)
def test_unknown_host_key_is_never_accepted(sshd, remote_root, tmp_path):
    config = sshd.ssh_config("empty_known_hosts", "client_key")
    script = write(tmp_path, "train.py", TRAIN)
    code, _, err = cli("record", *host_args(sshd, config), "--python", sys.executable, "--out", str(tmp_path / "b"),
                       str(script))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "host key" in err and "not known" in err and "SHA256:" in err and "accept it once with" in err
    assert (sshd.root / "empty_known_hosts").read_text() == ""  # nothing accepted silently
    assert not remote_root.exists()  # nothing ran there


@pytest.mark.timeout(90)
def test_wrong_key_is_one_clear_line(sshd, remote_root, tmp_path):
    config = sshd.ssh_config("known_hosts", "other_key")
    code, _, err = cli("remote", "runs", ALIAS, "--ssh-config", str(config))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "cannot log in" in err and "Permission denied" in err and "Traceback" not in err


@pytest.mark.timeout(120)
def test_interpreter_without_torch(sshd, remote_root, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    script = write(tmp_path, "train.py", TRAIN)
    code, _, err = cli("record", *host_args(sshd), "--python", str(venv / "bin" / "python"), "--out",
                       str(tmp_path / "b"), str(script))
    assert code == 2 and "Traceback" not in err, err
    assert "torch not installed" in err and "--python" in err


@pytest.mark.timeout(90)
def test_unwritable_remote_folder(sshd, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("PTPROF_REMOTE_ROOT", str(blocker / "ptprof"))
    script = write(tmp_path, "train.py", TRAIN)
    code, _, err = cli("record", *host_args(sshd), "--python", sys.executable, "--out", str(tmp_path / "b"),
                       str(script))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "cannot install ptprof's runner" in err and "Not a directory" in err
    assert not (tmp_path / "b").exists()  # the empty local folder is not left behind


@pytest.mark.timeout(90)
def test_missing_script_and_cwd_on_the_host(sshd, remote_root, tmp_path):
    code, _, err = cli("record", *host_args(sshd), "--python", sys.executable, "--cwd", str(tmp_path),
                       "--out", str(tmp_path / "b"), "nope.py")
    assert code == 2 and "script not found on the host" in err and len(err.strip().splitlines()) == 1, err


FORGER = TRAIN + """
import json, os
with open(os.path.join(os.environ["PTPROF_BUNDLE"], "events.jsonl"), "a") as fh:
    fh.write(json.dumps({"type": "notice", "t_ns": 1, "rank": 0, "code": "x", "message": "FORGED \\x1b[2J"}) + "\\n")
    fh.write(json.dumps({"type": "step", "t_ns": 1, "rank": 0, "step": 10 ** 6, "dur_ns": 1}) + "\\n")
"""


@pytest.mark.timeout(150)
def test_lines_the_script_forges_are_not_believed(sshd, remote_root, tmp_path):
    script = write(tmp_path, "forge.py", FORGER)
    code, _, err = cli("record", *host_args(sshd), "--python", sys.executable, "--env", "OMP_NUM_THREADS=1",
                       "--out", str(tmp_path / "b"), str(script), "6")
    assert code == 0, err
    run = json.loads((tmp_path / "b" / "run.json").read_text())
    assert run["forged_event_lines"] == 2 and run["steps"] == 6
    assert not any("FORGED" in n for n in run["notices"]) and "FORGED" not in err
    assert "6 steps" in err


@pytest.mark.timeout(90)
@pytest.mark.parametrize("answer", ["no", "yes"])
def test_unknown_host_key_in_the_app_goes_through_askpass(sshd, remote_root, tmp_path, answer):
    """The app's SshHost asks (StrictHostKeyChecking=ask) through SSH_ASKPASS: OpenSSH shows the
    fingerprint in the prompt; "no" is one line, "yes" adds the key (the user's decision, never ours)."""
    from core.remote.ssh import HostKeyUnknown
    known = sshd.root / f"kh_{answer}"
    known.write_text("")
    config = sshd.ssh_config(f"kh_{answer}", "client_key", name=f"cfg_{answer}")
    config.write_text(config.read_text().replace("StrictHostKeyChecking yes\n", ""))
    prompts = tmp_path / "prompts.txt"
    askpass = tmp_path / "askpass.sh"
    askpass.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$*\" >> {prompts}\necho {answer}\n")
    askpass.chmod(0o700)
    host = SshHost(ALIAS, config_file=str(config), askpass=str(askpass))
    assert "StrictHostKeyChecking=ask" in host._options() and "BatchMode=yes" not in host._options()
    if answer == "no":
        with pytest.raises(HostKeyUnknown) as info:
            host.connect()
        assert "\n" not in str(info.value) and "not known" in str(info.value)
        assert known.read_text() == ""
    else:
        host.connect()
        assert host.run(["echo", "hi there"]).stdout == b"hi there\n"
        assert "ssh-ed25519" in known.read_text()
        host.close()
    assert "SHA256:" in prompts.read_text() and "continue connecting" in prompts.read_text()
