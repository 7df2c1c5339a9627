"""argv and environment of a profiled run: the child directly, or through torchrun. Never a shell."""
from __future__ import annotations

import os
from pathlib import Path

from core.runner.config import RunConfig

# start.py checks the interpreter's version (one line for a Python older than 3.9), then runs child.py
CHILD = Path(__file__).resolve().with_name("start.py")


def child_options(cfg: RunConfig, bundle_dir: str | Path) -> list[str]:
    s = cfg.schedule
    opts = ["--bundle", str(bundle_dir), "--wait", str(s.wait), "--warmup", str(s.warmup),
            "--active", str(s.active), "--repeat", str(s.repeat), "--fallback-steps", str(cfg.fallback_steps)]
    if not cfg.record_shapes:
        opts.append("--no-shapes")
    if not cfg.profile_memory:
        opts.append("--no-memory")
    if cfg.with_stack:
        opts.append("--with-stack")
    if not cfg.sync_debug:
        opts.append("--no-sync-debug")
    if cfg.apply:
        opts += ["--apply", cfg.apply]
    if cfg.stop_after_window:
        opts.append("--stop-after-window")
    if cfg.memory_history:
        opts += ["--memory-history", "--max-entries", str(cfg.max_entries)]
    return opts


def build_argv(cfg: RunConfig, bundle_dir: str | Path, child: str | None = None) -> list[str]:
    """[python, child.py, options, --, script, args] or the same under `python -m torch.distributed.run`
    (`--module -- MODULE args` for `python -m MODULE`). `child`: child.py's path where the run happens
    (a remote host's uploaded copy, core/remote/); default this checkout's."""
    target = ["--module", "--", cfg.module] if cfg.module else ["--", cfg.script]
    tail = [child or str(CHILD), *child_options(cfg, bundle_dir), *target, *cfg.args]
    if cfg.torchrun:
        return [cfg.python, "-u", "-m", "torch.distributed.run", "--standalone",
                "--nproc-per-node", str(cfg.nproc), *tail]
    return [cfg.python, "-u", *tail]


def build_env(cfg: RunConfig, bundle_dir: str | Path, base: dict | None = None, plan=None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env.update(dict(cfg.env))
    env["PYTHONUNBUFFERED"] = "1"
    env["PTPROF_BUNDLE"] = str(bundle_dir)
    env["PTPROF_LAUNCHER_PID"] = str(os.getpid())  # the child stops when this process dies (guards.Orphan)
    if plan is not None:  # ... on the graces this launcher would have kept (guards.orphan_plan)
        env["PTPROF_STOP_PLAN"] = f"{plan.sigint_grace_s:g},{plan.sigterm_grace_s:g},{plan.flush_grace_s:g}"
    # our own package must not shadow the user's modules: the child loads its siblings by path
    return env
