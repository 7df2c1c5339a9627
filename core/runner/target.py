"""What the child runs: a script file (`python SCRIPT`) or a module (`python -m MODULE`), exactly as
Python would. Runs INSIDE the user's interpreter (stdlib only); core/runner/child.py loads it by path.

- script: sys.argv = [SCRIPT, *ARGS], sys.path[0] = the script's folder, runpy.run_path as __main__.
- module: sys.path[0] = the working directory, runpy.run_module(alter_sys=True) as __main__ (sys.argv[0]
  becomes the module's file, relative imports work, a package runs its __main__).
"""
from __future__ import annotations

import os
import runpy
import sys
import traceback
from pathlib import Path


class BadTarget(Exception):
    """The script or module cannot run at all (syntax error, no such module): `message` is one line,
    `text` what Python itself would print."""

    def __init__(self, message: str, text: str):
        super().__init__(message)
        self.message, self.text = message, text


class Target:
    def __init__(self, name: str, module: bool):
        self.name, self.module = name, module
        self.origin = name if not module else ""  # the file that runs (a module's __main__ once resolved)

    @property
    def label(self) -> str:
        return f"-m {self.name}" if self.module else self.name

    def check(self) -> None:
        """Raise BadTarget for a SyntaxError in the file, or a module that does not exist; other OS
        errors are left to runpy (reported the usual way). Module mode imports the parent packages, as
        `python -m` does."""
        if self.module:
            sys.path[0] = os.getcwd()  # as python -m, and our own folder (child.py's) is off the path
            try:
                _, spec, code = runpy._get_module_details(self.name)  # what run_module does first
            except SyntaxError as exc:
                raise _syntax(exc) from None
            except ImportError as exc:  # runpy's own "No module named ..." / "cannot be directly executed"
                raise BadTarget(f"ImportError: {exc}", f"{sys.executable}: {exc}\n") from None
            self.origin = spec.origin or ""
            return
        try:
            compile(Path(self.name).read_bytes(), self.name, "exec")
        except SyntaxError as exc:
            raise _syntax(exc) from None
        except (OSError, ValueError):
            pass

    def source(self) -> str:
        try:
            return Path(self.origin).read_text(errors="replace") if self.origin else ""
        except OSError:
            return ""

    def run(self, args: list[str]) -> None:
        if self.module:
            sys.argv = [self.origin or self.name, *args]
            sys.path[0] = os.getcwd()
            runpy.run_module(self.name, run_name="__main__", alter_sys=True)
        else:
            sys.argv = [self.name, *args]
            sys.path[0] = str(Path(self.name).resolve().parent)
            runpy.run_path(self.name, run_name="__main__")


def _syntax(exc: SyntaxError) -> BadTarget:
    text = "".join(traceback.format_exception_only(type(exc), exc))
    return BadTarget(f"SyntaxError: {exc.msg} ({Path(exc.filename or '?').name}, line {exc.lineno})", text)
