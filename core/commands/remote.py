"""`ptprof record --host HOST ...` and `ptprof remote runs|fetch|attach HOST ...`: runs on an SSH host.

    ptprof record --host gpu-box [--ssh-config FILE] [--python PATH] [--cwd DIR] [record options] SCRIPT [ARGS]
    ptprof remote runs HOST                     the runs on HOST with their state
    ptprof remote fetch HOST RUN [--out DIR]    bring a run's bundle back
    ptprof remote attach HOST RUN [--out DIR]   follow a running one (live status, Ctrl-C stops it), then fetch

Nothing is installed on the host: the runner is uploaded into ~/.cache/ptprof/ there (core/remote/).
Exit codes as `record`: 2 and one line for a host that cannot be used (unknown host key, wrong key, no
such interpreter, an unwritable folder) or a bundle that is refused.
"""
from __future__ import annotations

import os
import sys

from core.terminal import printable


def add_arguments(p) -> None:
    sub = p.add_subparsers(dest="remote_command", metavar="ACTION", parser_class=type(p))
    runs = sub.add_parser("runs", help="list the runs on HOST with their state")
    fetch = sub.add_parser("fetch", help="bring a run's bundle back from HOST")
    attach = sub.add_parser("attach", help="follow a run on HOST (Ctrl-C stops it), then bring its bundle back")
    for q in (runs, fetch, attach):
        q.add_argument("host", help="an alias of ~/.ssh/config, host, user@host or user@host:port")
        q.add_argument("--ssh-config", default=None, metavar="FILE", help="ssh's config file (ssh -F)")
        q.add_argument("--python", default="python3", help="interpreter on the host that runs ptprof's helper")
    for q in (fetch, attach):
        q.add_argument("run", help="the run's id (see `ptprof remote runs HOST`)")
        q.add_argument("--out", default=None, help="local folder for the bundle (default ./ptprof-runs/<run>)")
    attach.add_argument("--quiet", action="store_true", help="no status line, no script output echo")


def _host(args):
    from core.remote.ssh import SshHost
    return SshHost(args.host, config_file=args.ssh_config, interactive=sys.stdin.isatty())


def _fail(message: str) -> int:
    print(f"ptprof: {printable(message)}", file=sys.stderr)
    return 2


def record_remote(args) -> int:
    """`ptprof record --host`: the run on the host, followed here with the local run's status line."""
    from core.commands.recording import config_from_args, drive
    from core.remote.session import RemoteSession, RemoteStartError, validate_remote
    from core.remote.ssh import SshError
    from core.runner.bundle import BundleError
    from core.runner.config import ConfigError
    from core.runner.process import StopPlan
    if args.remote_dir and not args.host:
        return _fail("--remote-dir is a folder on the host: give --host too")
    if not args.start_timeout > 0:
        return _fail(f"--start-timeout must be > 0 (got {args.start_timeout})")
    try:
        cfg = config_from_args(args).with_(python=args.python or "python3", cwd=args.cwd or "")
        cfg = validate_remote(cfg)
        host = _host(args)
        session = RemoteSession(cfg, host, plan=StopPlan(start_timeout_s=args.start_timeout),
                                remote_dir=args.remote_dir)
    except (ConfigError, SshError, BundleError) as exc:
        return _fail(str(exc))
    try:
        session.start()
    except RemoteStartError as exc:
        _remove_if_empty(session.bundle.root)
        return _fail(str(exc))
    if not args.quiet:
        print(printable(f"ptprof: running on {host.label} as {session.run_id} (it goes on if this connection "
                        f"drops: ptprof remote attach {host.label} {session.run_id})"), file=sys.stderr)
    code = drive(session, args, started=True)
    _log_timings(session)
    return 2 if session.fetch_error and code == 0 else code


def _log_timings(session) -> None:
    """With -v: what the connection cost (run -> first live step, GPU sample latency, fetch)."""
    import logging
    log = logging.getLogger("ptprof.remote")
    lat = sorted(session.sampler.latencies_ns) if session.sampler is not None else []
    if session.first_step_s is not None:
        log.info("remote: first live step %.2f s after Run (connect, upload check, start, torch import)",
                 session.first_step_s)
    if lat:
        log.info("remote: %d GPU samples, arrival latency median %.0f ms, p95 %.0f ms, max %.0f ms", len(lat),
                 lat[len(lat) // 2] / 1e6, lat[int(len(lat) * 0.95)] / 1e6, lat[-1] / 1e6)
    if session.fetched is not None:
        f = session.fetched
        log.info("remote: fetched %d file(s), %.2f MB (%.2f MB over SSH) in %.2f s", f.files, f.bytes / 1e6,
                 f.wire_bytes / 1e6, f.seconds)


def _remove_if_empty(root) -> None:
    try:
        for sub in ("traces", ""):
            os.rmdir(os.path.join(root, sub))
    except OSError:
        pass


def run(args) -> int:
    from core.remote.fetch import FetchError, fetch_staged
    from core.remote.runner import Helper, RemoteError
    from core.remote.ssh import SshError
    if not args.remote_command:
        return _fail("remote: give an action: runs, fetch or attach")
    try:
        host = _host(args)
        if args.remote_command == "attach":
            return _attach(args, host)
        helper = Helper(host.connect(), python=args.python).ensure()
        if args.remote_command == "runs":
            runs = helper.call("list").get("runs") or []
            _print_runs(runs if isinstance(runs, list) else [])
            return 0
        out = args.out or os.path.join("ptprof-runs", args.run)
        state = {r.get("id"): r for r in helper.call("list").get("runs", []) if isinstance(r, dict)}.get(args.run)
        if state is None:
            return _fail(f"no run {args.run!r} on {host.label} (ptprof remote runs {host.label})")
        if state.get("state") in ("running", "starting"):
            print(f"ptprof: note: {args.run} is still running: fetching what it wrote so far", file=sys.stderr)
        try:  # staged: a refused or interrupted fetch leaves no part of the bundle in `out`
            got = fetch_staged(helper, args.run, out, progress=_progress if sys.stderr.isatty() else None)
        except (FetchError, KeyboardInterrupt):
            _remove_if_empty(out)
            raise
    except (SshError, RemoteError, FetchError) as exc:
        return _fail(str(exc))
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K")
    print(printable(f"ptprof: fetched {got.files} file(s), {got.bytes / 1e6:.1f} MB ({got.wire_bytes / 1e6:.1f} MB "
                    f"over the connection) in {got.seconds:.1f} s into {got.dest} - open with: ptprof info {got.dest}"),
          file=sys.stderr)
    return 0


def _attach(args, host) -> int:
    from core.commands.recording import drive
    from core.remote.session import RemoteSession, RemoteStartError
    try:
        session = RemoteSession.attach(host, args.run, out_dir=args.out, python=args.python)
    except RemoteStartError as exc:
        return _fail(str(exc))
    args.start_timeout = 60.0
    code = drive(session, args, started=True)
    return 2 if session.fetch_error and code == 0 else code


def _progress(done: int, total: int) -> None:
    sys.stderr.write(f"\r\033[Kfetching {done / 1e6:.1f} of {total / 1e6:.1f} MB")
    sys.stderr.flush()


def _print_runs(runs: list) -> None:
    if not runs:
        print("no runs")
        return
    print(f"{'RUN':40} {'STATE':9} {'STATUS':9} {'STEPS':>6}  {'STARTED':24} SCRIPT")
    for r in runs:
        if not isinstance(r, dict):
            continue
        print(printable(f"{str(r.get('id'))[:40]:40} {str(r.get('state'))[:9]:9} {str(r.get('status') or '-')[:9]:9} "
                        f"{str(r.get('steps') if r.get('steps') is not None else '-'):>6}  "
                        f"{str(r.get('started_at') or '-')[:24]:24} {str(r.get('script') or '')[:80]}"))
        if r.get("bundle"):
            print(printable(f"{'':40} in {str(r['bundle'])[:300]}"))
