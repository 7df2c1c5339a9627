"""What `ptprof record` (here or on an SSH host) and `ptprof remote attach` share: the RunConfig the record
options ask for, and following a RunSession or a core.remote RemoteSession to its end on the terminal (the live
status line, Ctrl-C as Stop, the rank summaries, the one closing line and the exit code).

Its own module so that core/commands/record.py (which hands `--host` to core/commands/remote.py) and remote.py
both import it, and neither imports the other back.
"""
from __future__ import annotations

import math
import os
import signal
import sys
import time

from core import units
from core.terminal import printable


def config_from_args(args):
    from core.runner.config import ConfigError, RunConfig, Schedule
    if args.out is not None and not args.out.strip():
        raise ConfigError("--out is empty: give a folder, or leave --out out for ./ptprof-runs/<script>-<time>")
    env = []
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--env expects KEY=VALUE, got {item!r}")
        env.append((key, value))
    script_args = list(args.args)
    if script_args and script_args[0] == "--":
        script_args = script_args[1:]
    module = ""
    if args.module_argv is not None:
        if not args.module_argv:
            raise ConfigError("-m expects a module name")
        if args.script:  # options before -m ended with a positional: `record train.py -m x` is ambiguous
            raise ConfigError(f"give either a script or -m MODULE, not both ({args.script!r})")
        module, script_args = args.module_argv[0], list(args.module_argv[1:])
    apply = ""
    if getattr(args, "apply", ""):
        from core.runner.switches import SwitchError
        from core.tryfix.fixes import resolve_spec
        try:
            apply = resolve_spec(args.apply)
        except SwitchError as exc:
            raise ConfigError(f"--apply: {exc}") from None
    return RunConfig(apply=apply, script=args.script or "", module=module, stop_after_window=args.stop_after_window,
                     args=tuple(script_args), python=args.python or sys.executable, cwd=args.cwd or os.getcwd(),
                     env=tuple(env), schedule=Schedule(args.wait, args.warmup, args.active, args.repeat),
                     record_shapes=not args.no_shapes, profile_memory=not args.no_memory,
                     with_stack=args.with_stack, sync_debug=not args.no_sync_debug, out_dir=args.out or "",
                     nproc=args.nproc or 1, use_torchrun=args.torchrun or args.nproc is not None, nvml_hz=args.nvml_hz,
                     memory_history=args.memory_history, max_entries=args.max_entries)


def status_line(session) -> str:
    st = session.state
    parts = [f"step {st.step}"]
    if st.last_step_ns:
        parts.append(f"{units.fmt_ns(st.last_step_ns)}/step")
    parts.append(st.phase)
    sampler = session.sampler
    if sampler is not None and sampler.available:
        for gpu, ring in sampler.rings.items():
            last = ring.last()
            if last is not None and not math.isnan(last[1][0]):
                parts.append(f"gpu{gpu} {last[1][0]:.0f}% {last[1][2] / 1024:.1f}/{last[1][3] / 1024:.0f} GiB")
    elif sampler is not None:
        reason = sampler.reason  # a remote host's: "no GPU telemetry on this host (what was looked for)"
        parts.append(reason if reason.startswith("no GPU telemetry") else f"no GPU data ({reason})")
    if st.cycles:
        parts.append(f"{st.cycles} trace(s) saved")
    if session.stopping:
        parts.append("stopping…")
    connection = getattr(session, "connection", "connected")  # a remote run (core/remote/session.py)
    if connection != "connected":
        parts.append(connection)
    if getattr(session, "fetching", False):
        done, total = session.fetch_progress
        parts.append(f"fetching the bundle {units.fmt_bytes(done)}{' of ' + units.fmt_bytes(total) if total else ''}")
    return " · ".join(parts)


def drive(session, args, started: bool = False) -> int:
    """Start (unless `started`) and follow a RunSession or a core.remote RemoteSession to its end: the
    live status line, the script's output, Ctrl-C as Stop (a second one kills); the summary's exit code."""
    interrupts = []

    def on_sigint(signum, frame):
        interrupts.append(time.monotonic())
        if len(interrupts) == 1:
            session.request_stop()
        elif session.proc is not None:
            session.proc.kill()

    # a closed terminal or `kill` must not leave the script training on its own: the same as Ctrl-C
    old = {sig: signal.signal(sig, on_sigint) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    tty = sys.stderr.isatty() and not args.quiet
    shown = ""
    said_connection = None
    try:
        if not started:
            session.start()
        while not session.finished:
            up = session.poll()
            if not args.quiet:
                if up.lines and shown:
                    sys.stderr.write("\r\033[K")
                    shown = ""
                for stream, text in up.lines:
                    (sys.stdout if stream == "stdout" else sys.stderr).write(text + "\n")
                sys.stdout.flush()
                for e in up.events:
                    if e.get("type") == "notice" and not tty and e.get("code") != "switch_refused":
                        sys.stderr.write(f"ptprof: {printable(e.get('message', ''))}\n")
                connection = getattr(session, "connection", "connected")  # a remote run's link to its host
                if not tty and connection != said_connection:
                    if said_connection is not None or connection != "connected":
                        sys.stderr.write(f"ptprof: {connection}\n")
                    said_connection = connection
            if tty and not getattr(getattr(session, "host", None), "prompting", False):  # ssh asks a password
                line = status_line(session)
                if line != shown:
                    sys.stderr.write("\r\033[K" + line[:200])
                    sys.stderr.flush()
                    shown = line
            if not session.finished:
                time.sleep(0.1)
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        if not session.finished:
            session.stop_and_wait()
    if shown:
        sys.stderr.write("\r\033[K")
    if not getattr(args, "no_summaries", False) and len(session.bundle.trace_files()) > 1:
        _summarise(session.bundle.root, args.quiet)
    return _summary(session, args.quiet)


def switch_refusal(session) -> str:
    """The one line saying which --apply switch could not apply ('' when all applied or none was asked)."""
    if not session.cfg.apply:
        return ""
    from core.tryfix.store import read_switches
    refused = [f"{s['name']} cannot apply: {s['message']}" for s in read_switches(session.bundle.root)
               if s.get("status") == "refused"]
    return "; ".join(refused)


def _summarise(root, quiet: bool) -> None:
    """The launcher writes the rank summaries after the run (the ranks' interpreters cannot: stdlib + torch
    only): core/ranks/stored.py. A failure only costs the later analyze a map."""
    try:
        from core.ranks.run import summarise_bundle
        t0 = time.monotonic()
        n = summarise_bundle(root)
        if n and not quiet:
            sys.stderr.write(printable(f"ptprof: {n} rank summaries written in {time.monotonic() - t0:.1f} s "
                                       "(a later ptprof analyze only reduces)") + "\n")
    except Exception as exc:  # noqa: BLE001 - the run is recorded; its summaries are an optimisation
        if not quiet:
            sys.stderr.write(printable(f"ptprof: note: rank summaries not written ({type(exc).__name__}: {exc})")
                             + "\n")


def _summary(session, quiet: bool) -> int:
    code = session.exit_code
    st = session.state
    root = session.bundle.root
    n_traces = len(session.bundle.trace_files())
    if not quiet:
        for notice in st.notices:
            if sys.stderr.isatty() or notice in session.final_notices:  # others were shown as they came
                sys.stderr.write(f"ptprof: {printable(notice)}\n")
        for site in st.syncs:
            sys.stderr.write(f"ptprof: host sync at {printable(site)}\n")
        if st.started:  # else the one line below says why nothing ran
            hint = f" - open with: ptprof info {root}" if n_traces else ""
            sys.stderr.write(printable(f"ptprof: bundle {root} ({n_traces} trace file(s), {st.step} steps){hint}") + "\n")
    if st.exception.startswith("torch not installed"):
        print(f"ptprof: {st.exception.split(' (')[0]}: pick the training environment's python with --python",
              file=sys.stderr)
        return 2
    if "too old for ptprof's runner" in st.exception:  # the child's own one line (runner/start.py, compat.py)
        print(f"ptprof: {printable(st.exception)}", file=sys.stderr)
        return 2
    if session.start_timed_out:
        print(f"ptprof: {printable(st.exception)}: is --python a Python interpreter? (the wait is "
              f"--start-timeout)", file=sys.stderr)
        return 2
    if not st.started and not session.stopping_requested:
        error = session._run_json.get("error") or f"exit {code}"
        print(f"ptprof: {session.cfg.python} did not start the script ({error}): is it a Python with torch?",
              file=sys.stderr)
        return 2
    refused = switch_refusal(session)
    if refused:
        print(f"ptprof: {printable(refused)} (the run was stopped: nothing measured)", file=sys.stderr)
        return 2
    if code == 0:
        if n_traces == 0 and st.stepped_aside:
            print("ptprof: the script runs its own torch.profiler, so ptprof stepped aside: its traces are "
                  "wherever the script writes them", file=sys.stderr)
        elif n_traces == 0 and session._run_json.get("end_seen") is not False:  # else the notice said why
            print("ptprof: the script ended before any trace cycle completed (too few steps for the schedule?)",
                  file=sys.stderr)
        return 0
    if session.stopped_after_window:
        print(f"ptprof: profiling done: the script was stopped after its last trace cycle (exit {code}, "
              "--stop-after-window)", file=sys.stderr)
        return 0 if n_traces else code
    if code == 2 and st.exception.startswith(("SyntaxError", "ImportError", "ModuleNotFoundError")):
        print(f"ptprof: {printable(st.exception)}", file=sys.stderr)
        return 2
    if session.stopping_requested:
        print(f"ptprof: stopped (exit {code}); traces recorded so far are kept", file=sys.stderr)
        return 130 if code in (130, -2) else code
    why = st.exception or (f"interpreter failed to start: {session._run_json.get('error')}"
                           if session._run_json.get("error") else "see stderr.log")
    print(f"ptprof: script failed (exit {code}): {printable(why.splitlines()[0]) if why else ''}", file=sys.stderr)
    return code if 0 < code < 256 else 1
