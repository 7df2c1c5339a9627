"""LiveState: what the status line / live panel shows, folded from events.jsonl (stdlib only, Python >= 3.9).

Used by RunSession, by the remote session (core/remote/session.py) and by the helper that runs a remote run on
its host (core/remote/agent.py, uploaded with the child): one fold, wherever the run is.
"""
from __future__ import annotations

from dataclasses import dataclass, field

try:
    from core.terminal import printable
except ImportError:  # on a remote host: the uploaded copy beside this file (core/remote/runner.py)
    import importlib.util as _util
    import os as _os
    _spec = _util.spec_from_file_location("_ptprof_terminal", _os.path.join(_os.path.dirname(__file__), "terminal.py"))
    _terminal = _util.module_from_spec(_spec)
    _spec.loader.exec_module(_terminal)
    printable = _terminal.printable


@dataclass  # no slots=: this module also runs on the remote host's Python 3.9
class LiveState:
    """What the status line / live panel shows: folded from events."""

    step: int = 0
    last_step_ns: int = 0
    phase: str = "starting"
    cycles: int = 0
    torch_version: str = ""
    notices: list = field(default_factory=list)
    exception: str = ""
    step_source: str = "optimizer"
    syncs: list = field(default_factory=list)  # "file:line" of implicit host syncs (CUDA sync debug)
    started: bool = False  # a rank sent its start event (the interpreter ran the child)
    stepped_aside: bool = False  # the script runs its own torch.profiler
    ooms: list = field(default_factory=list)  # the failing allocation of each rank that ran out of memory

    def fold(self, e: dict) -> None:
        """`e` passed core.runner.events_check.valid: its fields have the types read here."""
        t = e.get("type")
        if t == "step":
            if e.get("rank", 0) == 0 and e.get("source", self.step_source) != self.step_source:
                self.step = 0  # a stronger step source took over (child stepsource.py): steps count anew
            self.step = max(self.step, e["step"]) if e.get("rank", 0) == 0 else self.step
            if e.get("rank", 0) == 0:
                self.last_step_ns = e.get("dur_ns", 0)
                self.step_source = printable(e.get("source", self.step_source))
        elif t == "phase" and e.get("rank", 0) == 0:
            self.phase = e.get("phase", self.phase)
        elif t == "cycle" and e.get("rank", 0) == 0:  # every rank saves each cycle: count rank 0's
            self.cycles += 1
        elif t == "start":
            self.torch_version = printable(e.get("torch_version", ""))
            self.phase = "running"
            self.started = True
        elif t == "notice":
            msg = printable(e.get("message", ""))  # stored in run.json and shown: no raw ESC / bidi
            if msg not in self.notices:  # ranks repeat the same notice
                self.notices.append(msg)
            if e.get("code") == "step_aside":
                self.stepped_aside = True
        elif t == "sync":
            site = printable(f"{e.get('file')}:{e.get('line')}")
            if site not in self.syncs:
                self.syncs.append(site)
        elif t == "exception" and not self.exception:
            self.exception = printable(e.get("message", ""))
        elif t == "oom" and len(self.ooms) < 1024:
            self.ooms.append(escaped({k: v for k, v in e.items() if k not in ("type", "t_ns", "seq", "mac")}))


def settle_exit(code: int, ends: dict, ranks_started: set, torchrun: bool, stopping: bool) -> tuple:
    """The run's exit code from the launcher's and the ranks' own: (code, run.json extras, notices).

    `ends` maps rank -> the exit code of its end event (the script's, as ptprof's runner saw it end).
    - torchrun's agent exits 1 on SIGINT even when every rank stopped cleanly: like one process, 130.
    - Every rank's script ended with 0 and ptprof's end of run was written, then the process died anyway
      (torch / gloo / a library's C++ thread or an atexit handler aborting in the interpreter's teardown,
      "terminate called without an active exception"): the run and its traces are complete, the script's
      code 0 stands and the process's own code is kept as `teardown_exit_code` with one notice."""
    extra, notices = {}, []
    complete = bool(ends) and set(ends) >= set(ranks_started)
    if torchrun and stopping and code not in (0, 130) and complete and set(ends.values()) <= {130}:
        extra["launcher_exit_code"] = code
        code = 130
    elif code != 0 and not stopping and complete and set(ends.values()) == {0}:
        extra["teardown_exit_code"] = code
        notices.append(f"the script ended normally (exit 0, every rank's end of run recorded), then the process "
                       f"exited {code} while Python shut down (a crash in a library's teardown: its threads "
                       "or an atexit handler); the traces are complete")
        code = 0
    return code, extra, notices


def escaped(value, depth: int = 0):
    """Every string in `value` (nested lists / dicts from an event) with control and bidi characters
    escaped visibly (core.terminal.printable); deeper than 8 levels is dropped."""
    if isinstance(value, str):
        return printable(value)
    if depth >= 8:
        return None
    if isinstance(value, dict):
        return {printable(str(k)): escaped(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [escaped(v, depth + 1) for v in value]
    return value
