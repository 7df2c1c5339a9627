"""RemoteSession: one profiled run on an SSH host, driven like core.runner.session.RunSession (Qt-free).

    s = RemoteSession(cfg, SshHost("gpu-box")).start()     # or RemoteSession.attach(host, run_id, out)
    while not s.finished:
        up = s.poll()             # the same Update: new events, console lines, exit code once done
    s.bundle.root                 # the local bundle, fetched once the run ended

The run itself is launched, supervised and stopped on the host by the uploaded agent (agent.py), so it
survives a dropped connection or a killed desktop. Here a follower thread streams the bundle's live files
(events.jsonl, stdout/stderr.log, nvml.csv) from byte offsets over the SSH master and appends them to
the local bundle folder - the local EventTail, console and GPU rings read them as for a local run; when
the connection drops it says "disconnected - reconnecting (n)" and resumes from the local files' sizes.
When the run has ended the whole bundle is fetched (fetch.py) over the same folder.
"""
from __future__ import annotations

import base64
import binascii
import collections
import json
import logging
import os
import re
import secrets
import threading
import time
from pathlib import Path

from core.remote import fetch as fetch_mod
from core.remote.agent import BUNDLE_TOKEN, RUNNER_TOKEN
from core.remote.mirror import MirrorSampler
from core.remote.mirrors import _iso_ns, _mirror_of, measure_clock, note_mirror, unfinished_mirrors, validate_remote  # noqa: F401  (re-exported)
from core.remote.runner import Helper, RemoteError
from core.remote.ssh import AuthFailed, SshError, SshHost
from core.runner import bundle as bl
from core.runner.config import RunConfig
from core.runner.events_check import valid
from core.runner.launch import build_argv, build_env
from core.runner.livestate import LiveState, printable
from core.runner.process import StopPlan
from core.runner.protocol import EventTail
from core.runner.session import Update

log = logging.getLogger(__name__)
LIVE_FILES = {"events": bl.EVENTS, "stdout": bl.STDOUT_LOG, "stderr": bl.STDERR_LOG, "nvml": bl.NVML_CSV}
FRAME_LINE_MAX = 2 << 20
SILENCE_S = 15.0  # no frame (the agent sends one a second) for this long: the connection is dead
MAX_BAD_FRAMES = 10_000
ENDED = ("finished", "lost", "failed")


class RemoteStartError(RuntimeError):
    """The remote run could not start; str(exc) is one line."""


class _RemoteProc:
    """What `ptprof record` touches of RunSession.proc: the second Ctrl-C's kill, the stop time."""

    def __init__(self, session: "RemoteSession"):
        self.session = session
        self.stop_requested_at: float | None = None
        self.signals_sent: list[str] = []

    def kill(self) -> None:
        self.session.kill()


class RemoteSession:
    def __init__(self, cfg: RunConfig, host: SshHost, plan: StopPlan = StopPlan(), doctor: dict | None = None,
                 helper: Helper | None = None, out_dir: str | Path | None = None, resume_id: str = "",
                 remote_dir: str = ""):
        self.cfg, self.host, self.plan, self.doctor = cfg, host, plan, doctor
        self.remote_dir = (remote_dir or "").strip()  # the bundle's folder on the host: DIR/<id> ("" = the agent's root)
        self.helper = helper or Helper(host, python=cfg.python)
        root = Path(out_dir or cfg.out_dir or bl.default_dir(cfg.bundle_stem or "run")).expanduser()
        if resume_id and _mirror_of(root) == resume_id:  # the folder of an earlier follow: resume it
            self.bundle = bl.Bundle(root.resolve())
        else:
            self.bundle = bl.prepare(root)
        self.state = LiveState()
        self.tail = EventTail(str(self.bundle.events))
        self.proc = _RemoteProc(self)
        self.sampler: MirrorSampler | None = None
        self.run_id = ""
        self.remote: dict = {}  # the agent's last state (agent.json)
        self.started_ns = 0
        self.exit_code: int | None = None
        self._run_json: dict = {}
        self.heard = False
        self.bad_events = 0
        self.bad_frames = 0
        self.final_notices: list[str] = []
        self.start_timed_out = False
        self.stopped_after_window = False
        self.connection = "connecting"
        self.reconnects = 0
        self.fetching = False
        self.fetch_progress = (0, 0)
        self.fetched: fetch_mod.Fetched | None = None
        self.fetch_error = ""
        self.fetch_cancelled = False  # cancel_fetch() took effect: the local folder holds no part of the bundle
        self.first_step_s: float | None = None  # seconds from start() to the first step event seen here
        # desktop clock - host clock (ns), measured at connect (Helper.clock_offset): the live view puts the
        # host's stamps (events, GPU samples) on this desktop's clock; the bundle keeps the host's own
        self.clock_offset_ns = 0
        self._t_start = 0.0
        self._offsets = {name: 0 for name in LIVE_FILES}
        self._partial = {"stdout": b"", "stderr": b""}
        self._lines: collections.deque = collections.deque(maxlen=20_000)
        self._lock = threading.Lock()
        self._ended: dict | None = None
        self._quit = threading.Event()
        self._thread: threading.Thread | None = None
        self._fetch_thread: threading.Thread | None = None
        self._cancel_fetch = threading.Event()

    # -- RunSession's interface -----------------------------------------------------------------------------
    @property
    def finished(self) -> bool:
        return self.exit_code is not None

    @property
    def stopping_requested(self) -> bool:
        return self.proc.stop_requested_at is not None

    @property
    def stopping(self) -> bool:
        return self.stopping_requested and not self.finished

    def start(self) -> "RemoteSession":
        """Connect, upload the runner if needed, start the run detached on the host. RemoteStartError."""
        cfg = self.cfg
        self._t_start = time.monotonic()
        self.started_ns = time.time_ns()
        argv = build_argv(cfg, BUNDLE_TOKEN, child=f"{RUNNER_TOKEN}/child.py")
        env = build_env(cfg, BUNDLE_TOKEN, base={}, plan=self.plan)
        env.pop("PTPROF_LAUNCHER_PID", None)  # the agent's own pid, set there
        run_json = {"format": bl.FORMAT, "status": "running", "config": cfg.to_dict(),
                    "argv": [*(["-m", cfg.module] if cfg.module else [cfg.script]), *cfg.args],
                    "command": argv, "python": cfg.python, "torch_version": None, "ended_at": None,
                    "exit_code": None, "doctor": self.doctor, "environment": None}
        run_id = re.sub(r"[^A-Za-z0-9_.-]", "_", self.bundle.root.name).lstrip(".-") + "-" + secrets.token_hex(3)
        spec = {"id": run_id, "argv": argv, "env": env, "cwd": cfg.cwd, "script": cfg.script if not cfg.module else "",
                "out": f"{self.remote_dir.rstrip('/') or '/'}/{run_id}" if self.remote_dir else "",
                "label": cfg.target, "nproc": cfg.nproc, "torchrun": cfg.torchrun, "nvml_hz": cfg.nvml_hz,
                "stop_after_window": cfg.stop_after_window, "run_json": run_json,
                "plan": [self.plan.sigint_grace_s, self.plan.sigterm_grace_s, self.plan.flush_grace_s,
                         self.plan.start_timeout_s]}
        try:
            self.host.connect()
            self.helper.ensure()
            self._measure_clock()
            answer = self.helper.call("start", input=json.dumps(spec).encode(), timeout=90)
        except (SshError, RemoteError) as exc:
            raise RemoteStartError(str(exc)) from None
        self._begin(answer)
        return self

    @classmethod
    def attach(cls, host: SshHost, run_id: str, out_dir: str | Path | None = None, python: str = "python3",
               helper: Helper | None = None, plan: StopPlan = StopPlan()) -> "RemoteSession":
        """Follow a run that is (or was) going on the host, resuming from the local folder's files."""
        try:
            host.connect()
            helper = (helper or Helper(host, python=python)).ensure()
            runs = {r.get("id"): r for r in helper.call("list").get("runs", []) if isinstance(r, dict)}
            offset = measure_clock(helper)
        except (SshError, RemoteError) as exc:
            raise RemoteStartError(str(exc)) from None
        if run_id not in runs:
            raise RemoteStartError(f"no run {run_id!r} on {host.label} (ptprof remote runs {host.label})")
        info = runs[run_id]
        cfg = RunConfig(script=str(info.get("script") or run_id), python=python)
        try:
            s = cls(cfg, host, plan=plan, helper=helper, out_dir=out_dir or Path("ptprof-runs") / run_id,
                    resume_id=run_id)
        except bl.BundleError as exc:
            raise RemoteStartError(str(exc)) from None
        s._t_start, s.clock_offset_ns = time.monotonic(), offset
        s.started_ns = _iso_ns(info.get("started_at")) + offset if _iso_ns(info.get("started_at")) else time.time_ns()
        for name, file_name in LIVE_FILES.items():  # resume: what the folder already holds is not asked again
            path = s.bundle.root / file_name
            s._offsets[name] = path.stat().st_size if path.is_file() and not path.is_symlink() else 0
        if s._offsets["nvml"]:
            (s.bundle.root / bl.NVML_CSV).unlink()  # re-read so the live plot has its history
            s._offsets["nvml"] = 0
        s._begin({"id": run_id, **info})
        return s

    def _measure_clock(self) -> None:
        self.clock_offset_ns = offset = measure_clock(self.helper)
        log.info("clock of %s: %+.3f s from this desktop's", self.host.label, -offset / 1e9)

    def live_t_ns(self, e: dict) -> int:
        """An event's host stamp on this desktop's clock (the live plot's time axis)."""
        t = e.get("t_ns")
        return int(t) + self.clock_offset_ns if isinstance(t, int) and not isinstance(t, bool) else 0

    def _begin(self, answer: dict) -> None:
        self.run_id = str(answer.get("id") or "")
        self.remote = answer
        if _mirror_of(self.bundle.root) != self.run_id:
            # until the fetch replaces it: which host and run this folder mirrors (attach resumes it; a
            # reader sees a bundle still running)
            bl.write_json(self.bundle.run_json, {
                "format": bl.FORMAT, "status": "running", "config": self.cfg.to_dict(),
                "remote": {"host": self.host.label, "ssh_config": self.host.config_file, "id": self.run_id,
                           "python": self.helper.python}})
            note_mirror(self.bundle.root)
        names = answer.get("gpus") if isinstance(answer.get("gpus"), list) else []
        self.sampler = MirrorSampler([str(n) for n in names][:64], str(answer.get("gpu_reason") or ""),
                                     self.cfg.nvml_hz, clock_offset_ns=self.clock_offset_ns)
        self.connection = "connected"
        self._thread = threading.Thread(target=self._follow_loop, name="ptprof-remote-follow", daemon=True)
        self._thread.start()

    def poll(self) -> Update:
        up = Update()
        if self.finished:
            return up
        up.events = self._take_events()
        with self._lock:
            up.lines = list(self._lines)
            self._lines.clear()
        if self._ended is not None and not self.fetching and self._fetch_thread is None:
            self._start_fetch()
        if self._fetch_thread is not None and not self._fetch_thread.is_alive():
            up.events += self._take_events()
            self._finalize()
            up.exit_code = self.exit_code
        return up

    def _take_events(self) -> list[dict]:
        out = []
        while True:
            raw = self.tail.poll()
            events = [e for e in raw if valid(e)]
            self.bad_events += len(raw) - len(events) + self.tail.skipped
            self.tail.skipped = 0
            for e in events:
                self.heard = True
                self.state.fold(e)
                if e["type"] == "step" and self.first_step_s is None:
                    self.first_step_s = time.monotonic() - self._t_start
            out += events
            if not self.tail.more:
                return out

    def request_stop(self) -> None:
        if self.finished or self.proc.stop_requested_at is not None:
            return
        self.proc.stop_requested_at = time.monotonic()
        self._send("stop")

    def kill(self) -> None:
        if not self.finished:
            if self.proc.stop_requested_at is None:
                self.proc.stop_requested_at = time.monotonic()
            self._send("stop", "--kill")

    def _send(self, *args: str) -> None:
        """The request goes out from a thread (the UI never waits on the network); a dropped connection
        retries until the follower sees the run end."""
        def go():
            for attempt in range(60):
                try:
                    self.helper.call(*args[:1], self.run_id, *args[1:], timeout=30)
                    return
                except (SshError, RemoteError) as exc:
                    log.warning("stop request to %s: %s", self.host.label, exc)
                    if self._ended is not None or self._quit.wait(min(1 + attempt, 5)):
                        return
        threading.Thread(target=go, name="ptprof-remote-stop", daemon=True).start()

    def stop_and_wait(self, tick_s: float = 0.05) -> int:
        self.request_stop()
        deadline = time.monotonic() + self.plan.safety_cap_s() + 60
        while not self.finished and time.monotonic() < deadline:
            self.poll()
            time.sleep(tick_s)
        if not self.finished:
            self.detach("the host did not confirm the stop")
        return self.exit_code

    def detach(self, why: str = "") -> None:
        """Stop following; the run goes on on the host (attach or fetch it later)."""
        self._quit.set()
        self._cancel_fetch.set()
        if not self.finished:
            self.final_notices.append(f"{why + ': ' if why else ''}the run goes on on {self.host.label}: "
                                      f"ptprof remote attach {self.host.label} {self.run_id}")
            self.state.notices.extend(self.final_notices)
            self.exit_code = -1

    def cancel_fetch(self) -> None:
        self._cancel_fetch.set()

    # -- the follower thread --------------------------------------------------------------------------------
    def _follow_loop(self) -> None:
        attempt = 0
        while not self._quit.is_set():
            try:
                if attempt:
                    self.host.connect()
                offsets = ",".join(f"{k}={v}" for k, v in self._offsets.items())
                proc = self.helper.popen("follow", self.run_id, offsets)
            except AuthFailed as exc:  # a password nobody can type here (no terminal), or refused: one line
                self.detach(f"cannot reconnect: {exc}")
                return
            except (SshError, OSError, ValueError) as exc:
                log.info("follow %s: %s", self.host.label, exc)
                proc = None
            if proc is not None:
                if self._read_frames(proc):
                    self.connection = "connected"
                    return
            if self._quit.is_set():
                return
            attempt += 1
            self.reconnects = attempt
            self.connection = f"disconnected - reconnecting ({attempt})"
            self._quit.wait(min(0.5 * attempt, 5.0))

    def _read_frames(self, proc) -> bool:
        """Frames until the end frame (True) or the channel dies / falls silent (False)."""
        last = [time.monotonic()]

        def watchdog():
            while proc.poll() is None:
                if time.monotonic() - last[0] > SILENCE_S or self._quit.is_set():
                    proc.kill()
                    return
                time.sleep(0.5)
        threading.Thread(target=watchdog, name="ptprof-remote-watchdog", daemon=True).start()
        try:
            while True:
                line = proc.stdout.readline(FRAME_LINE_MAX)
                if not line:
                    return False
                last[0] = time.monotonic()
                if self.connection != "connected":
                    self.connection = "connected"
                if self._frame(line):
                    return True
                if self.bad_frames > MAX_BAD_FRAMES:
                    self.fetch_error = f"{self.host.label} sends garbage instead of the run's data: following stopped"
                    self._ended = {"state": "lost"}
                    return True
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()

    def _frame(self, line: bytes) -> bool:
        try:
            frame = json.loads(line)
        except (ValueError, RecursionError):
            self.bad_frames += 1
            return False
        if not isinstance(frame, dict):
            self.bad_frames += 1
            return False
        kind = frame.get("k")
        if kind == "data":
            self._data(frame)
        elif kind in ("state", "end"):
            state = {k: v for k, v in frame.items() if k != "k"}
            self.remote = state
            if kind == "end":
                self._ended = state
                return True
        elif kind != "hb":
            self.bad_frames += 1
        return False

    def _data(self, frame: dict) -> None:
        name, offset, text = frame.get("f"), frame.get("o"), frame.get("d")
        if name not in LIVE_FILES or not isinstance(offset, int) or isinstance(offset, bool) or not isinstance(text, str):
            self.bad_frames += 1
            return
        try:
            data = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            self.bad_frames += 1
            return
        have = self._offsets[name]
        if offset > have or offset + len(data) <= have:
            self.bad_frames += offset > have  # a gap is wrong; a repeat (after a reconnect) is harmless
            return
        data = data[have - offset:]
        path = self.bundle.root / LIVE_FILES[name]
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        self._offsets[name] = have + len(data)
        if name == "nvml" and self.sampler is not None:
            self.sampler.feed(data)
        elif name in self._partial:
            lines = (self._partial[name] + data).split(b"\n")
            self._partial[name] = lines.pop()[-1_000_000:]
            with self._lock:
                self._lines.extend((name, ln[:2000].decode("utf-8", "replace").rstrip("\r")) for ln in lines)

    # -- the end: fetch, then run.json ----------------------------------------------------------------------
    def _start_fetch(self) -> None:
        self.fetching = True

        def go():
            try:
                if self.fetch_error:
                    return
                self.fetched = fetch_mod.fetch_staged(self.helper, self.run_id, self.bundle.root,
                                               progress=lambda d, t: setattr(self, "fetch_progress", (d, t)),
                                               cancel=self._cancel_fetch.is_set)
            except fetch_mod.FetchCancelled:
                self.fetch_cancelled = True
                self.fetch_error = (f"fetch cancelled: nothing of the bundle was kept in {self.bundle.root} (only what "
                                    f"the live view showed; not a bundle); it stays on {self.host.label}")
            except fetch_mod.FetchError as exc:
                self.fetch_error = str(exc)
            except (SshError, RemoteError) as exc:
                self.fetch_error = f"fetch failed: {exc}"
        self._fetch_thread = threading.Thread(target=go, name="ptprof-remote-fetch", daemon=True)
        self._fetch_thread.start()

    def _believe(self, run: dict) -> None:
        """The lines mirrored here were shown live as they came, unverified (the run's key stays on the
        host); the summary is the host's run.json, whose supervisor kept only lines the child signed."""
        st = self.state
        for attr, key in (("step", "steps"), ("cycles", "cycles")):
            if isinstance(run.get(key), int) and not isinstance(run.get(key), bool):
                setattr(st, attr, run[key])
        if isinstance(run.get("notices"), list):
            st.notices = [printable(str(n))[:2000] for n in run["notices"][:1000]]
        if isinstance(run.get("sync_sites"), list):
            st.syncs = [printable(str(n))[:500] for n in run["sync_sites"][:1000]]
        exc = run.get("exception")
        st.exception = printable(exc)[:2000] if isinstance(exc, str) else ""

    def _finalize(self) -> None:
        self.fetching = False
        end = self._ended or {}
        data = bl.read_json(self.bundle.run_json) if self.fetched is not None else None
        self._run_json = data if data is not None else {"status": end.get("state"), "error": self.fetch_error or None}
        code = end.get("exit_code", self._run_json.get("exit_code"))
        if not isinstance(code, int) or isinstance(code, bool) or not -(1 << 16) < code < 1 << 16:
            code = 1  # no exit code from the host (lost, garbage): never called a success
        if data is not None:
            self._believe(data)
        notices = end.get("final_notices") if isinstance(end.get("final_notices"), list) else []
        self.final_notices.extend(str(n)[:2000] for n in notices)
        if end.get("state") == "lost":
            self.final_notices.append(f"the run's supervisor on {self.host.label} is gone (host rebooted or killed)")
        if self.fetch_error:
            self.final_notices.append(f"{self.fetch_error} (ptprof remote fetch {self.host.label} {self.run_id})")
        self.state.notices.extend(n for n in self.final_notices if n not in self.state.notices)
        self.start_timed_out = bool(end.get("start_timed_out"))
        self.stopped_after_window = bool(end.get("stopped_after_window"))
        if isinstance(self._run_json.get("stop_signals"), list):
            self.proc.signals_sent = [str(s) for s in self._run_json["stop_signals"]]
        if self.start_timed_out and isinstance(self._run_json.get("error"), str):
            self.state.exception = self._run_json["error"]
        self._quit.set()
        self.exit_code = code
