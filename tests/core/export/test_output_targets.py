"""Issue 37: what is at an output path is never destroyed. `diff --csv DIR` refuses a folder holding the
user's own files (as `report --out` does); every write (core.atomic) sends `-` and /dev/stdout to stdout,
writes a FIFO or a character device the user named in place, never replaces a symlink by a regular file,
and never renames over anything that is not a regular file."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from core.atomic import UnsafeOutput, atomic_write

REPO = Path(__file__).resolve().parents[3]
DATA = REPO / "tests" / "data" / "gpu_print.pt.trace.json.gz"
HEADER = b"rule,severity,rank,title"


def ptprof(*args: str, cwd=REPO) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run([sys.executable, "-m", "core.cli", *args], cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=300)


def _one_line(r: subprocess.CompletedProcess) -> str:
    err = r.stderr.decode()
    assert r.returncode == 2 and err.count("\n") == 1 and "Traceback" not in err, (r.returncode, err)
    return err


# -- diff --csv: the "folder not ours" guard ---------------------------------------------------------------

def test_diff_csv_never_overwrites_the_users_own_files(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "steps_diff.csv").write_text("hand,edited\n1,2\n")
    r = ptprof("diff", str(DATA), str(DATA), "--csv", str(out), "--no-cache")
    err = _one_line(r)
    assert "steps_diff.csv" in err and "not written by ptprof" in err
    assert (out / "steps_diff.csv").read_text() == "hand,edited\n1,2\n"
    assert sorted(p.name for p in out.iterdir()) == ["steps_diff.csv"]  # nothing else was written


def test_diff_csv_writes_a_new_folder_and_its_own_folder_again(tmp_path):
    out = tmp_path / "d"
    for _ in range(2):  # the second time the marker says the files are ours
        r = ptprof("diff", str(DATA), str(DATA), "--csv", str(out), "--no-cache")
        assert r.returncode == 0, r.stderr
    assert {"kernels_diff.csv", "ops_diff.csv", "steps_diff.csv", ".ptprof-report"} <= {p.name for p in out.iterdir()}


def test_diff_csv_refuses_a_planted_symlink(tmp_path):
    out, victim = tmp_path / "d", tmp_path / "victim"
    out.mkdir()
    victim.write_text("precious")
    (out / "ops_diff.csv").symlink_to(victim)
    err = _one_line(ptprof("diff", str(DATA), str(DATA), "--csv", str(out), "--no-cache"))
    assert "symlink" in err
    assert victim.read_text() == "precious" and (out / "ops_diff.csv").is_symlink()


# -- analyze --csv at special files ------------------------------------------------------------------------

def test_csv_into_a_fifo_is_written_in_place(tmp_path):
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(Path(fifo).read_bytes()), daemon=True)
    reader.start()
    r = ptprof("analyze", str(DATA), "--no-cache", "--csv", str(fifo))
    if r.returncode != 0:  # let the reader go before failing
        with open(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK), "wb"):
            pass
    reader.join(30)
    assert r.returncode == 0, r.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the user's named pipe was replaced"
    assert got and got[0].startswith(HEADER)


# system paths (/dev/stdout, /dev/null) are only reached through links of our own: code that renamed over
# them (as before issue 37, run as root) replaces the test's link, never the machine's device node
@pytest.mark.parametrize("how", ["-", "/dev/stdout", "/proc/self/fd/1"])
def test_csv_to_stdout(tmp_path, how):
    path = how
    if how != "-":
        path = str(tmp_path / "out.csv")
        os.symlink(how, path)
    r = ptprof("analyze", str(DATA), "--no-cache", "--csv", path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(HEADER)  # the CSV went to stdout, before the table
    if how != "-":
        assert os.path.islink(path) and os.readlink(path) == how


def test_csv_to_a_character_device(tmp_path):
    """A device node the user named (`--csv /dev/full` run as root replaced the system's node)."""
    node = tmp_path / "null"
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a /dev/null of our own
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot make a device node here: {exc}")
    link = tmp_path / "to-null.csv"
    link.symlink_to("/dev/null")
    for path in (node, link):
        r = ptprof("analyze", str(DATA), "--no-cache", "--csv", str(path))
        assert r.returncode == 0, r.stderr
    assert stat.S_ISCHR(os.lstat(node).st_mode) and link.is_symlink()


def test_csv_through_a_users_link_to_a_file_keeps_the_link(tmp_path):
    target = tmp_path / "runs" / "findings.csv"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "latest.csv"
    link.symlink_to(target)
    r = ptprof("analyze", str(DATA), "--no-cache", "--csv", str(link))
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and target.read_bytes().startswith(HEADER)
    assert not [p for p in target.parent.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("what", ["folder", "dangling link", "socket"])
def test_csv_at_what_cannot_be_written_is_one_line(tmp_path, what):
    path = tmp_path / "x.csv"
    if what == "folder":
        path.mkdir()
        (path / "keep").write_text("k")
    elif what == "dangling link":
        path.symlink_to(tmp_path / "missing")
    else:
        import socket
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
    _one_line(ptprof("analyze", str(DATA), "--no-cache", "--csv", str(path)))
    if what == "folder":
        assert [p.name for p in path.iterdir()] == ["keep"]
    elif what == "dangling link":
        assert path.is_symlink() and not (tmp_path / "missing").exists()
    else:
        assert stat.S_ISSOCK(os.lstat(path).st_mode)


# -- core.atomic for names ptprof chose in its own folders ---------------------------------------------------

def test_atomic_write_refuses_what_it_did_not_choose(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "link").symlink_to(victim)
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "stdout").symlink_to("/proc/self/fd/1")
    for name in ("link", "fifo", "stdout"):
        with pytest.raises(UnsafeOutput):
            atomic_write(tmp_path / name, b"x")  # a planted entry: neither written through nor replaced
    assert victim.read_text() == "precious" and (tmp_path / "link").is_symlink()
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo").st_mode) and (tmp_path / "stdout").is_symlink()
    atomic_write(tmp_path / "new", b"ok")
    atomic_write(tmp_path / "new", b"again")
    assert (tmp_path / "new").read_bytes() == b"again"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "link", "new", "stdout", "victim"]


def test_write_program_is_private_executable_and_never_follows_a_link(tmp_path):
    """core.atomic.write_program: the SSH_ASKPASS wrappers (core/remote/tty_askpass.py, gui/remote/askpass.py)."""
    from core.atomic import write_program
    from core.remote.tty_askpass import _write_program
    path = Path(_write_program(tmp_path))
    assert path.name == "askpass-tty" and stat.S_IMODE(path.stat().st_mode) == 0o700
    assert path.read_text().startswith("#!/bin/sh\n") and "-m core.remote.tty_askpass" in path.read_text()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    (tmp_path / f".prog.{os.getpid()}").symlink_to(victim)  # planted where the temp file goes
    with pytest.raises(OSError):
        write_program(tmp_path / "prog", "#!/bin/sh\n")
    assert victim.read_text() == "keep" and not (tmp_path / "prog").exists()
    write_program(path, "#!/bin/sh\necho again\n")  # replaced in place, still private
    assert path.read_text().endswith("echo again\n") and stat.S_IMODE(path.stat().st_mode) == 0o700
