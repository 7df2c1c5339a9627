"""`ptprof` command line: info | analyze | record | report | diff | try | mcp.

Each subcommand lives in core/commands/<name>.py with `add_arguments(parser)` and `run(args) -> int`,
imported only when used. Exit codes (ARCHITECTURE.md): 0 ok, 1 findings at/above --fail-on,
2 bad input or usage - one clear line on stderr, never a traceback.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import sys

from core.blas import one_blas_thread

one_blas_thread()  # before numpy's first import (core.blas)

from core.trace.model import LoadCancelled, TraceParseError  # noqa: E402

COMMANDS = {
    "info": ("core.commands.info", "what a trace holds: events, kernels, steps, ranks, devices, load time"),
    "analyze": ("core.commands.analyze", "find performance problems (rules) with cost, evidence and source"),
    "record": ("core.commands.record", "run a training script under torch.profiler into a run bundle"),
    "report": ("core.commands.report", "write PNGs, CSVs and a self-contained report.html"),
    "diff": ("core.commands.diff", "compare two runs: step time, breakdown, kernels, ops, findings, memory"),
    "try": ("core.commands.tryfix", "run a bundle's script again with a finding's fix switched on, measure the saving"),
    "remote": ("core.commands.remote", "runs on an SSH host: list them, fetch a bundle, attach to a running one"),
    "mcp": ("core.commands.mcp", "serve the analysis to AI assistants over the Model Context Protocol (stdio)"),
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2
        self.exit(2, f"ptprof: error: {message}\n")


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; with `argv`, only the named subcommand's module is imported for its arguments (the
    top level has no option taking a value, so the first word not starting with '-' is the command):
    importing all five took ~65 ms of every `ptprof info`. Without `argv`, all of them."""
    parser = _Parser(prog="ptprof", description="PyTorch profiler traces: load, diagnose, record, report.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    from core.version import version
    parser.add_argument("--version", action="version", version=f"ptprof {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    chosen = None if argv is None else next((a for a in argv if not a.startswith("-")), "")
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(_module=module)
        if chosen is not None and name != chosen:
            continue
        importlib.import_module(module).add_arguments(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    _escape_unencodable()
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s")
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return 2
    from core.trace.alloc import single_arena
    single_arena()  # no UI thread here: the loader's threads share one malloc arena (faster big loads)
    try:
        code = int(importlib.import_module(args._module).run(args) or 0)
        sys.stdout.flush()  # a full disk or /dev/full fails here, inside the handlers below
        return code
    except TraceParseError as exc:
        print(f"ptprof: {exc.path}: {exc.reason}", file=sys.stderr)
        return 2
    except (LoadCancelled, KeyboardInterrupt):
        print("ptprof: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        _silence_stdout()
        return 0
    except OSError as exc:
        if exc.filename is not None:  # a file we were asked to read or write
            print(f"ptprof: {exc.filename}: {exc.strerror or exc}", file=sys.stderr)
        else:  # writing our own output: stdout on a full disk, /dev/full, a closed terminal
            _silence_stdout()
            print(f"ptprof: cannot write the output: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except MemoryError:
        print("ptprof: out of memory while loading", file=sys.stderr)
        return 2


def _escape_unencodable() -> None:
    """Text that the terminal's encoding cannot hold - a name's lone surrogate (JSON "\\ud800"), a file name's
    byte that is not UTF-8 - is written as a \\u escape, never a UnicodeEncodeError after the work is done."""
    for stream in (sys.stdout, sys.stderr):
        if getattr(stream, "errors", None) not in (None, "backslashreplace") and hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # closed, or not ours to change
                pass


def _silence_stdout() -> None:
    """stdout failed: drop what is still buffered, so the interpreter's exit flush prints nothing more."""
    import os
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
