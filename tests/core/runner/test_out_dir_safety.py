"""`record --out DIR` never deletes or overwrites what ptprof did not create (issue 14, data loss)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from core.runner import bundle as bl
from core.runner.config import ConfigError, RunConfig, validate

REPO = Path(__file__).resolve().parents[3]


def _user_folder(root: Path) -> dict[str, bytes]:
    (root / "traces" / "important").mkdir(parents=True)
    (root / "traces" / "important" / "weights.bin").write_bytes(b"\x00weights" * 100)
    (root / "run.json").write_text('{"my": "own run.json"}')
    (root / "notes.txt").write_text("keep me")
    return _snapshot(root)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _record(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    script = cwd / "train.py"
    if not script.exists():
        script.write_text("print('hi')\n")
    return subprocess.run([sys.executable, "-m", "core.cli", "record", "--quiet", *args, str(script)],
                          cwd=str(REPO), capture_output=True, text=True, timeout=120)


def test_record_refuses_a_user_folder_and_touches_nothing(tmp_path):
    user = tmp_path / "work"
    user.mkdir()
    before = _user_folder(user)
    r = _record(tmp_path, "--out", str(user))
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and "not a ptprof run bundle" in r.stderr and "Traceback" not in r.stderr
    assert _snapshot(user) == before


def test_record_out_dot_refuses_the_current_folder(tmp_path):
    before = _user_folder(tmp_path)
    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    r = subprocess.run([sys.executable, "-m", "core.cli", "record", "--quiet", "--out", ".", str(script)],
                       cwd=str(tmp_path), capture_output=True, text=True, timeout=120,
                       env={**__import__("os").environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1
    after = _snapshot(tmp_path)
    after.pop("train.py")
    assert after == before


def test_validate_refuses_a_foreign_run_json_and_accepts_empty_or_missing(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("pass\n")
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "run.json").write_text("[1, 2]")
    with pytest.raises(ConfigError, match="not a ptprof run bundle"):
        validate(RunConfig(script=str(script), out_dir=str(tmp_path / "foreign")))
    (tmp_path / "empty").mkdir()
    validate(RunConfig(script=str(script), out_dir=str(tmp_path / "empty")))
    validate(RunConfig(script=str(script), out_dir=str(tmp_path / "missing" / "deeper")))


def test_rerecording_a_bundle_removes_only_what_ptprof_wrote(tmp_path):
    old = bl.prepare(tmp_path / "b")
    bl.write_json(old.run_json, {"format": bl.FORMAT, "status": "ok"})
    (old.traces / "rank0.cycle1.pt.trace.json.gz").write_bytes(b"old trace")
    (old.traces / "mine.bin").write_bytes(b"user data")  # the user put it there: not ours
    (old.root / "analysis.ipynb").write_text("{}")
    (old.root / "stdout.log").write_text("old log")
    new = bl.prepare(tmp_path / "b")
    assert not (new.traces / "rank0.cycle1.pt.trace.json.gz").exists()
    assert not (new.root / "stdout.log").exists() and not new.run_json.exists()
    assert (new.traces / "mine.bin").read_bytes() == b"user data"
    assert (new.root / "analysis.ipynb").read_text() == "{}"


def test_rerecording_never_follows_a_symlink(tmp_path):
    old = bl.prepare(tmp_path / "b")
    bl.write_json(old.run_json, {"format": bl.FORMAT})
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.pt.trace.json.gz").write_bytes(b"precious")
    (victim / "data.txt").write_text("precious")
    # a bundle whose traces/ and stdout.log are links into someone else's folder
    import shutil
    shutil.rmtree(old.traces)
    old.traces.symlink_to(victim, target_is_directory=True)
    (old.root / "stdout.log").symlink_to(victim / "data.txt")
    with pytest.raises(bl.BundleError, match="symlink"):
        bl.prepare(tmp_path / "b")
    assert (victim / "precious.pt.trace.json.gz").read_bytes() == b"precious"
    assert (victim / "data.txt").read_text() == "precious"


def test_run_json_write_does_not_follow_a_planted_temp_link(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "run.json.tmp").symlink_to(victim)
    (tmp_path / "run.json").symlink_to(victim)
    bl.write_json(tmp_path / "run.json", {"format": bl.FORMAT})
    assert victim.read_text() == "precious"
    assert json.loads((tmp_path / "run.json").read_text())["format"] == bl.FORMAT
    assert not (tmp_path / "run.json").is_symlink()


@pytest.mark.parametrize("out", ["/proc/self/x", ""])
def test_record_out_that_cannot_be_a_folder_is_one_line(tmp_path, out):
    if out == "/proc/self/x" and not Path("/proc/self").is_dir():
        pytest.skip("no /proc")
    r = _record(tmp_path, "--out", out)
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr


@pytest.mark.parametrize("kind", ["deep", "fifo"])
def test_record_out_with_a_hostile_run_json_is_one_line(tmp_path, kind):
    """A 100,000-deep run.json (RecursionError in the stdlib decoder) or a FIFO named run.json in the
    --out folder: not one of our bundles, refused in one line, nothing touched, no blocked read."""
    user = tmp_path / "work"
    user.mkdir()
    if kind == "deep":
        (user / "run.json").write_text("[" * 100_000 + "]" * 100_000)
    else:
        import os
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs on this platform")
        os.mkfifo(user / "run.json")
    r = _record(tmp_path, "--out", str(user))
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and "not a ptprof run bundle" in r.stderr, r.stderr
    assert sorted(p.name for p in user.iterdir()) == ["run.json"]
