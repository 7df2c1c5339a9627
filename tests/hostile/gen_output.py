"""Hostile OUTPUT places and run-time inputs (issue 37): what already sits where ptprof writes, and what
a training script can do to its own bundle. Each generator prepares one case under `root` and returns an
OutCase: the `ptprof` arguments, the exit codes allowed, and the entries that must come out unchanged
(type, link target, content). test_output_cli.py walks OUTPUT_CASES through the real CLI; RECORD_CASES
(they run a script under torch) go through `ptprof record`.

Classes: an output path that is a FIFO, a link to stdout, a device node, a folder, a socket, a dangling
link, the user's link to a file; a report / diff folder holding the user's own files, a planted link or a
FIFO at one of our names; names with ESC / OSC / C1 / bidi characters in every output (stdout, CSV,
report.html); an old bundle with links planted at the runner's temp names; a script forging events.
"""
from __future__ import annotations

import gzip
import json
import os
import socket
import stat
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TRACE = REPO / "tests" / "data" / "gpu_print.pt.trace.json.gz"
EVIL = "\x1b]0;owned\x07\x1b[2J\x1b[31m\u202eevil\x9b\u2066"  # OSC title, clear screen, colour, bidi, C1


@dataclass
class OutCase:
    args: list[str]
    exits: tuple[int, ...]
    protected: list[Path] = field(default_factory=list)  # must be exactly as before the run
    fifo: Path | None = None  # the command writes into it: the test reads it in a thread
    written: list[Path] = field(default_factory=list)  # files the command writes: no raw control chars


def snapshot(path: Path):
    """(file type, link target or content) of an entry, never following or opening anything special."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return "link", os.readlink(path)
    if stat.S_ISREG(st.st_mode):
        return "file", path.read_bytes()
    return stat.S_IFMT(st.st_mode), None


def victim(root: Path, name: str = "victim.rc") -> Path:
    """A user's file outside every output folder (a shell rc in the issue's reproduction)."""
    path = root / name
    path.write_text("export PATH=precious\n")
    return path


def evil_trace(root: Path) -> Path:
    """The small real GPU trace with ESC / OSC / C1 / bidi characters in every kernel and op name."""
    data = json.loads(gzip.open(TRACE).read())
    for i, e in enumerate(data["traceEvents"]):
        if e.get("cat") in ("kernel", "cpu_op"):
            e["name"] = f"{EVIL}{e['name']}#{i % 3}"
    path = root / "evil.pt.trace.json"
    path.write_text(json.dumps(data))
    return path


# ---- `analyze --csv PATH`: what sits at PATH ----

def _csv_at(make: Callable[[Path], Path], exits: tuple[int, ...], fifo: bool = False):
    def case(root: Path) -> OutCase:
        path = make(root)
        return OutCase(["analyze", str(TRACE), "--no-cache", "--csv", str(path)], exits, [path],
                       fifo=path if fifo else None)
    return case


def _fifo(root: Path) -> Path:
    os.mkfifo(root / "out.csv")
    return root / "out.csv"


def _link(target: str):
    def make(root: Path) -> Path:
        (root / "out.csv").symlink_to(target)
        return root / "out.csv"
    return make


def _chardev(root: Path) -> Path:
    try:
        os.mknod(root / "out.csv", 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a /dev/null of the test's own
    except OSError:  # not root: a link to /dev/null covers the in-place write
        (root / "out.csv").symlink_to("/dev/null")
    return root / "out.csv"


def _folder(root: Path) -> Path:
    (root / "out.csv").mkdir()
    (root / "out.csv" / "keep").write_text("k")
    return root / "out.csv"


def _socket(root: Path) -> Path:
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(root / "out.csv"))
    sock.close()  # the node stays
    return root / "out.csv"


def _users_link(root: Path) -> OutCase:
    target = root / "runs" / "findings.csv"
    target.parent.mkdir()
    target.write_text("old")
    (root / "latest.csv").symlink_to(target)
    return OutCase(["analyze", str(TRACE), "--no-cache", "--csv", str(root / "latest.csv")], (0,),
                   [root / "latest.csv"], written=[target])


# ---- report / diff folders ----

def _folder_with(command: str, name: str, what: str):
    """`report --out DIR` / `diff --csv DIR` where DIR already holds `what` at one of our names."""
    def case(root: Path) -> OutCase:
        out = root / "out"
        out.mkdir()
        protected = [out / name]
        if what == "user_file":
            (out / name).write_text("hand,edited\n1,2\n")
        elif what == "planted_link":
            v = victim(root)
            (out / name).symlink_to(v)
            protected.append(v)
        else:
            os.mkfifo(out / name)
        args = (["report", str(TRACE), "--out", str(out), "--no-png", "--no-cache"] if command == "report"
                else ["diff", str(TRACE), str(TRACE), "--csv", str(out), "--no-cache"])
        return OutCase(args, (2,), protected)
    return case


# ---- escapes in everything printed or written ----

def _escapes(command: str):
    def case(root: Path) -> OutCase:
        trace, out = evil_trace(root), root / "out"
        if command == "report":
            return OutCase(["report", str(trace), "--out", str(out), "--no-png", "--no-cache"], (0,),
                           written=[out / "report.html", out / "kernels.csv", out / "ops.csv"])
        if command == "diff":
            return OutCase(["diff", str(trace), str(TRACE), "--csv", str(out), "--no-cache"], (0,),
                           written=[out / "kernels_diff.csv", out / "ops_diff.csv"])
        if command == "analyze":
            return OutCase(["analyze", str(trace), "--no-cache", "--csv", str(root / "f.csv")], (0,),
                           written=[root / "f.csv"])
        return OutCase([command, str(trace), "--no-cache"], (0,))
    return case


OUTPUT_CASES: dict[str, Callable[[Path], OutCase]] = {
    "csv_fifo": _csv_at(_fifo, (0,), fifo=True),
    "csv_link_to_proc_stdout": _csv_at(_link("/proc/self/fd/1"), (0,)),
    "csv_link_to_dev_stdout": _csv_at(_link("/dev/stdout"), (0,)),
    "csv_char_device": _csv_at(_chardev, (0,)),
    "csv_folder": _csv_at(_folder, (2,)),
    "csv_socket": _csv_at(_socket, (2,)),
    "csv_dangling_link": _csv_at(_link("/nonexistent/ptprof-missing"), (2,)),
    "csv_users_link_to_a_file": _users_link,
    **{f"{cmd}_dir_{what}": _folder_with(cmd, name, what)
       for cmd, name in (("report", "kernels.csv"), ("diff", "steps_diff.csv"))
       for what in ("user_file", "planted_link", "fifo")},
    **{f"escapes_{cmd}": _escapes(cmd) for cmd in ("info", "analyze", "report", "diff")},
}


# ---- `ptprof record` (needs torch) ----

TRAIN = """
import sys, torch
from torch import nn
model = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 16), torch.randn(8, 4)
i = 0
while i < 400:
    opt.zero_grad(); ((model(x) - y) ** 2).mean().backward(); opt.step(); i += 1
"""

FORGE = f"""
import json, os
with open(os.path.join(os.environ["PTPROF_BUNDLE"], "events.jsonl"), "a") as fh:
    for ev in [{{"type": "phase", "phase": "done", "step": 1, "rank": 0, "source": "optimizer"}},
               {{"type": "cycle", "cycle": 1, "path": "traces/x", "bytes": 1, "step": 1, "rank": 0}},
               {{"type": "notice", "code": "x", "message": {EVIL!r}, "rank": 0}},
               {{"type": "end", "exit_code": 0, "rank": 0}}]:
        fh.write(json.dumps(ev) + "\\n")
"""

RUNNER_TEMP_NAMES = ("traces/rank0.cycle1.pt.trace.json.gz.part", "traces/.rank0.cycle1.pt.trace.json.gz.json.tmp",
                     "compile.json.tmp", "run.json.tmp")


def _planted_temp_links(root: Path) -> OutCase:
    from core.runner.bundle import FORMAT
    old = root / "old"
    (old / "traces").mkdir(parents=True)
    (old / "run.json").write_text(json.dumps({"format": FORMAT, "status": "ok"}))
    victims = []
    for i, name in enumerate(RUNNER_TEMP_NAMES):
        victims.append(victim(root, f"victim{i}.rc"))
        (old / name).symlink_to(victims[-1])
    script = root / "train.py"
    script.write_text("import torch\ntorch.compile(lambda t: t + 1, backend='eager')(torch.ones(2))\n"
                      + textwrap.dedent(TRAIN))
    return OutCase(["record", "--quiet", "--out", str(old), "--wait", "0", "--active", "2", str(script)], (0,),
                   victims, written=[old / "run.json"])


def _forged_events(root: Path) -> OutCase:
    script = root / "forger.py"
    script.write_text(textwrap.dedent(FORGE) + textwrap.dedent(TRAIN).replace("while i < 400", "while True"))
    out = root / "b"
    return OutCase(["record", "--quiet", "--out", str(out), "--wait", "1", "--warmup", "1", "--active", "2",
                    "--stop-after-window", str(script)], (0,), written=[out / "run.json"])


RECORD_CASES: dict[str, Callable[[Path], OutCase]] = {
    "record_planted_temp_links": _planted_temp_links,
    "record_forged_events": _forged_events,
}
