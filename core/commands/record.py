"""`ptprof record [options] SCRIPT [ARGS...]` or `ptprof record [options] -m MODULE [ARGS...]`: run a training
script (or a module, exactly like `python -m`) under torch.profiler into a run bundle.

Shows one live status line (step, step time, GPU util); Ctrl-C stops cleanly (the profiler flushes
the cycle in progress); a second Ctrl-C escalates. Exit code: 0, the script's own non-zero code with
one line saying why, 2 for bad input; with --stop-after-window, 0 when the script was stopped after its
last trace cycle was saved. The RunConfig of these options and following the run: core/commands/recording.py.
"""
from __future__ import annotations

import argparse
import sys

from core.commands import recording


def add_arguments(p) -> None:
    p.add_argument("--out", default=None, help="bundle folder: new, empty, or an old bundle (only ptprof's own "
                   "files are replaced); default ./ptprof-runs/<script>-<time>")
    from core.runner.config import Schedule
    d = Schedule()  # the one place the default schedule lives (also the Run dialog's)
    p.add_argument("--wait", type=int, default=d.wait, help="schedule: optimizer steps skipped per cycle")
    p.add_argument("--warmup", type=int, default=d.warmup, help="schedule: warm-up steps (traced, not saved)")
    p.add_argument("--active", type=int, default=d.active, help="schedule: recorded steps per cycle (default "
                   f"{d.active}: two default runs compare with significance, 4+ steps a side)")
    p.add_argument("--repeat", type=int, default=d.repeat, help="schedule: cycles (0 = until the script ends)")
    p.add_argument("--nproc-per-node", type=int, default=None, dest="nproc",
                   help="processes (ranks); always launched through torchrun, 1 included")
    p.add_argument("--torchrun", action="store_true", help="launch through python -m torch.distributed.run")
    p.add_argument("--python", default=None, help="interpreter that has torch (default: this one; with --host: "
                   "python3 on the host)")
    p.add_argument("--host", default=None, metavar="HOST", help="run on this SSH host (an alias of ~/.ssh/config, "
                   "user@host[:port]); --cwd and the script are paths there; the bundle comes back here")
    p.add_argument("--ssh-config", default=None, metavar="FILE", help="with --host: ssh's config file (ssh -F)")
    p.add_argument("--remote-dir", default="", metavar="DIR", help="with --host: the run's bundle goes into DIR/<run id> "
                   "on the host (default ~/.cache/ptprof/runs/<run id>)")
    p.add_argument("--cwd", default="", help="working directory (default: the current one, as `python SCRIPT`)")
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="extra environment variable")
    p.add_argument("--with-stack", action="store_true", help="record Python stacks (traces get much larger)")
    p.add_argument("--no-shapes", action="store_true", help="do not record input shapes")
    p.add_argument("--no-memory", action="store_true", help="do not profile memory")
    p.add_argument("--no-sync-debug", action="store_true",
                   help="CUDA: do not report implicit host-sync sites (torch.cuda.set_sync_debug_mode)")
    p.add_argument("--memory-history", action="store_true",
                   help="record the CUDA allocator's history (stacks of every allocation) and write "
                        "memory.snapshot.pickle into the bundle at the end of the last window")
    p.add_argument("--max-entries", type=int, default=100_000, metavar="N",
                   help="with --memory-history: allocator events kept (default 100000)")
    p.add_argument("--nvml-hz", type=float, default=10.0, help="GPU sampling rate (default 10)")
    p.add_argument("--stop-after-window", action="store_true",
                   help="stop the script (as Ctrl-C does) once the last trace cycle is saved; exit 0")
    p.add_argument("--apply", metavar="ID[,ID...]", default="",
                   help="record with runtime switches on: pin_memory, num_workers[=N], tf32, bf16_autocast, "
                        "foreach, fused, set_to_none, channels_last, cudnn_benchmark, compile[=MODE], or a rule id "
                        "that has one (pageable_memcpy ...); a switch that cannot apply stops the run (exit 2)")
    p.add_argument("--quiet", action="store_true", help="no status line, no script output echo")
    p.add_argument("--no-summaries", action="store_true",
                   help="several trace files: do not write each rank's analysis summary into the bundle at the end "
                        "(they make a later `ptprof analyze` of a many-rank run reduce only)")
    p.add_argument("--start-timeout", type=float, default=60.0, metavar="S",
                   help="give up when the interpreter has not started ptprof's runner after S seconds (default 60)")
    p.add_argument("-m", dest="module_argv", nargs=argparse.REMAINDER, metavar="MODULE ARGS",
                   help="run a module like `python -m MODULE` (the rest of the line are its arguments)")
    p.add_argument("script", nargs="?", default="", help="the training script (run unmodified as __main__)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")


def run(args) -> int:
    if args.host or args.remote_dir:  # the same run on an SSH host (core/remote/)
        from core.commands.remote import record_remote
        return record_remote(args)
    from core.runner.config import ConfigError, validate
    from core.runner.session import RunSession
    try:
        cfg = validate(recording.config_from_args(args))
    except ConfigError as exc:
        print(f"ptprof: {exc}", file=sys.stderr)
        return 2
    from core.runner.config import advice
    for line in advice(cfg):
        print(f"ptprof: note: {line}", file=sys.stderr)
    from core.runner.bundle import BundleError
    from core.runner.process import StopPlan
    if not args.start_timeout > 0:
        print(f"ptprof: --start-timeout must be > 0 (got {args.start_timeout})", file=sys.stderr)
        return 2
    try:
        session = RunSession(cfg, plan=StopPlan(start_timeout_s=args.start_timeout))
    except BundleError as exc:
        print(f"ptprof: {exc}", file=sys.stderr)
        return 2
    return recording.drive(session, args)
