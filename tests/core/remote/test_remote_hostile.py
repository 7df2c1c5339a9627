"""A hostile host: its helper (agent_io.py, the part that streams and packs) is replaced by one that sends
garbage frames and events, claims a 10 GB bundle, and packs symlinks, `..` paths, absolute paths,
devices and members larger than announced. Against the real sshd (conftest.py): nothing is written
outside the local folder, every refusal is one line, nothing raises, nothing hangs."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from runner_scripts import TRAIN, write
from sshd_server import ALIAS

from core.remote import fetch as fetch_mod
from core.remote.runner import Helper
from core.remote.session import RemoteSession
from core.remote.ssh import SshHost
from core.runner.config import RunConfig, Schedule

pytest.importorskip("torch")

HOSTILE_IO = r'''
import base64, io, json, sys, tarfile, gzip

def _frames():
    out = sys.stdout
    out.write("not json at all\n")
    out.write(json.dumps({"k": "data", "f": "events", "o": 0, "d": "%%% not base64"}) + "\n")
    junk = b'{"type": "step", "step": "many"}\n[1, 2]\n{"type": 5}\n' + b"\xff\xfe garbage\n" + b"{" * 5000 + b"\n"
    out.write(json.dumps({"k": "data", "f": "events", "o": 0, "d": base64.b64encode(junk).decode()}) + "\n")
    out.write(json.dumps({"k": "data", "f": "../../escape", "o": 0, "d": base64.b64encode(b"x").decode()}) + "\n")
    out.write(json.dumps({"k": "data", "f": "stdout", "o": 10 ** 12, "d": base64.b64encode(b"gap").decode()}) + "\n")
    out.write(json.dumps({"k": "data", "f": "nvml", "o": 0, "d": base64.b64encode(b"1,99,1,2,3\nnope\n").decode()}) + "\n")
    out.write(json.dumps({"k": "weird"}) + "\n")
    out.write(json.dumps({"k": "end", "state": "finished", "exit_code": "bogus", "final_notices": "not a list"}) + "\n")
    out.flush()

def _tar(kind):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        ok = tarfile.TarInfo("run.json"); data = b'{"format": "ptprof-run/1"}'; ok.size = len(data)
        tar.addfile(ok, io.BytesIO(data))
        bad = tarfile.TarInfo({"dotdot": "../escape.txt", "absolute": "/tmp/ptprof-escape.txt",
                               "nested": "traces/../../escape.txt"}.get(kind, "traces/bad"))
        if kind == "symlink":
            bad.type, bad.linkname = tarfile.SYMTYPE, "/etc/passwd"
        elif kind == "hardlink":
            bad.type, bad.linkname = tarfile.LNKTYPE, "/etc/passwd"
        elif kind == "device":
            bad.type, bad.devmajor, bad.devminor = tarfile.CHRTYPE, 1, 3
        elif kind == "fifo":
            bad.type = tarfile.FIFOTYPE
        payload = b"y" * 64
        bad.size = len(payload) if bad.type == tarfile.REGTYPE else 0
        tar.addfile(bad, io.BytesIO(payload) if bad.size else None)
    return buf.getvalue()

def main(cmd, rest, agent):
    kind = rest[0] if rest else ""
    if cmd == "follow":
        _frames(); return 0
    if cmd == "list":
        agent.say({"ok": True, "runs": [{"id": "x", "state": "finished"}, "junk", 5]}); return 0
    if cmd == "manifest":
        if kind in ("oversized",):
            agent.say({"ok": True, "files": [["run.json", 26], ["traces/bad", 8]], "total": 34}); return 0
        if kind in ("symlink", "hardlink", "device", "fifo", "dotdot", "absolute", "nested", "hang"):
            agent.say({"ok": True, "files": [["run.json", 26], ["traces/bad", 64]], "total": 90}); return 0
        agent.say({"ok": True, "files": [["traces/huge.json", 10 * 10 ** 9]], "total": 10 * 10 ** 9}); return 0
    if cmd == "pack":
        if kind == "hang":
            import time; sys.stdout.buffer.write(gzip.compress(_tar("symlink"))[:20]); sys.stdout.flush(); time.sleep(600)
        sys.stdout.buffer.write(gzip.compress(_tar(kind))); sys.stdout.flush(); return 0
    agent.say({"ok": False, "error": "?"}); return 2
'''


@pytest.fixture
def hostile(sshd, remote_root):
    host = SshHost(ALIAS, config_file=str(sshd.config))
    return Helper(host.connect(), python=sys.executable, overrides={"agent_io.py": HOSTILE_IO.encode()}).ensure()


def _outside(tmp_path: Path, dest: Path) -> set[str]:
    """Every path under tmp_path but the local folder and the (loopback) host's own files."""
    host = tmp_path / "remote-root"
    return {str(p) for p in tmp_path.rglob("*") if dest not in p.parents and p != dest
            and host not in p.parents and p != host}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["symlink", "hardlink", "device", "fifo", "dotdot", "absolute", "nested",
                                  "oversized", "big"])
def test_bundle_tar_from_a_hostile_host_is_refused(hostile, tmp_path, kind):
    dest = tmp_path / "local" / "bundle"
    dest.parent.mkdir()
    before = _outside(tmp_path, dest)
    with pytest.raises(fetch_mod.FetchError) as info:
        fetch_mod.fetch(hostile, kind, dest)
    message = str(info.value)
    assert "\n" not in message and message.startswith("refused"), message
    assert {"big": "10.0 GB", "oversized": "did not announce", "symlink": "symlink", "hardlink": "hard link",
            "device": "device", "fifo": "FIFO"}.get(kind, "unsafe path") in message
    assert _outside(tmp_path, dest) == before  # nothing written beside the folder
    assert not Path("/tmp/ptprof-escape.txt").exists()
    assert not (tmp_path / "local" / "escape.txt").exists() and not (tmp_path / "escape.txt").exists()
    for p in dest.rglob("*"):
        assert p.is_dir() or (p.is_file() and not p.is_symlink())


@pytest.mark.timeout(60)
def test_a_host_that_stalls_mid_bundle_does_not_hang(hostile, tmp_path, monkeypatch):
    monkeypatch.setattr(fetch_mod, "STALL_S", 2.0)
    with pytest.raises(fetch_mod.FetchError) as info:
        fetch_mod.fetch(hostile, "hang", tmp_path / "b")
    assert "sent nothing" in str(info.value) or "not a valid archive" in str(info.value)


@pytest.mark.timeout(60)
def test_cancel_stops_a_fetch(hostile, tmp_path):
    with pytest.raises(fetch_mod.FetchCancelled):
        fetch_mod.fetch(hostile, "symlink", tmp_path / "b", cancel=lambda: True)


@pytest.mark.timeout(120)
def test_garbage_events_and_frames_during_a_run(hostile, tmp_path):
    script = write(tmp_path, "train.py", TRAIN)
    cfg = RunConfig(script=str(script), args=("4",), python=sys.executable, cwd=str(tmp_path),
                    env=(("OMP_NUM_THREADS", "1"),), schedule=Schedule(1, 1, 1, 1), out_dir=str(tmp_path / "b"))
    s = RemoteSession(cfg, hostile.host, helper=hostile).start()
    deadline = __import__("time").monotonic() + 90
    while not s.finished:
        s.poll()
        assert __import__("time").monotonic() < deadline
    assert s.exit_code == 1  # "bogus" is no exit code: the run is not called a success
    assert s.bad_events >= 3 and s.bad_frames >= 4
    assert s.fetch_error.startswith("refused: the host says the bundle holds 10.0 GB")
    assert s.state.step == 0 and not (tmp_path / "escape").exists()
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["events.jsonl", "nvml.csv", "run.json", "traces"]
    assert s.sampler.samples == 0  # no GPU announced: rows for GPU 99 go nowhere
