"""Where a remote run's bundle lives on the host (`--remote-dir`, the Run dialog's "Bundle on host") and how
runs are found again from any root (the host's index of runs), against the real sshd of conftest.py."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from runner_scripts import TRAIN, write
from sshd_server import ALIAS

from core.remote.mirrors import note_mirror, unfinished_mirrors

REPO = Path(__file__).resolve().parents[3]


def cli(*args, env=None, timeout=150):
    e = dict(os.environ, PYTHONPATH=str(REPO), **(env or {}))
    r = subprocess.run([sys.executable, "-m", "core.cli", *args], capture_output=True, text=True, timeout=timeout,
                       env=e, stdin=subprocess.DEVNULL)
    return r.returncode, r.stdout, r.stderr


def _record(sshd, tmp_path, out: str, *extra, env=None):
    write(tmp_path, "train.py", TRAIN)
    return cli("record", "--host", ALIAS, "--ssh-config", str(sshd.config), "--python", sys.executable,
               "--wait", "1", "--warmup", "1", "--active", "2", "--env", "OMP_NUM_THREADS=1", "--quiet",
               "--cwd", str(tmp_path), "--out", str(tmp_path / out), *extra, "train.py", "5", env=env)


@pytest.mark.timeout(300)
def test_remote_dir_and_runs_of_every_root_are_found(sshd, remote_root, tmp_path):
    scratch = tmp_path / "scratch" / "me"
    code, _, err = _record(sshd, tmp_path, "b1", "--remote-dir", str(scratch))
    assert code == 0, err
    run1 = json.loads((tmp_path / "b1" / "run.json").read_text())
    rid1 = run1["remote"]["id"]
    assert run1["remote"]["bundle"] == str(scratch / rid1) and (scratch / rid1 / "run.json").is_file()
    assert not (remote_root / "runs").exists()  # nothing of the bundle under the default root
    # a second run under another root (PTPROF_REMOTE_ROOT changed), same host index
    other = tmp_path / "other-root"
    code, _, err = _record(sshd, tmp_path, "b2", env={"PTPROF_REMOTE_ROOT": str(other)})
    assert code == 0, err
    rid2 = json.loads((tmp_path / "b2" / "run.json").read_text())["remote"]["id"]
    assert (other / "runs" / rid2 / "run.json").is_file()  # the default: ROOT/runs/<id>
    for root in (remote_root, other):  # each root lists both runs, with where their bundle is
        code, out, err = cli("remote", "runs", ALIAS, "--ssh-config", str(sshd.config),
                             "--python", sys.executable, env={"PTPROF_REMOTE_ROOT": str(root)})
        assert code == 0 and rid1 in out and rid2 in out, (out, err)
        assert f"in {scratch / rid1}" in out
    code, _, err = cli("remote", "fetch", ALIAS, rid2, "--ssh-config", str(sshd.config), "--python", sys.executable,
                       "--out", str(tmp_path / "f2"))  # under remote_root's env: found through the index
    assert code == 0, err
    assert json.loads((tmp_path / "f2" / "run.json").read_text())["steps"] == 5


def test_remote_dir_needs_a_host(tmp_path):
    script = write(tmp_path, "train.py", TRAIN)
    code, _, err = cli("record", "--remote-dir", "/scratch", str(script))
    assert code == 2 and err.strip().splitlines() == ["ptprof: --remote-dir is a folder on the host: give --host too"]


@pytest.mark.timeout(120)
def test_unwritable_remote_dir_is_one_line(sshd, remote_root, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    code, _, err = _record(sshd, tmp_path, "b", "--remote-dir", str(blocker / "sub"))
    assert code == 2 and "Traceback" not in err
    assert "cannot write the run folder on the host" in err and len(err.strip().splitlines()) == 1
    code, out, _ = cli("remote", "runs", ALIAS, "--ssh-config", str(sshd.config), "--python", sys.executable)
    assert code == 0 and out.strip() == "no runs"  # nothing half-started is listed


def test_reattach_finds_mirror_folders_outside_the_default(tmp_path, monkeypatch):
    monkeypatch.setenv("PTPROF_MIRRORS_INDEX", str(tmp_path / "mirrors.idx"))
    runs, elsewhere = tmp_path / "ptprof-runs", tmp_path / "projects" / "exp1"
    runs.mkdir()
    elsewhere.mkdir(parents=True)
    placeholder = {"format": 1, "status": "running", "remote": {"host": "gpu-box", "id": "exp1-abc123"}}
    from core.runner import bundle as bl
    placeholder["format"] = bl.FORMAT
    (elsewhere / "run.json").write_text(json.dumps(placeholder))
    assert unfinished_mirrors(runs) == []
    note_mirror(elsewhere)
    note_mirror(elsewhere)  # noted twice: listed once
    found = unfinished_mirrors(runs)
    assert [(f, r["id"]) for f, r in found] == [(elsewhere, "exp1-abc123")]
    (elsewhere / "run.json").write_text(json.dumps({**placeholder, "status": "ok", "exit_code": 0}))
    assert unfinished_mirrors(runs) == []  # fetched: no longer offered
