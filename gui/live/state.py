"""The run's state in one line, folded from events.jsonl (no Qt):

    waiting for the script · running · step 12 (recording starts after step 14) · warm-up · step 15
    · recording cycle 1 of 3 · step 17 · saving the trace of cycle 1 · done · 3 traces saved

`RunState.fold(event)` takes rank 0's events; `line()` says where the run is. `schedule` is the run's
core.runner.config.Schedule (wait / warmup / active / repeat) when known.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class RunState:
    schedule: object | None = None  # core.runner.config.Schedule
    started: bool = False
    step: int = 0
    phase: str = ""  # "" (no profiler phase yet) | wait | warmup | active | done
    active_from_step: int = 0  # step at which the current active window began
    cycles: int = 0  # traces saved
    finished: str = ""  # the end state in words, once the run is over

    def fold(self, e: dict) -> None:
        if e.get("rank", 0) != 0:
            return
        t = e.get("type")
        if t == "start":
            self.started = True
        elif t == "step":
            self.started = True
            self.step = max(self.step, int(e.get("step", 0)))
        elif t == "phase":
            phase = str(e.get("phase", ""))
            if phase == "active" and self.phase != "active":
                self.active_from_step = int(e.get("step", self.step))
            self.phase = phase
        elif t == "cycle":
            self.cycles += 1

    @property
    def recording(self) -> bool:
        return self.phase == "active"

    def _of_n(self) -> str:
        repeat = getattr(self.schedule, "repeat", None)
        return f" of {repeat}" if repeat else ""

    def _saving(self) -> bool:
        """Active, and the window's steps are all done: the profiler is writing the trace."""
        active = getattr(self.schedule, "active", None)
        return self.recording and active is not None and self.step - self.active_from_step >= active

    def line(self) -> str:
        if self.finished:
            return self.finished
        if not self.started:
            return "waiting for the script to start"
        step = f"step {self.step}"
        saved = f" · {self.cycles} trace{'s' if self.cycles != 1 else ''} saved" if self.cycles else ""
        if self.phase in ("", "wait"):
            s = self.schedule
            if s is not None and self.cycles == 0:
                first = getattr(s, "wait", 0) + getattr(s, "warmup", 0)
                return f"waiting · {step} (recording starts after step {first})"
            return f"waiting · {step}" + saved
        if self.phase == "warmup":
            return f"warm-up · {step}" + saved
        if self.phase == "active":
            cycle = self.cycles + 1
            if self._saving():
                return f"saving the trace of cycle {cycle}{self._of_n()} · {step}" + saved
            return f"recording cycle {cycle}{self._of_n()} · {step}" + saved
        if self.phase == "done":
            return f"done recording · {step}{saved} (the script goes on)"
        return f"{self.phase} · {step}" + saved
