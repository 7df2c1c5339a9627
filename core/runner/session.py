"""One profiled run, Qt-free: bundle + child process group + GPU sampler + events tail + run.json.

    s = RunSession(validate(cfg)).start()
    while not s.finished:
        update = s.poll()          # new events, console lines, exit code once done
        ...                        # s.request_stop() at any time (SIGINT -> SIGTERM -> SIGKILL)
    s.bundle.root                  # open with core.trace.loader.load

The GUI controller drives the same object from a QTimer; `ptprof record` from a loop.
"""
from __future__ import annotations

import logging
import platform
import sys
import time
from dataclasses import dataclass, field

from core.gpu.backend import GpuBackend, open_backend
from core.gpu.sampler import Sampler
from core.runner import bundle as bl
from core.runner.auth import RunKey
from core.runner.config import RunConfig
from core.runner.events_check import valid
from core.runner.launch import build_argv, build_env
from core.runner.livestate import LiveState, escaped, settle_exit  # noqa: F401 (one fold, here and on a remote host)
from core.runner.process import ChildProcess, StopPlan
from core.runner.protocol import EventTail

WINDOW_DONE_GRACE_S = 30.0  # --stop-after-window: the child ends the script itself; SIGINT only after this

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Update:
    events: list[dict] = field(default_factory=list)
    lines: list[tuple[str, str]] = field(default_factory=list)
    exit_code: int | None = None  # set once, on the poll that saw the run end


class RunSession:
    def __init__(self, cfg: RunConfig, backend: GpuBackend | None = None, plan: StopPlan = StopPlan(),
                 doctor: dict | None = None):
        self.cfg = cfg
        self.doctor = doctor  # core.runner.doctor.DoctorReport.to_dict() when the GUI checked the interpreter
        root = cfg.out_dir or bl.default_dir(cfg.bundle_stem)
        self.bundle = bl.prepare(root)
        self._backend = backend
        self.plan = plan
        self.proc: ChildProcess | None = None
        self.sampler: Sampler | None = None
        self.key = RunKey()  # only lines the child signed with this run's key are believed (auth.py)
        self.tail = EventTail(str(self.bundle.events), verify=self.key.check_line)
        self.forged_events = 0  # lines without a valid MAC, or replays: written by someone else
        self.state = LiveState()
        self.started_ns = 0
        self.ended_ns = 0
        self.exit_code: int | None = None
        self._run_json: dict = {}
        self.heard = False  # any valid event from the interpreter (launch, start, exception …)
        self.ranks_started: set[int] = set()
        self.ends: dict[int, int] = {}  # rank -> exit code of its end event
        self.bad_events = 0  # lines of events.jsonl skipped: not JSON, bad fields
        self.start_timed_out = False
        self.final_notices: list[str] = []  # what the launcher itself found at the end (lost window …)
        self._started_mono = 0.0
        self._done_ranks: set[int] = set()  # ranks whose schedule is done (--stop-after-window)
        self._world = max(1, cfg.nproc)
        self.stopped_after_window = False
        self._window_stop_at = 0.0

    @property
    def finished(self) -> bool:
        return self.exit_code is not None

    @property
    def stopping(self) -> bool:
        return self.proc is not None and self.proc.stop_requested_at is not None and not self.finished

    def start(self) -> "RunSession":
        cfg = self.cfg
        argv = build_argv(cfg, self.bundle.root)
        self.started_ns = time.time_ns()
        self._run_json = {
            "format": bl.FORMAT, "status": "running", "config": cfg.to_dict(),
            "argv": [*(["-m", cfg.module] if cfg.module else [cfg.script]), *cfg.args],
            "command": argv, "python": cfg.python, "torch_version": None, "host": platform.node(),
            "started_at": bl.iso_utc(self.started_ns), "ended_at": None, "exit_code": None,
            "launcher_python": sys.executable, "doctor": self.doctor, "environment": None,
        }
        bl.write_json(self.bundle.run_json, self._run_json)
        env = build_env(cfg, self.bundle.root, plan=self.plan)
        backend = self._backend if self._backend is not None else open_backend(env.get("CUDA_VISIBLE_DEVICES"))
        key_env, key_fds = self.key.child_env(cfg.torchrun)
        env.update(key_env)
        self.proc = ChildProcess(argv, cfg.workdir, env, self.bundle.stdout_log, self.bundle.stderr_log, self.plan,
                                 marker=f"PTPROF_BUNDLE={env['PTPROF_BUNDLE']}", await_ready=True, pass_fds=key_fds)
        self._started_mono = time.monotonic()
        try:
            self.proc.start()
        except OSError as exc:
            self.key.close_child_end()
            backend.close()
            self.state.exception = f"could not start {cfg.python}: {exc.strerror or exc}"
            self._finalize(127, extra={"error": self.state.exception})
            return self
        self.key.close_child_end()
        proc = self.proc
        self.sampler = Sampler(backend, cfg.nvml_hz, csv_path=self.bundle.nvml_csv,
                               pids=proc.pids).start()
        facts = getattr(backend, "device_facts", None)
        self._run_json["gpu"] = {"backend": backend.name, "devices": backend.device_names(),
                                 "facts": facts() if facts else [],  # NVML: memory, peak clocks per GPU
                                 "nvml_index": getattr(backend, "physical", None),  # nvml.csv gpu i = this NVML GPU
                                 "reason": self.sampler.reason}
        bl.write_json(self.bundle.run_json, self._run_json)
        return self

    def poll(self) -> Update:
        up = Update()
        if self.proc is None or self.finished:
            return up
        up.events = self._take_events()  # first: a stop answered since the last poll counts before escalating
        code = self.proc.poll()
        up.events += self._take_events()  # then the last events are complete
        up.lines = self.proc.take_lines()
        if code is None and not self.heard and not self.stopping_requested \
                and time.monotonic() - self._started_mono > self.plan.start_timeout_s:
            self.start_timed_out = True  # the interpreter never ran our child: stop it, say so
            self.state.exception = (f"{self.cfg.python} did not start the script within "
                                    f"{self.plan.start_timeout_s:.0f} s")
            # nothing of ours runs in it, so nothing to flush: no SIGINT/SIGTERM graces (a signal-deaf
            # wrapper took 20 s more than the timeout); the whole tree goes at once
            self.proc.request_stop()
            self.proc.kill()
            code = self.proc.poll()
        if code is None and self._window_stop_at and time.monotonic() > self._window_stop_at \
                and not self.stopping_requested:
            self.request_stop()  # --stop-after-window: the script did not reach another step hook
        if code is not None:
            self._finalize(code)
            up.exit_code = self.exit_code
        return up

    def _take_events(self) -> list[dict]:
        raw = self.tail.poll()
        authentic = [e for e in raw if self.key.fresh(e)]
        self.forged_events += len(raw) - len(authentic) + self.tail.rejected
        self.tail.rejected = 0
        raw = authentic
        events = [e for e in raw if valid(e) and (e["type"] != "start" or self._plausible_start(e))]
        self.bad_events += len(raw) - len(events) + self.tail.skipped
        if len(raw) != len(events) or self.tail.skipped:
            log.warning("events.jsonl: %d malformed line(s) skipped", len(raw) - len(events) + self.tail.skipped)
        self.tail.skipped = 0
        for e in events:
            self.heard = True
            self.state.fold(e)
            kind, rank = e["type"], e.get("rank", 0)
            if kind == "launch":
                self.proc.mark_ready()  # child.py emits it once its stop handlers are in place
            elif kind != "step":
                self.proc.note_progress()  # after a stop: the child is working on it (escalation waits)
            if kind == "start":
                self.ranks_started.add(rank)
                self.proc.adopt_rank(e["pid"])  # signalled only if it is one of the run's own processes
                if self._run_json.get("environment") is None:
                    self._run_json["environment"] = {k: escaped(e.get(k)) for k in ("python", "torch_version", "cuda",
                                                                            "devices", "world_size", "cwd",
                                                                            "device_properties", "cpus", "features")}
                if isinstance(e.get("world_size"), int):
                    self._world = max(self._world, e["world_size"])
            elif kind == "phase" and e.get("phase") == "done" and self.cfg.stop_after_window:
                self._done_ranks.add(rank)
                if len(self._done_ranks) >= self._world and not self.stopped_after_window:
                    # the child ends the script itself at that step (guards.WindowDone, not SIGINT: a
                    # script's Ctrl-C handler would run); Stop's path only if it has not ended in time
                    self.stopped_after_window = True
                    self._window_stop_at = time.monotonic() + WINDOW_DONE_GRACE_S
            elif kind == "end":
                self.ends[rank] = e["exit_code"]
            elif kind == "notice" and e.get("code") == "flushing":
                self.proc.flushing = True  # give the trace export time before SIGTERM
                self.proc.note_progress()
            elif kind == "notice" and e.get("code") in ("stopping", "interrupted", "terminated"):
                self.proc.acknowledged = True  # the child is handling the stop: slow, not stuck
                self.proc.note_progress()
        return events

    def _plausible_start(self, e: dict) -> bool:
        """A start event can be written by any process of the run: its rank must be one this run has
        (a forged rank 2 of a one-process run made the end say rank 2's window was lost), its
        world_size no larger, and in a one-process run its pid the child itself or one of its tree."""
        n = max(1, self.cfg.nproc)
        if not 0 <= e.get("rank", 0) < n or e.get("world_size", 1) > n:
            return False
        return self.cfg.torchrun or e["pid"] == self.proc.pid or self.proc.adopt_rank(e["pid"])

    def request_stop(self) -> None:
        if self.proc is not None:
            self.proc.request_stop()

    def stop_and_wait(self, tick_s: float = 0.05) -> int:
        """The full escalation, blocking (CLI exit, closing the app), reading events as it goes so the
        child's "stopping" / "flushing" answers hold off SIGTERM exactly as in a polled stop."""
        if self.proc is not None and not self.finished:
            self.proc.request_stop()
            p = self.plan
            deadline = time.monotonic() + p.safety_cap_s()
            while not self.finished and time.monotonic() < deadline:
                self.poll()
                if not self.finished:
                    time.sleep(tick_s)
            if not self.finished:
                self.proc.kill()
        while not self.finished:
            self.poll()
        return self.exit_code

    def _finalize(self, code: int, extra: dict | None = None) -> None:
        self.ended_ns = time.time_ns()
        if self.sampler is not None:
            self.sampler.stop()
            self.sampler.backend.close()
            self._run_json["nvml"] = {"samples": self.sampler.samples, "rate_hz": self.cfg.nvml_hz,
                                      "sampler_cpu_s": round(self.sampler.busy_s, 4)}
        st = self.state
        extra = dict(extra or {})
        code, settled, notices = settle_exit(code, self.ends, self.ranks_started, self.cfg.torchrun,
                                             self.stopping_requested)
        extra.update(settled)
        self.final_notices.extend(notices)
        self.exit_code = code
        lost = sorted(self.ranks_started - set(self.ends))
        if lost:  # the process ended without our `finally` running: os._exit, a segfault, SIGKILL
            window = st.phase in ("warmup", "active")
            msg = (f"rank(s) {', '.join(map(str, lost))} ended without ptprof's end of run (os._exit, a crash "
                   f"or a kill, exit {code})" + (f": the trace window in progress at step {st.step} was lost"
                                                  if window else ""))
            self.final_notices.append(msg)
            extra.update(end_seen=False, lost_window=window)
        if self.forged_events:
            self.final_notices.append(f"events.jsonl: {self.forged_events} line(s) not written by ptprof's runner "
                                      "(the script wrote to the file?) were ignored")
            extra["forged_event_lines"] = self.forged_events
        if self.bad_events:
            self.final_notices.append(f"events.jsonl: {self.bad_events} malformed line(s) skipped")
            extra["bad_event_lines"] = self.bad_events
        st.notices.extend(self.final_notices)
        if self.start_timed_out:
            extra["error"] = st.exception
        status = "ok" if code == 0 else ("stopped" if self.stopping_requested else "failed")
        if self.start_timed_out:
            status = "failed"
        elif st.ooms and code != 0:
            status = "oom"  # core/runner/memhist.py: the failing allocation is in run.json "oom"
            extra["oom"] = st.ooms
        elif lost and status == "ok":
            status = "incomplete"
        self._run_json.update({
            "status": status,
            "exit_code": code, "ended_at": bl.iso_utc(self.ended_ns),
            "duration_s": round((self.ended_ns - self.started_ns) / 1e9, 3),
            "torch_version": st.torch_version or None, "steps": st.step, "cycles": st.cycles,
            "step_source": st.step_source, "sync_sites": st.syncs, "exception": st.exception or None, "notices": st.notices,
            "traces": [str(p.relative_to(self.bundle.root)) for p in self.bundle.trace_files()],
            "stop_signals": list(self.proc.signals_sent) if self.proc else [],
            "stop_reason": "window_done" if self.stopped_after_window else (
                "requested" if self.stopping_requested else None), **extra})
        bl.write_json(self.bundle.run_json, self._run_json)

    @property
    def stopping_requested(self) -> bool:
        return self.proc is not None and self.proc.stop_requested_at is not None
