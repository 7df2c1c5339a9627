"""What the desktop reads from a remote host (stdlib only, Python >= 3.9; uploaded with core/remote/agent.py).

    follow ID events=N,stdout=N,stderr=N,nvml=N   frames, one JSON object a line, until the run has ended
                                                  and every byte was sent:
        {"k": "data", "f": "events"|"stdout"|"stderr"|"nvml", "o": OFFSET, "d": BASE64}   (events: the
        lines the supervisor verified, ctl/ID/events.verified.jsonl; the others: the bundle's files)
        {"k": "state", ...agent.json}   {"k": "hb"} (every second)   {"k": "end", ...agent.json}
    list                                          the runs on this host, with their state
    manifest ID|PATH                              {"files": [[relative path, bytes]], "total": bytes}
    pack ID|PATH                                  the bundle (a folder, a file) as a gzip'd tar on stdout
                                                  (regular files only)
    ls PATH                                       a folder's entries (remote file picker)
    interpreters DIR                              Python interpreters worth offering (PATH, conda, venvs)
    clock                                         this host's time.time_ns() once per line read on stdin
                                                  (the desktop's round trips measure the clock offset)
"""
from __future__ import annotations

import base64
import glob
import gzip
import json
import os
import shutil
import stat
import sys
import tarfile
import time
from pathlib import Path

LIVE = {"events": "events.jsonl", "stdout": "stdout.log", "stderr": "stderr.log", "nvml": "nvml.csv"}
FRAME_BYTES = 192 << 10  # per frame (base64 makes it a third larger)
MAX_LS = 5000


def _read_from(path: Path, offset: int, limit: int) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return b""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        os.lseek(fd, offset, os.SEEK_SET)
        return os.read(fd, limit)
    except OSError:
        return b""
    finally:
        os.close(fd)


def agent_state(agent, run_id: str) -> dict:
    """agent.json, with state "lost" when its supervisor is gone without finishing (host reboot, kill -9)."""
    ctl = agent.ctl_dir(run_id)
    state = agent.read_json(ctl / "agent.json") or {"id": run_id, "state": "starting"}
    if state.get("state") in ("running", "starting") and isinstance(state.get("pid"), int):
        if agent.proc_start_ticks(state["pid"]) != state.get("start_ticks"):
            state = dict(state, state="lost")
    state["stop_requested"] = (ctl / "stop").exists() or (ctl / "kill").exists()
    return state


def follow(agent, run_id: str, offsets_arg: str) -> int:
    agent.ctl_dir(run_id)
    offsets = {name: 0 for name in LIVE}
    for item in offsets_arg.split(","):
        name, _, value = item.partition("=")
        if name in offsets and value.isdigit():
            offsets[name] = int(value)
    state = agent_state(agent, run_id)
    bundle = Path(state.get("bundle") or agent.ROOT / "runs" / run_id)
    out = sys.stdout
    last_state, last_hb = None, 0.0
    ctl = agent.ctl_dir(run_id)
    while True:
        sent = False
        for name, file_name in LIVE.items():
            # events: the lines the supervisor verified (signed by the child), not events.jsonl as written
            path = ctl / agent.VERIFIED if name == "events" else bundle / file_name
            data = _read_from(path, offsets[name], FRAME_BYTES)
            if data:
                out.write(json.dumps({"k": "data", "f": name, "o": offsets[name],
                                      "d": base64.b64encode(data).decode("ascii")}) + "\n")
                offsets[name] += len(data)
                sent = True
        state = agent_state(agent, run_id)
        key = json.dumps(state, sort_keys=True)
        now = time.monotonic()
        if key != last_state:
            out.write(json.dumps({"k": "state", **state}) + "\n")
            last_state = key
        elif now - last_hb >= 1.0:
            out.write('{"k": "hb"}\n')
            last_hb = now
        out.flush()
        if not sent and state.get("state") in ("finished", "lost", "failed"):
            out.write(json.dumps({"k": "end", **state}) + "\n")
            out.flush()
            return 0
        if not sent:
            time.sleep(0.05)


def runs(agent) -> list:
    """The runs under this root and every run of the host's index (other roots), each once."""
    ctl = agent.ROOT / "ctl"
    ids = [d.name for d in sorted(ctl.iterdir()) if agent.RUN_ID.match(d.name) and (d / "agent.json").is_file()] \
        if ctl.is_dir() else []
    ids += [e["id"] for e in agent._load("agent_index").indexed(agent.INDEX, agent.RUN_ID) if e["id"] not in ids]
    out = []
    for run_id in dict.fromkeys(ids):
        st = agent_state(agent, run_id)
        out.append({k: st.get(k) for k in ("id", "state", "script", "started_at", "ended_at", "exit_code",
                                           "status", "steps", "bundle", "host")})
    return out


def manifest(agent, run_id: str) -> dict:
    """A run's bundle, or (an argument starting with / or ~) any folder or file: File > Open Remote."""
    if run_id.startswith(("/", "~")):
        target = Path(os.path.expanduser(run_id))
        if target.is_file() and not target.is_symlink():
            return {"ok": True, "bundle": str(target.parent), "files": [[target.name, target.stat().st_size]],
                    "total": target.stat().st_size}
        bundle = target
    else:
        agent.ctl_dir(run_id)
        bundle = Path(agent_state(agent, run_id).get("bundle") or "")
    if not bundle.is_dir():
        return {"ok": False, "error": f"no bundle or folder {run_id} on this host"}
    files = []
    for dirpath, dirnames, filenames in os.walk(bundle):
        dirnames[:] = sorted(d for d in dirnames if not os.path.islink(os.path.join(dirpath, d)))
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode):
                files.append([os.path.relpath(path, bundle), st.st_size])
    return {"ok": True, "bundle": str(bundle), "files": files, "total": sum(size for _, size in files)}


def pack(agent, run_id: str) -> int:
    m = manifest(agent, run_id)
    if not m.get("ok"):
        agent.say(m)
        return 2
    bundle = Path(m["bundle"])
    gz = gzip.GzipFile(fileobj=sys.stdout.buffer, mode="wb", compresslevel=1)  # traces are gzip'd already
    with gz, tarfile.open(fileobj=gz, mode="w|") as tar:
        for rel, _ in m["files"]:
            path = bundle / rel
            try:
                with open(path, "rb") as fh:
                    info = tar.gettarinfo(arcname=rel, fileobj=fh)
                    if info.isreg():
                        tar.addfile(info, fh)
            except OSError:
                continue  # vanished meanwhile
    sys.stdout.flush()
    return 0


def ls(path: str) -> dict:
    folder = Path(os.path.expanduser(path or "~"))
    try:
        entries = []
        for i, entry in enumerate(sorted(os.scandir(folder), key=lambda e: e.name)):
            if i >= MAX_LS:
                break
            try:
                is_dir = entry.is_dir()
                size = 0 if is_dir else entry.stat().st_size
            except OSError:
                continue
            entries.append([entry.name, is_dir, size])
    except OSError as exc:
        return {"ok": False, "error": f"cannot list {folder}: {exc.strerror or exc}"}
    return {"ok": True, "path": str(folder.resolve()), "entries": entries}


def interpreters(folder: str) -> dict:
    """python3 on PATH, conda envs (conda's own list and the usual install places), venvs in and under
    the chosen folder (two levels)."""
    home = os.path.expanduser("~")
    found = []
    for name in ("python3", "python"):
        path = shutil.which(name)
        if path:
            found.append(path)
    patterns = [f"{home}/{d}/envs/*/bin/python" for d in ("miniconda3", "anaconda3", "miniforge3", "mambaforge")]
    patterns += [f"{home}/{d}/bin/python" for d in ("miniconda3", "anaconda3", "miniforge3", "mambaforge")]
    patterns += ["/opt/conda/bin/python", "/opt/conda/envs/*/bin/python"]
    base = os.path.expanduser(folder or "~")
    patterns += [f"{base}/{d}/bin/python" for d in ("*", "*/*")]
    for pattern in patterns:
        for path in sorted(glob.glob(pattern))[:50]:
            venv = Path(path).parent.parent
            if "/envs/" in path or (venv / "pyvenv.cfg").is_file() or (venv / "conda-meta").is_dir():
                found.append(path)
    seen, out = set(), []
    for path in found:
        if path not in seen and os.access(path, os.X_OK):
            seen.add(path)
            out.append(path)
    return {"ok": True, "interpreters": out}


def main(cmd: str, rest: list, agent) -> int:
    if cmd == "follow" and len(rest) >= 1:
        return follow(agent, rest[0], rest[1] if len(rest) > 1 else "")
    if cmd == "list":
        agent.say({"ok": True, "runs": runs(agent)})
        return 0
    if cmd == "manifest" and rest:
        agent.say(manifest(agent, rest[0]))
        return 0
    if cmd == "pack" and rest:
        return pack(agent, rest[0])
    if cmd == "ls":
        agent.say(ls(rest[0] if rest else "~"))
        return 0
    if cmd == "clock":
        for _ in range(64):
            if not sys.stdin.readline():
                break
            sys.stdout.write(f"{time.time_ns()}\n")
            sys.stdout.flush()
        return 0
    if cmd == "interpreters":
        agent.say(interpreters(rest[0] if rest else "~"))
        return 0
    agent.say({"ok": False, "error": f"unknown command: {cmd}"})
    return 2
