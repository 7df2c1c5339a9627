"""ptprof's helper on a remote host: runs one profiled run there, detached from SSH (stdlib only, Python >= 3.9).

Uploaded by core/remote/runner.py into ~/.cache/ptprof/runner-<content hash>/ next to child.py and the
modules it loads; nothing else is installed on the host. The desktop runs it over SSH:

    python agent.py verify                      this folder's content matches its name (its hash)
    python agent.py start  < spec.json          start a run detached (own session): prints {"ok", "id", ...}
    python agent.py stop ID [--kill]            ask the run's supervisor to stop it (SIGINT -> SIGTERM -> SIGKILL)
    python agent.py follow ID OFFSETS           stream new bytes of the bundle's live files (agent_io.py)
    python agent.py list | manifest ID | pack ID | ls PATH | interpreters DIR     (agent_io.py)

A run: ROOT/runs/<id>/ is its bundle (the local layout); ROOT/ctl/<id>/ holds spec.json, agent.json (the
supervisor's state), agent.log and the stop / kill requests. The supervisor (`supervise`, started by
`start` in a new session, so a dropped connection or a closed terminal never reaches it) is the run's
launcher on the host, as `ptprof record` is locally: it starts the child in its own session, writes
the logs, samples the GPU (agent_gpu.py: nvidia-smi, NVML, amd-smi / rocm-smi), folds events.jsonl
(livestate.py) and writes run.json. Stop
requests are files in ctl/<id>/, so only the supervisor ever signals, and only the run's own process
tree (tree.py: pids known from the child it spawned, never pids read from events.jsonl alone).
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import platform
import re
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

_HERE = Path(__file__).resolve().parent
ROOT = Path(os.path.expanduser(os.environ.get("PTPROF_REMOTE_ROOT") or "~/.cache/ptprof"))
# every run started on this host, whatever its root or bundle folder: one JSON line {"id", "ctl", "bundle"}
INDEX = Path(os.path.expanduser(os.environ.get("PTPROF_REMOTE_INDEX") or "~/.cache/ptprof/runs.idx"))
RUN_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,120}$")
BUNDLE_TOKEN, RUNNER_TOKEN = "@@PTPROF_BUNDLE@@", "@@PTPROF_RUNNER@@"  # placeholders in the spec's argv / env
TICK_S = 0.05
VERIFIED = "events.verified.jsonl"  # in ctl/<id>/: the events the supervisor believed, for the live view


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"_ptprof_agent_{name}", _HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def content_hash(folder: Path) -> str:
    """sha256 over the folder's *.py files (name, NUL, bytes, NUL), sorted by name: core/remote/runner.py's too."""
    h = hashlib.sha256()
    for path in sorted(folder.glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def say(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def write_json(path: Path, data: dict) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w") as fh:
        json.dump(data, fh, indent=1, default=str)
    os.replace(tmp, path)


def read_json(path: Path):
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def iso_utc(t_ns: int) -> str:
    t = t_ns / 1e9
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1000):03d}Z"


def proc_start_ticks(pid: int):
    try:
        return int((Path("/proc") / str(pid) / "stat").read_bytes().rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def ctl_dir(run_id: str) -> Path:
    """The run's ctl/<id>/ under this root, else where the index says it is (a run started under another
    PTPROF_REMOTE_ROOT)."""
    if not RUN_ID.match(run_id or ""):
        raise SystemExit(_fail(f"not a run id: {run_id!r}"))
    here = ROOT / "ctl" / run_id
    if not here.is_dir():
        for entry in reversed(_load("agent_index").indexed(INDEX, RUN_ID)):
            if entry["id"] == run_id:
                return Path(entry["ctl"])
    return here


def _fail(message: str) -> int:
    say({"ok": False, "error": message})
    return 2


def _mkdir_private(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o700)


# -- start: checks, then the detached supervisor --------------------------------------------------------------
def cmd_start() -> int:
    try:
        spec = json.loads(sys.stdin.read(1 << 22))
        run_id = spec["id"]
        argv = list(spec["argv"])
    except (ValueError, KeyError, TypeError):
        return _fail("bad start request")
    if not RUN_ID.match(str(run_id)):
        return _fail(f"not a run id: {run_id!r}")
    cwd = os.path.expanduser(spec.get("cwd") or "~")
    if not os.path.isdir(cwd):
        return _fail(f"working directory not found on the host: {cwd}")
    script = spec.get("script") or ""
    if script and not os.path.isfile(os.path.join(cwd, os.path.expanduser(script))):
        return _fail(f"script not found on the host: {os.path.join(cwd, script)}")
    bundle = Path(os.path.expanduser(spec.get("out") or str(ROOT / "runs" / run_id)))
    if not bundle.is_absolute():
        bundle = Path(cwd) / bundle
    ctl = ROOT / "ctl" / run_id
    try:
        _mkdir_private(ROOT)
        _mkdir_private(ROOT / "ctl")
        if not spec.get("out"):
            _mkdir_private(ROOT / "runs")
        if bundle.exists() and (not bundle.is_dir() or any(bundle.iterdir())):
            return _fail(f"the bundle folder on the host exists and is not empty: {bundle}")
        bundle.mkdir(parents=True, exist_ok=True)
        (bundle / "traces").mkdir(exist_ok=True)
        ctl.mkdir(mode=0o700)
    except FileExistsError:
        return _fail(f"a run {run_id} exists already on the host")
    except OSError as exc:
        return _fail(f"cannot write the run folder on the host: {exc.strerror or exc}: {exc.filename or bundle}")
    runner = str(_HERE)
    sub = lambda v: str(v).replace(BUNDLE_TOKEN, str(bundle)).replace(RUNNER_TOKEN, runner)  # noqa: E731
    spec.update(argv=[sub(a) for a in argv], env={str(k): sub(v) for k, v in dict(spec.get("env") or {}).items()},
                bundle=str(bundle), cwd=cwd)
    run_json = spec.get("run_json")
    if isinstance(run_json, dict):
        run_json["command"] = spec["argv"]
        if script:  # as a local run.json says it: the script's absolute path on this host
            full = os.path.abspath(os.path.join(cwd, os.path.expanduser(script)))
            if isinstance(run_json.get("argv"), list) and run_json["argv"][:1] == [script]:
                run_json["argv"][0] = full
            if isinstance(run_json.get("config"), dict):
                run_json["config"].update(script=full, cwd=cwd)
    write_json(ctl / "spec.json", spec)
    _load("agent_index").index_run(INDEX, run_id, ctl, bundle)
    with open(ctl / "agent.log", "ab") as log:
        sup = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "supervise", run_id],
                               stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                               close_fds=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        state = read_json(ctl / "agent.json") or {}
        if state.get("state") not in (None, "starting"):
            say({"ok": state.get("state") != "failed", "id": run_id, "bundle": str(bundle), **state})
            return 0
        if sup.poll() is not None and not state:
            return _fail(f"the run's supervisor exited at once (exit {sup.returncode}): see {ctl / 'agent.log'}")
        time.sleep(TICK_S)
    return _fail("the run's supervisor did not start within 30 s")


# -- supervise: the run's launcher on this host -----------------------------------------------------------------
class Supervisor:
    def __init__(self, run_id: str):
        self.id = run_id
        self.ctl = ROOT / "ctl" / run_id
        self.spec = read_json(self.ctl / "spec.json")
        self.bundle = Path(self.spec["bundle"])
        plan = self.spec.get("plan") or [10.0, 5.0, 60.0, 60.0]
        self.sigint_s, self.sigterm_s, self.flush_s, self.start_timeout_s = (float(x) for x in plan)
        self.tree_mod, self.protocol, self.check = _load("tree"), _load("protocol"), _load("events_check")
        # auth.py imports core.runner.protocol: the uploaded copy stands in for the package here
        for name in ("core", "core.runner"):
            sys.modules.setdefault(name, types.ModuleType(name))
        sys.modules["core.runner.protocol"] = self.protocol
        self.key = _load("auth").RunKey()  # only lines the child signed with this run's key count (auth.py)
        self.forged_events = 0
        self.livestate = _load("livestate")
        self.state = self.livestate.LiveState()
        self.agent = {"id": run_id, "state": "starting", "pid": os.getpid(), "start_ticks": proc_start_ticks(os.getpid()),
                      "bundle": str(self.bundle), "script": self.spec.get("label", ""), "host": platform.node()}
        self.run_json = dict(self.spec.get("run_json") or {})
        self.signals: list[str] = []
        self.stop_at = None  # monotonic time of the stop request
        self.ready = False  # the child's launch event: its stop handlers are in place
        self.answered_at = None  # the child answered the stop (stopping / flushing): the flush grace counts from here
        self.term_at = None
        self.term_flush = False
        self.flushing = False
        self.ranks_started: set = set()
        self.ends: dict = {}
        self.bad_events = 0
        self.heard = False
        self.start_timed_out = False
        self.stopped_after_window = False
        self.done_ranks: set = set()
        self.world = max(1, int(self.spec.get("nproc") or 1))

    def publish(self, **changes) -> None:
        self.agent.update(changes, steps=self.state.step, phase=self.state.phase, updated_at=iso_utc(time.time_ns()))
        write_json(self.ctl / "agent.json", self.agent)

    def run(self) -> int:
        self.tree_mod.set_subreaper()
        spec, b = self.spec, self.bundle
        env = dict(os.environ)
        env.update(spec.get("env") or {})
        env["PTPROF_LAUNCHER_PID"] = str(os.getpid())  # the child stops if this supervisor dies (guards.Orphan)
        started_ns = time.time_ns()
        self.run_json.update(status="running", host=platform.node(), started_at=iso_utc(started_ns),
                             launcher_python=sys.executable, remote={"id": self.id, "bundle": str(b)})
        write_json(b / "run.json", self.run_json)
        # nvidia-smi, else NVML in this interpreter, else amd-smi / rocm-smi, else the reason in one line
        feed = _load("agent_gpu").open_feed(str(b / "nvml.csv"), float(spec.get("nvml_hz") or 10.0), env,
                                            _load("backend"), _load("agent_gpu_poll"))
        key_env, key_fds = self.key.child_env(bool(spec.get("torchrun")))
        env.update(key_env)
        try:
            with open(b / "stdout.log", "wb") as out, open(b / "stderr.log", "wb") as err:
                child = subprocess.Popen(spec["argv"], cwd=spec["cwd"], env=env, stdin=subprocess.DEVNULL,
                                         stdout=out, stderr=err, start_new_session=True, pass_fds=key_fds)
        except OSError as exc:
            self.key.close_child_end()
            self.state.exception = f"could not start {spec['argv'][0]}: {exc.strerror or exc}"
            self.finish(127, started_ns, feed, None, extra={"error": self.state.exception})
            return 0
        self.key.close_child_end()
        feed.start()
        self.run_json["gpu"] = {"backend": feed.backend if feed.available else "none", "devices": feed.names,
                                "facts": feed.facts, "nvml_index": feed.physical or None, "reason": feed.reason}
        write_json(b / "run.json", self.run_json)
        tree = self.tree_mod.RunTree(child.pid, f"PTPROF_BUNDLE={b}".encode("utf-8", "surrogateescape"))
        tail = self.protocol.EventTail(str(b / "events.jsonl"), verify=self.key.check_line)
        self.publish(state="running", child_pid=child.pid, gpus=feed.names, gpu_reason=feed.reason,
                     started_at=iso_utc(started_ns))
        t0, last_pub = time.monotonic(), 0.0
        while True:
            self.take(tail, tree, child)
            code = child.poll()
            if code is not None:
                break
            now = time.monotonic()
            if self.stop_at is None and (self.ctl / "stop").exists():
                self.request_stop(child, tree)
            if (self.ctl / "kill").exists() and "SIGKILL" not in self.signals:
                self.request_stop(child, tree)
                self.send(child, tree, signal.SIGKILL)
            if not self.heard and self.stop_at is None and now - t0 > self.start_timeout_s:
                self.start_timed_out = True
                self.state.exception = f"{spec['argv'][0]} did not start the script within {self.start_timeout_s:.0f} s"
                self.request_stop(child, tree)
                self.send(child, tree, signal.SIGKILL)
            self.escalate(child, tree)
            if now - last_pub > 1.0:
                tree.refresh()
                self.publish()
                last_pub = now
            time.sleep(TICK_S)
        self.take(tail, tree, child)
        self.kill_leftovers(child, tree)
        self.take(tail, tree, child)
        self.finish(code if code >= 0 else 128 - code, started_ns, feed, child)
        return 0

    def take(self, tail, tree, child) -> None:
        while True:
            raw = tail.poll()
            authentic = [e for e in raw if self.key.fresh(e)]
            self.forged_events += len(raw) - len(authentic) + tail.rejected
            tail.rejected = 0
            believed = []
            for e in authentic:
                if not self.check.valid(e) or (e["type"] == "start" and not self.plausible_start(e, tree, child)):
                    self.bad_events += 1
                    continue
                self.fold(e, child, tree)
                believed.append(json.dumps(e, separators=(",", ":")) + "\n")
            if believed:  # what `follow` streams live: only lines the child signed (the bundle keeps the file as is)
                with open(self.ctl / VERIFIED, "a") as fh:
                    fh.write("".join(believed))
            self.bad_events += tail.skipped
            tail.skipped = 0
            if not tail.more:
                return

    def plausible_start(self, e: dict, tree, child) -> bool:
        n = self.world
        if not 0 <= e.get("rank", 0) < n or e.get("world_size", 1) > n:
            return False
        return bool(self.spec.get("torchrun")) or e["pid"] == child.pid or e["pid"] in tree.refresh()

    def fold(self, e: dict, child, tree) -> None:
        self.heard = True
        self.state.fold(e)
        kind, rank = e["type"], e.get("rank", 0)
        if kind == "launch":
            self.ready = True
        elif kind != "step" and self.answered_at is not None and self.term_at is None:
            self.answered_at = time.monotonic()  # progress after the answer: the flush grace counts anew
        if kind == "start":
            self.ranks_started.add(rank)
            if self.run_json.get("environment") is None:
                self.run_json["environment"] = {k: self.livestate.escaped(e.get(k)) for k in (
                    "python", "torch_version", "cuda", "devices", "world_size", "cwd", "device_properties")}
            if isinstance(e.get("world_size"), int):
                self.world = max(self.world, e["world_size"])
        elif kind == "phase" and e.get("phase") == "done" and self.spec.get("stop_after_window"):
            self.done_ranks.add(rank)
            if len(self.done_ranks) >= self.world and self.stop_at is None:
                self.stopped_after_window = True
                self.request_stop(child, tree)
        elif kind == "end":
            self.ends[rank] = e["exit_code"]
        elif kind == "notice" and e.get("code") in ("flushing", "stopping", "interrupted", "terminated"):
            if e.get("code") == "flushing":
                self.flushing = True
            if self.stop_at is not None and self.answered_at is None:
                self.answered_at = time.monotonic()

    def send(self, child, tree, sig: int) -> None:
        self.signals.append(signal.Signals(sig).name)
        try:
            os.killpg(child.pid, sig)  # the child's own session / group
        except (ProcessLookupError, PermissionError):
            pass
        tree.signal(sig, skip_groups={child.pid})  # the rest of its tree, each process once

    def request_stop(self, child, tree) -> None:
        if self.stop_at is None:
            self.stop_at = time.monotonic()
            self.send(child, tree, signal.SIGINT)
            self.publish(stopping=True)

    def escalate(self, child, tree) -> None:
        """process.py's plan on wall time: SIGTERM after sigint_grace without an answer (flush_grace once
        answered, counted from the last progress), SIGKILL sigterm_grace after it (flush_grace when it
        said it is flushing after the SIGTERM). A child not yet ready gets start_timeout first."""
        if self.stop_at is None or "SIGKILL" in self.signals:
            return
        now = time.monotonic()
        if not self.ready and now - self.stop_at < self.start_timeout_s:
            return
        if self.term_at is None:
            since = self.answered_at if self.answered_at is not None else self.stop_at
            if now - since >= (self.flush_s if self.answered_at is not None else self.sigint_s):
                self.send(child, tree, signal.SIGTERM)
                self.term_at = now
        else:
            if self.flushing and not self.term_flush and self.answered_at is not None and self.answered_at > self.term_at:
                self.term_flush, self.term_at = True, now
            if now - self.term_at >= (self.flush_s if self.term_flush else self.sigterm_s):
                self.send(child, tree, signal.SIGKILL)

    def kill_leftovers(self, child, tree) -> None:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        deadline = time.monotonic() + 5
        while tree.signal(signal.SIGKILL) and time.monotonic() < deadline:
            time.sleep(0.02)
        tree.reap()

    def finish(self, code: int, started_ns: int, feed, child, extra=None) -> None:
        """run.json's end, as RunSession._finalize writes it locally."""
        feed.stop()
        ended_ns = time.time_ns()
        st, extra = self.state, dict(extra or {})
        stopping = self.stop_at is not None
        code, settled, notices = self.livestate.settle_exit(code, self.ends, self.ranks_started,
                                                            bool(self.spec.get("torchrun")), stopping)
        extra.update(settled)
        lost = sorted(self.ranks_started - set(self.ends))
        if lost:
            window = st.phase in ("warmup", "active")
            notices.append(f"rank(s) {', '.join(map(str, lost))} ended without ptprof's end of run (os._exit, a crash "
                           f"or a kill, exit {code})" + (f": the trace window in progress at step {st.step} was lost"
                                                        if window else ""))
            extra.update(end_seen=False, lost_window=window)
        if self.forged_events:
            notices.append(f"events.jsonl: {self.forged_events} line(s) not written by ptprof's runner "
                           "(the script wrote to the file?) were ignored")
            extra["forged_event_lines"] = self.forged_events
        if self.bad_events:
            notices.append(f"events.jsonl: {self.bad_events} malformed line(s) skipped")
            extra["bad_event_lines"] = self.bad_events
        st.notices.extend(notices)
        if self.start_timed_out:
            extra["error"] = st.exception
        status = "ok" if code == 0 else ("stopped" if stopping else "failed")
        if self.start_timed_out:
            status = "failed"
        elif st.ooms and code != 0:
            status = "oom"  # memhist.py: the failing allocation is in run.json "oom"
            extra["oom"] = st.ooms
        elif lost and status == "ok":
            status = "incomplete"
        traces = sorted(p for p in (self.bundle / "traces").glob("*.pt.trace.json*")) \
            if (self.bundle / "traces").is_dir() else []
        self.run_json.update({
            "status": status, "exit_code": code, "ended_at": iso_utc(ended_ns),
            "duration_s": round((ended_ns - started_ns) / 1e9, 3), "torch_version": st.torch_version or None,
            "steps": st.step, "cycles": st.cycles, "step_source": st.step_source, "sync_sites": st.syncs,
            "exception": st.exception or None, "notices": st.notices,
            "traces": [str(p.relative_to(self.bundle)) for p in traces], "stop_signals": list(self.signals),
            "stop_reason": "window_done" if self.stopped_after_window else ("requested" if stopping else None),
            **extra})
        if feed.available:
            self.run_json["nvml"] = {"samples": feed.samples, "rate_hz": float(self.spec.get("nvml_hz") or 10.0),
                                     "sampler_cpu_s": None}
        write_json(self.bundle / "run.json", self.run_json)
        self.publish(state="finished", exit_code=code, status=status, ended_at=iso_utc(ended_ns),
                     final_notices=notices, start_timed_out=self.start_timed_out,
                     stopped_after_window=self.stopped_after_window)


def cmd_stop(run_id: str, kill: bool) -> int:
    ctl = ctl_dir(run_id)
    if not (ctl / "agent.json").is_file():
        return _fail(f"no run {run_id} on this host")
    fd = os.open(ctl / ("kill" if kill else "stop"), os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    os.close(fd)
    say({"ok": True, **(read_json(ctl / "agent.json") or {})})
    return 0


def main(argv) -> int:
    if not argv:
        return _fail("usage: agent.py verify|start|stop|follow|list|manifest|pack|ls|interpreters ...")
    cmd, rest = argv[0], argv[1:]
    if cmd == "verify":
        expected = _HERE.name.rpartition("-")[2]
        got = content_hash(_HERE)
        say({"ok": got.startswith(expected) and len(expected) >= 16, "python": platform.python_version(),
             "executable": sys.executable})
        return 0
    if sys.version_info < (3, 9):
        return _fail(f"Python {platform.python_version()} on the host is too old for ptprof's runner (needs 3.9+)")
    if cmd == "start":
        return cmd_start()
    if cmd == "supervise":
        return Supervisor(rest[0]).run()
    if cmd == "stop":
        return cmd_stop(rest[0], "--kill" in rest[1:])
    io = _load("agent_io")
    return io.main(cmd, rest, sys.modules[__name__])


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BrokenPipeError:  # the SSH channel went away mid-answer: the run itself goes on
        os._exit(0)
