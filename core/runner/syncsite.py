"""Where an implicit host sync came from: the innermost user frame and the innermost library frame.
Runs INSIDE the user's interpreter (stdlib only); core/runner/child.py loads it by path.

A sync inside library code (transformers' Trainer calling `.item()`, torch's Module.to) has the user's
line far up the stack (`trainer.train()`): both frames are kept, so a finding can say
`transformers/trainer.py:2375 in _maybe_log_save_evaluate <- train.py:12`. Library = the interpreter's
stdlib and site-packages (any `site-packages` / `dist-packages` folder), torch included; user = the rest.
"""
from __future__ import annotations

import linecache
import os
import site
import sys
import sysconfig
import warnings


def library_roots() -> tuple[str, ...]:
    roots = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            roots.add(os.path.realpath(path) + os.sep)
            roots.add(os.path.abspath(path) + os.sep)
    try:
        extra = list(site.getsitepackages()) + [site.getusersitepackages()]
    except Exception:  # virtualenv's old site.py
        extra = []
    for path in extra:
        roots.add(os.path.abspath(path) + os.sep)
    return tuple(sorted(roots, key=len, reverse=True))


class SiteFinder:
    def __init__(self, torch_dir: str, own_dir: str):
        self.torch_dir = torch_dir.rstrip(os.sep) + os.sep
        self.own_dir = own_dir.rstrip(os.sep) + os.sep
        self.roots = library_roots()
        self._compile = (self.torch_dir + "_dynamo", self.torch_dir + "_inductor")

    def is_library(self, filename: str) -> bool:
        return (filename.startswith("<") or filename.startswith(self.roots) or filename.startswith(self.torch_dir)
                or f"{os.sep}site-packages{os.sep}" in filename or f"{os.sep}dist-packages{os.sep}" in filename)

    def short(self, filename: str) -> str:
        """transformers/trainer.py for .../site-packages/transformers/trainer.py."""
        for marker in (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}"):
            if marker in filename:
                return filename.rsplit(marker, 1)[1]
        if filename.startswith(self.torch_dir):
            return "torch/" + filename[len(self.torch_dir):]
        for root in self.roots:
            if filename.startswith(root):
                return filename[len(root):]
        return filename

    def find(self, filename: str, lineno: int, frame) -> dict | None:
        """{"file", "line", "via", "lib_file", "lib_line", "lib_function", "lib_label", "lib_code"} for a
        warning raised at filename:lineno with `frame` the innermost Python frame to walk from; None when
        the stack runs through torch._dynamo / torch._inductor (compile-time work, not the training loop)."""
        user = lib = torch_frame = None
        while frame is not None:
            f = frame.f_code.co_filename
            if f.startswith(self._compile):
                return None
            if f.startswith(self.own_dir) or "warnings" in os.path.basename(f):
                frame = frame.f_back
                continue
            if not self.is_library(f):
                user = (f, frame.f_lineno)
                break
            if f.startswith(self.torch_dir):
                torch_frame = torch_frame or (f, frame.f_lineno, frame.f_code.co_name)
            elif lib is None and not f.startswith("<"):
                lib = (f, frame.f_lineno, frame.f_code.co_name)
            frame = frame.f_back
        lib = lib or torch_frame
        if user is None and not self.is_library(filename):
            user = (filename, lineno)
        out: dict = {}
        if user is None:  # no user frame at all (a library's own entry point): the library frame stands in
            if lib is None:
                user = (filename, lineno)
            else:
                user = lib[:2]
        out["file"], out["line"] = user
        via = None
        if filename.startswith(self.torch_dir):
            via = f"torch/{filename[len(self.torch_dir):]}:{lineno}"
        elif torch_frame is not None:
            via = f"{self.short(torch_frame[0])}:{torch_frame[1]}"
        out["via"] = via
        if lib is not None and lib[:2] != user:
            code = linecache.getline(lib[0], lib[1]).strip()[:200]
            out.update(lib_file=lib[0], lib_line=lib[1], lib_function=lib[2],
                       lib_label=f"{self.short(lib[0])}:{lib[1]} in {lib[2]}", lib_code=code)
        return out


def innermost_frame(depth: int):
    return sys._getframe(depth + 1)


def install_sync_debug(runner) -> None:
    """torch.cuda.set_sync_debug_mode("warn"): each implicit host sync site warns once at its line; the
    warnings become "sync" events (runner.ev) and runner.sync_sites entries (trace metadata) instead of
    being printed, with the innermost user and library frames (SiteFinder). `runner` is the ChildRunner."""
    try:
        runner.torch.cuda.set_sync_debug_mode("warn")
    except Exception:
        return
    original = warnings.showwarning
    sites, ev = runner.sync_sites, runner.ev

    def showwarning(message, category, filename, lineno, file=None, line=None):
        text = str(message)
        if "synchronizing CUDA operation" not in text:
            return original(message, category, filename, lineno, file, line)
        site = runner.sites.find(filename, lineno, sys._getframe(1))
        if site is None:
            return  # inside torch.compile's own work (dynamo/inductor): not the training loop
        key = (site["file"], site["line"], site.get("lib_file"), site.get("lib_line"))
        if key not in sites:
            # the source lines travel with the bundle, so rules can tell .item() from .to() when
            # the bundle is opened on another machine
            site["code"] = linecache.getline(site["file"], site["line"]).strip()[:200]
            site["first_step"] = runner.step
            sites[key] = site
            ev.emit("sync", step=runner.step, message=text.split(" (Triggered internally")[0],
                    **{k: v for k, v in site.items() if k != "first_step"})
    warnings.showwarning = showwarning
