"""RunConfig: everything needed to launch one profiled run, and validate() with one-line messages."""
from __future__ import annotations

import os
import re
import shutil
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path


class ConfigError(ValueError):
    """A run cannot start; str(exc) is one line meant for the user."""


@dataclass(frozen=True, slots=True)
class Schedule:
    """torch.profiler.schedule arguments, counted in optimizer steps."""

    # 5 unprofiled steps before the window: the run's own measure of what recording costs (recording
    # inflation, the unprofiled step estimate); the first is not counted (it follows the profiler's start)
    # 5 recorded steps: a Compare of two default runs (5 vs 5 steps, a rank test) can reach p = 0.012 < 0.05;
    # 3 a side could never be significant (best p = 0.08), 4 a side only just (0.030) - issue 31
    wait: int = 5
    warmup: int = 1
    active: int = 5
    repeat: int = 1

    @property
    def steps_needed(self) -> int:
        """Optimizer steps after which every cycle has been recorded (repeat=0: unbounded -> one cycle)."""
        return (self.wait + self.warmup + self.active) * max(1, self.repeat)


_MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


@dataclass(frozen=True, slots=True)
class RunConfig:
    script: str  # "" with module set
    args: tuple[str, ...] = ()
    python: str = field(default_factory=lambda: sys.executable)
    cwd: str = ""  # "" = the script's folder
    env: tuple[tuple[str, str], ...] = ()  # extra environment variables
    schedule: Schedule = Schedule()
    record_shapes: bool = True
    profile_memory: bool = True
    with_stack: bool = False
    sync_debug: bool = True  # CUDA only: torch.cuda.set_sync_debug_mode("warn") -> "sync" events with user lines
    out_dir: str = ""  # bundle folder; "" = ./ptprof-runs/<script>-<time>
    nproc: int = 1
    use_torchrun: bool = False  # launch through torch.distributed.run even with nproc=1
    nvml_hz: float = 10.0
    fallback_steps: int = 5  # forward-stepped window length when no optimizer ever steps
    module: str = ""  # run `python -m MODULE` instead of a script (cwd = the working directory, as python -m)
    stop_after_window: bool = False  # stop the script (as Stop does) once every rank saved its last cycle
    apply: str = ""  # runtime switches (core/runner/switches.py), e.g. "pin_memory,tf32": `record --apply`, `try`
    memory_history: bool = False  # torch.cuda.memory._record_memory_history -> memory.snapshot.pickle (memhist.py)
    max_entries: int = 100_000  # the allocator trace ring it keeps

    @property
    def workdir(self) -> str:
        if self.module:
            return self.cwd or os.getcwd()
        return self.cwd or str(Path(self.script).resolve().parent)

    @property
    def target(self) -> str:
        """What runs, as a person would type it: `train.py` or `-m pkg.train`."""
        return f"-m {self.module}" if self.module else self.script

    @property
    def bundle_stem(self) -> str:
        return self.module.replace(".", "_") if self.module else self.script

    @property
    def torchrun(self) -> bool:
        return self.use_torchrun or self.nproc > 1

    def with_(self, **changes) -> "RunConfig":
        return replace(self, **changes)

    def to_dict(self) -> dict:
        return {
            "script": self.script, "args": list(self.args), "python": self.python, "cwd": self.workdir,
            "env": dict(self.env), "schedule": {"wait": self.schedule.wait, "warmup": self.schedule.warmup,
                                                "active": self.schedule.active, "repeat": self.schedule.repeat},
            "record_shapes": self.record_shapes, "profile_memory": self.profile_memory,
            "with_stack": self.with_stack, "sync_debug": self.sync_debug, "nproc": self.nproc, "torchrun": self.torchrun,
            "nvml_hz": self.nvml_hz, "module": self.module, "stop_after_window": self.stop_after_window,
            "apply": self.apply, "memory_history": self.memory_history, "max_entries": self.max_entries,
        }


def resolve_python(python: str) -> str | None:
    """An absolute path to an executable interpreter, or None."""
    if not python:
        return None
    if os.sep in python or (os.altsep and os.altsep in python):
        p = Path(python).expanduser()
        # absolute (not resolved: a venv's python is a link that must stay in the venv); str(Path("./py"))
        # is "py", which Popen then looked up on PATH: "--python ./py" could not start
        return str(p.absolute()) if p.is_file() and os.access(p, os.X_OK) else None
    return shutil.which(python)


def validate(cfg: RunConfig) -> RunConfig:
    """The config with paths made absolute, or ConfigError with one clear line."""
    script = Path(cfg.script).expanduser()
    if cfg.module:
        if not _MODULE_NAME.match(cfg.module):
            raise ConfigError(f"not a module name: {cfg.module!r} (expected e.g. package.train)")
    elif not cfg.script:
        raise ConfigError("no script given")
    elif not script.is_file():
        raise ConfigError(f"script not found: {script}")
    elif script.suffix not in (".py", ".pyw", ""):
        raise ConfigError(f"not a Python script: {script}")
    python = resolve_python(cfg.python)
    if python is None:
        raise ConfigError(f"interpreter not found or not executable: {cfg.python}")
    check_values(cfg)
    cwd = Path(cfg.workdir if cfg.cwd or cfg.module else script.resolve().parent).expanduser()
    if not cwd.is_dir():
        raise ConfigError(f"working directory not found: {cwd}")
    if cfg.out_dir:
        from core.runner.bundle import out_dir_problem
        problem = out_dir_problem(cfg.out_dir)
        if problem:
            raise ConfigError(problem)
    return replace(cfg, script="" if cfg.module else str(script.resolve()), python=python, cwd=str(cwd.resolve()))


def check_values(cfg: RunConfig) -> None:
    """The checks that need no file system (a remote run's paths are checked on its host): ConfigError."""
    if cfg.module and not _MODULE_NAME.match(cfg.module):
        raise ConfigError(f"not a module name: {cfg.module!r} (expected e.g. package.train)")
    s = cfg.schedule
    for name in ("wait", "warmup", "active", "repeat"):
        if getattr(s, name) < 0:
            raise ConfigError(f"schedule {name} must be >= 0 (got {getattr(s, name)})")
    if s.active < 1:
        raise ConfigError("schedule active must be >= 1: nothing would be recorded")
    if cfg.nproc < 1:
        raise ConfigError(f"--nproc-per-node must be >= 1 (got {cfg.nproc})")
    if not 0 < cfg.nvml_hz <= 1000:
        raise ConfigError(f"NVML rate must be in (0, 1000] Hz (got {cfg.nvml_hz})")
    if cfg.memory_history and not 1 <= cfg.max_entries <= 100_000_000:
        raise ConfigError(f"--max-entries must be in 1 .. 100,000,000 (got {cfg.max_entries})")
    for key, _ in cfg.env:
        if not key or "=" in key or "\0" in key:
            raise ConfigError(f"bad environment variable name: {key!r}")
    if cfg.apply:
        from core.runner.switches import SwitchError, parse
        try:
            parse(cfg.apply)
        except SwitchError as exc:
            raise ConfigError(f"--apply: {exc}") from None


def advice(cfg: RunConfig) -> list[str]:
    """Non-fatal warnings about a config (shown by the dialog and `ptprof record`)."""
    out = []
    try:
        source = Path(cfg.script).read_text(errors="replace") if cfg.script else ""
    except OSError:
        source = ""
    if cfg.with_stack and ("torch.compile" in source or ".compile(" in source):
        out.append("Python stacks with torch.compile: a recompilation inside the active window can make a "
                   "trace of several GB; keep the window short or record without stacks")
    if cfg.schedule.repeat == 0:
        out.append("repeat 0 records a trace every cycle until the script ends: many files")
        if cfg.stop_after_window:
            out.append("--stop-after-window with repeat 0: the last cycle never comes, the script is not stopped")
    return out
