"""Runs a user's training script under torch.profiler. Runs INSIDE the user's interpreter: stdlib + torch only.

    python child.py --bundle DIR [--wait N --warmup N --active N --repeat N] [--no-shapes] [--no-memory]
                    [--with-stack] [--fallback-steps N] -- SCRIPT [ARGS...]

The script runs as __main__ (runpy) with its own argv; cwd is the launcher's. Nothing in the script
changes: a global optimizer step hook steps the profiler, so the schedule counts optimizer steps from the
first one (the first iteration, with setup and compilation, is never recorded). A script that never steps
an optimizer (inference) gets a bounded window stepped at each top-level module forward instead. A script
that drives torch.profiler itself gets no second profiler (we step aside and say so). Events go to
events.jsonl (core/runner/protocol.py), traces to traces/rank<R>.cycle<N>.pt.trace.json.gz, torch.compile
graph breaks and recompiles to compile.json.
"""
from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import linecache
import os
import re
import runpy
import shutil
import signal
import sys
import threading
import time
import traceback
import warnings
from pathlib import Path

_HERE = Path(__file__).resolve().parent
# a script that visibly trains gets no global module hooks: they would make torch.compile warn and
# recompile once when removed. Only scripts that look like inference get the forward-stepped fallback.
_TRAINS = re.compile(r"\boptim\b|\boptimizer\b|\.backward\(|\bTrainer\b|lightning|accelerate|deepspeed")
_USES_PROFILER = re.compile(
    r"(torch\.)?profiler\.profile\s*\(|from\s+torch\.profiler\s+import\s+[^\n]*\bprofile\b(?!\w)"
    r"|torch\.autograd\.profiler\.profile\s*\(|emit_nvtx\s*\(")


def _load_sibling(name: str):
    """Import protocol.py/compile_capture.py by path: the user's interpreter does not have our package."""
    spec = importlib.util.spec_from_file_location(f"_ptprof_{name}", _HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="ptprof-child")
    p.add_argument("--bundle", required=True)
    for name, default in (("wait", 1), ("warmup", 1), ("active", 3), ("repeat", 1), ("fallback-steps", 5)):
        p.add_argument(f"--{name}", type=int, default=default)
    p.add_argument("--no-shapes", action="store_true")
    p.add_argument("--no-memory", action="store_true")
    p.add_argument("--with-stack", action="store_true")
    p.add_argument("--no-sync-debug", action="store_true")
    p.add_argument("script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    ns = p.parse_args(argv)
    if ns.args and ns.args[0] == "--":
        ns.args = ns.args[1:]
    return ns


# what keeps a stop clean (held signals, launcher death, broken pipes, user tracebacks): guards.py
_guards = _load_sibling("guards")
_Terminated, _Signals, _Orphan, _LogFallback = _guards.Terminated, _guards.Signals, _guards.Orphan, _guards.LogFallback
_on_sigterm, _user_frames = _guards.on_sigterm, _guards.user_frames


class ChildRunner:
    def __init__(self, opts: argparse.Namespace, torch, protocol, capture):
        self.o = opts
        self.torch = torch
        self.rank = int(os.environ.get("RANK", "0"))
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.bundle = Path(opts.bundle)
        self.traces = self.bundle / "traces"
        self.traces.mkdir(parents=True, exist_ok=True)
        self.ev = protocol.EventWriter(str(self.bundle / protocol.EVENTS_FILE), self.rank)
        self.capture = capture
        self.prof = None  # the scheduled profiler (started at the first optimizer step)
        self.fallback = None  # forward-stepped profiler for scripts without an optimizer
        self.stepped_aside = False
        self.step = 0
        self._top_seen: set[int] = set()
        self._fallback_module = None
        self._depth = 0
        self._opt_id = None
        self._last_ns = time.perf_counter_ns()
        self._cycle = 0
        self._discard = False
        self._phase = None
        self._meta_cycle = -1
        self._autocast_seen: set[str] = set()
        self._handles = []
        self._fwd_handles = []
        self.sync_sites: dict[tuple[str, int], dict] = {}
        self._sync_meta_n = 0

    # -- profiler construction -------------------------------------------------------------------
    def _make_profiler(self, wait, warmup, active, repeat):
        tp = self.torch.profiler
        acts = [tp.ProfilerActivity.CPU]
        if self.torch.cuda.is_available():
            acts.append(tp.ProfilerActivity.CUDA)
        extra = {}
        if self.o.with_stack and hasattr(self.torch.profiler, "_ExperimentalConfig"):
            extra["experimental_config"] = self.torch.profiler._ExperimentalConfig(verbose=True)
        prof = tp.profile(activities=acts, schedule=tp.schedule(wait=wait, warmup=warmup, active=active,
                                                                 repeat=repeat),
                          on_trace_ready=self._on_trace_ready, record_shapes=not self.o.no_shapes,
                          profile_memory=not self.o.no_memory, with_stack=self.o.with_stack, **extra)
        if hasattr(prof, "preset_metadata_json"):  # lands in the trace even for cycles without a hook call
            prof.preset_metadata_json("ptprof_run", json.dumps(self._run_meta()))
        return prof

    def _run_meta(self) -> dict:
        t = self.torch
        cuda = t.cuda.is_available()
        return {"rank": self.rank, "world_size": self.world, "script": self.o.script,
                "torch_version": t.__version__, "cuda_runtime": getattr(t.version, "cuda", None),
                "cudnn_version": t.backends.cudnn.version() if cuda else None,
                "python": sys.version.split()[0], "step_source": "forward" if self.fallback else "optimizer"}

    def _flags(self) -> dict:
        b = self.torch.backends
        return {"cudnn_benchmark": bool(b.cudnn.benchmark), "cudnn_deterministic": bool(b.cudnn.deterministic),
                "cudnn_enabled": bool(b.cudnn.enabled), "tf32_matmul": bool(b.cuda.matmul.allow_tf32),
                "tf32_cudnn": bool(b.cudnn.allow_tf32),
                "float32_matmul_precision": self.torch.get_float32_matmul_precision(),
                "deterministic_algorithms": bool(self.torch.are_deterministic_algorithms_enabled()),
                "autocast": sorted(self._autocast_seen), "step_source": "forward" if self.fallback else "optimizer",
                **self._run_meta()}

    # -- hooks -----------------------------------------------------------------------------------
    def install(self, forward_fallback: bool) -> None:
        try:
            from torch.optim.optimizer import register_optimizer_step_post_hook
            from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
        except ImportError:  # torch < 2.0
            self.step_aside(f"torch {self.torch.__version__} has no global optimizer hook (needs torch >= 2.0): "
                            "the script runs without the profiler")
            return
        self._handles.append(register_optimizer_step_post_hook(self._guarded(self._on_optimizer_step)))
        if forward_fallback:
            self._fwd_handles = [register_module_forward_pre_hook(self._guarded(self._on_forward_pre)),
                                 register_module_forward_hook(self._on_forward_post)]
        self._patch_autocast()
        self._patch_profiler_start()
        self._install_sync_debug()

    def _guarded(self, hook):
        """Our hooks run inside the user's training step: a profiler failure must never break it."""
        def call(*args):
            if self.stepped_aside and hook.__name__ != "_on_optimizer_step":
                return None
            _Signals.depth += 1
            try:
                return hook(*args)
            except Exception as exc:
                self.step_aside(f"the profiler failed ({type(exc).__name__}: {exc}); the run goes on without it")
            finally:
                _Signals.depth -= 1
                _Signals.release()
            return None
        call.__name__ = hook.__name__
        return call

    def _drop_forward_hooks(self) -> None:
        for h in self._fwd_handles:
            h.remove()
        self._fwd_handles = []

    def _on_optimizer_step(self, optimizer, args, kwargs) -> None:
        if self._opt_id is None:
            self._opt_id = id(optimizer)
            self._drop_forward_hooks()
            if self.fallback is not None:
                self._discard = True  # it was gradient accumulation, not inference
                self.fallback.stop()
                self._discard = False
                self.fallback = None
                self.step = 0  # step numbers count optimizer steps from here on
                self._phase = None
                self.ev.emit("notice", code="fallback_discarded",
                             message="optimizer step seen after several forwards: forward window dropped")
        elif id(optimizer) != self._opt_id:
            return  # a second optimizer (GAN, multi-optimizer): count the first one's steps only
        self._record_step("optimizer")
        if self.stepped_aside:
            return
        if self.prof is None:
            s = self.o
            self.prof = self._make_profiler(s.wait, s.warmup, s.active, s.repeat)
            self.prof.start()
        else:
            self.prof.step()
        self._after_step(self.prof)

    def _on_forward_pre(self, module, args) -> None:
        self._depth += 1
        if self._depth != 1 or self._opt_id is not None or self.stepped_aside:
            return
        key = id(module)
        if self.fallback is None:
            # inference = a top-level module runs again before any optimizer step (a loss module or a
            # second model called once per iteration does not count)
            if key not in self._top_seen:
                self._top_seen.add(key)
                return
            self._fallback_module = key
            steps = max(1, self.o.fallback_steps)
            self.fallback = self._make_profiler(0, 1, steps, 1)
            self.ev.emit("notice", code="fallback", message=(
                f"no optimizer step seen: profiling a bounded window of {steps} forward calls of "
                f"{type(module).__name__} instead (inference script?)"))
            self._record_step("forward")
            self.fallback.start()
        elif key == self._fallback_module:
            self._record_step("forward")
            self.fallback.step()
        else:
            return
        self._after_step(self.fallback)

    def _on_forward_post(self, module, args, output) -> None:
        self._depth = max(0, self._depth - 1)

    def _record_step(self, source: str) -> None:
        now = time.perf_counter_ns()
        self.step += 1
        self.ev.emit("step", step=self.step, dur_ns=now - self._last_ns, source=source)
        self._last_ns = now

    def _after_step(self, prof) -> None:
        action = prof.current_action.name  # schedule() returns NONE both while waiting and when done
        if action == "NONE":
            s = self.o if prof is self.prof else None
            cycle = (s.wait + s.warmup + s.active) if s else 0
            phase = "done" if s is None or (s.repeat > 0 and prof.step_num >= cycle * s.repeat) else "wait"
        else:
            phase = "warmup" if action == "WARMUP" else "active"
        if phase != self._phase:
            self._phase = phase
            self.ev.emit("phase", phase=phase, step=self.step)
        if phase in ("warmup", "active") and len(self.sync_sites) != self._sync_meta_n:
            self._sync_meta_n = len(self.sync_sites)
            try:
                prof.add_metadata_json("ptprof_sync_sites", json.dumps(list(self.sync_sites.values())))
            except Exception:
                pass
        if phase in ("warmup", "active") and self._meta_cycle != self._cycle:
            self._meta_cycle = self._cycle
            try:
                prof.add_metadata_json("ptprof", json.dumps(self._flags()))
            except Exception as exc:  # metadata is a nicety; never break the user's run
                self.ev.emit("notice", code="metadata", message=f"could not add trace metadata: {exc}")

    def _on_trace_ready(self, prof) -> None:
        if self._discard:
            return
        self._cycle += 1
        name = f"rank{self.rank}.cycle{self._cycle}.pt.trace.json.gz"
        tmp_json = self.traces / f".{name}.json.tmp"
        final = self.traces / name
        t0 = time.perf_counter()
        try:
            prof.export_chrome_trace(str(tmp_json))
            part = final.with_name(final.name + ".part")
            with open(tmp_json, "rb") as src, gzip.open(part, "wb", compresslevel=3) as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            os.replace(part, final)
        except Exception as exc:
            self.ev.emit("notice", code="export_failed", message=f"could not write trace {name}: {exc}")
            return
        finally:
            tmp_json.unlink(missing_ok=True)
        self.ev.emit("cycle", cycle=self._cycle, path=f"traces/{name}", bytes=final.stat().st_size,
                     export_s=round(time.perf_counter() - t0, 3), step=self.step)

    # -- patches ---------------------------------------------------------------------------------
    def _install_sync_debug(self) -> None:
        """torch.cuda.set_sync_debug_mode("warn"): each implicit host sync site (.item(), .cpu(), masks,
        nonzero, pageable .to()) warns once at its user line; we turn those warnings into "sync" events
        and trace metadata instead of printing them. Explicit torch.cuda.synchronize() is not reported."""
        if self.o.no_sync_debug or not self.torch.cuda.is_available():
            return
        try:
            self.torch.cuda.set_sync_debug_mode("warn")
        except Exception:
            return
        original = warnings.showwarning
        sites, ev, runner = self.sync_sites, self.ev, self

        def showwarning(message, category, filename, lineno, file=None, line=None):
            text = str(message)
            if "synchronizing CUDA operation" not in text:
                return original(message, category, filename, lineno, file, line)
            site = runner._user_site(filename, lineno)
            if site is None:
                return  # inside torch.compile's own work (dynamo/inductor): not the training loop
            key = (site[0], site[1])
            if key not in sites:
                # the source line travels with the bundle, so rules can tell .item() from .to() when
                # the bundle is opened on another machine
                code = linecache.getline(site[0], site[1]).strip()[:200]
                sites[key] = {"file": site[0], "line": site[1], "first_step": runner.step, "via": site[2],
                              "code": code}
                ev.emit("sync", file=site[0], line=site[1], step=runner.step, via=site[2], code=code,
                        message=text.split(" (Triggered internally")[0])
        warnings.showwarning = showwarning

    def _user_site(self, filename: str, lineno: int):
        """(file, line, via) of the user's code behind a warning raised inside torch, or None when
        the stack runs through torch._dynamo / torch._inductor (compile-time work)."""
        torch_dir = os.path.dirname(self.torch.__file__) + os.sep
        if not filename.startswith(torch_dir):
            return filename, lineno, None
        via = f"{filename[len(torch_dir) - 6:]}:{lineno}"  # "torch/nn/modules/module.py:1370"
        frame = sys._getframe(2)
        while frame is not None:
            f = frame.f_code.co_filename
            if f.startswith((torch_dir + "_dynamo", torch_dir + "_inductor")):
                return None
            if not f.startswith((torch_dir, str(_HERE))) and "warnings" not in f and not f.startswith("<"):
                return f, frame.f_lineno, via
            frame = frame.f_back
        return filename, lineno, None

    def _patch_autocast(self) -> None:
        cls = getattr(getattr(self.torch, "amp", None), "autocast", None) or self.torch.autocast
        original = cls.__enter__
        seen = self._autocast_seen

        def __enter__(ac_self):
            seen.add(str(getattr(ac_self, "device", "?")) + ":" + str(getattr(ac_self, "fast_dtype", "")))
            return original(ac_self)
        cls.__enter__ = __enter__

    def _patch_profiler_start(self) -> None:
        cls = self.torch.profiler.profile
        original = cls.start
        runner = self

        def start(prof_self):
            if prof_self is not runner.prof and prof_self is not runner.fallback and not runner.stepped_aside:
                runner.step_aside("the script started its own torch.profiler: ptprof stepped aside "
                                  "(trace cycles recorded so far are kept)")
            return original(prof_self)
        cls.start = start

    def step_aside(self, message: str) -> None:
        self.stepped_aside = True
        for prof in (self.prof, self.fallback):
            if prof is not None:
                try:
                    prof.stop()
                except Exception:
                    pass
        self.prof = self.fallback = None
        self.ev.emit("notice", code="step_aside", message=message)

    # -- the run ---------------------------------------------------------------------------------
    def run(self, script: str, args: list[str]) -> int:
        torch = self.torch
        self.ev.emit("start", pid=os.getpid(), python=sys.executable, torch_version=torch.__version__,
                     cuda=torch.cuda.is_available(), devices=torch.cuda.device_count(), world_size=self.world,
                     argv=[script, *args], cwd=os.getcwd(), schedule={k: getattr(self.o, k) for k in
                                                                       ("wait", "warmup", "active", "repeat")})
        try:
            source = Path(script).read_text(errors="replace")
        except OSError:
            source = ""
        try:
            compile(Path(script).read_bytes(), script, "exec")
        except SyntaxError as exc:  # bad input: Python's own few lines (file, line, caret), no runner frames
            text = "".join(traceback.format_exception_only(type(exc), exc))
            self.ev.emit("exception", message=f"SyntaxError: {exc.msg} ({Path(script).name}, line {exc.lineno})",
                         traceback=text)
            sys.stderr.write(text)
            self.finish(2)
            return 2
        except (OSError, ValueError):
            pass  # runpy reports it the usual way
        if _USES_PROFILER.search(source):
            self.step_aside("the script uses torch.profiler itself: ptprof does not add a second profiler "
                            "(steps and GPU are still monitored; the script's own traces are not in the bundle)")
        self.install(forward_fallback=not _TRAINS.search(source))
        sys.argv = [script, *args]
        sys.path[0] = str(Path(script).resolve().parent)
        exit_code = 0
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as exc:
            exit_code = _exit_code(exc.code)
            if isinstance(exc, _Terminated):
                self.ev.emit("notice", code="terminated", message="stopped by SIGTERM")
        except KeyboardInterrupt:
            exit_code = 130
            self.ev.emit("notice", code="interrupted", message="stopped by SIGINT (Ctrl-C / Stop)")
        except BaseException as exc:  # the user's script failed: record it, keep the traces
            exit_code = 1
            tb = "".join(traceback.format_exception(type(exc), exc, _user_frames(exc.__traceback__)))
            self.ev.emit("exception", message=f"{type(exc).__name__}: {exc}", traceback=tb)
            sys.stderr.write(tb)
        finally:
            self.finish(exit_code)
        return exit_code

    def finish(self, exit_code: int) -> None:
        if any(p is not None and p.current_action.name != "NONE" for p in (self.prof, self.fallback)):
            self.ev.emit("notice", code="flushing", message="writing the trace window in progress…")
        # a second Ctrl-C, or torchrun's SIGTERM after our SIGINT, must not cut the trace flush
        # (the launcher escalates to SIGKILL if the flush hangs)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for prof in (self.prof, self.fallback):
            if prof is not None:
                try:
                    prof.stop()  # saves the cycle in progress (partial) if it was recording
                except Exception as exc:
                    self.ev.emit("notice", code="flush_failed", message=f"could not flush the profiler: {exc}")
        for h in self._handles + self._fwd_handles:
            h.remove()
        if self.capture is not None and self.rank == 0:
            try:
                self.capture.write(self.bundle / "compile.json")
            except Exception as exc:
                self.ev.emit("notice", code="compile_json", message=f"could not write compile.json: {exc}")
        self.ev.emit("end", exit_code=exit_code, steps=self.step, cycles=self._cycle)
        self.ev.close()


def _exit_code(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    sys.stderr.write(f"{code}\n")
    return 1


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(sys.argv[1:] if argv is None else argv)
    protocol = _load_sibling("protocol")
    capture_mod = _load_sibling("compile_capture")
    launch = protocol.EventWriter(str(Path(opts.bundle) / protocol.EVENTS_FILE), int(os.environ.get("RANK", "0")))
    launch.emit("launch", pid=os.getpid())  # before the (slow) torch import: the launcher's start timeout
    launch.close()
    signal.signal(signal.SIGTERM, _on_sigterm)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _Signals.handle)
    warnings.filterwarnings("ignore", message=".*Profiler clears events at the end of each cycle")
    warnings.filterwarnings("ignore", message="Synchronization debug mode is a prototype feature")
    try:
        import torch
    except ImportError as exc:  # bad input (wrong interpreter): the launcher says it in one line
        w = protocol.EventWriter(str(Path(opts.bundle) / protocol.EVENTS_FILE), int(os.environ.get("RANK", "0")))
        w.emit("exception", message=f"torch not installed in {sys.executable} ({exc})", traceback="")
        w.emit("end", exit_code=2)
        return 2
    threading.Thread(target=_Orphan.watch, name="ptprof-parent-watch", daemon=True).start()
    sys.stdout = _LogFallback(sys.stdout, Path(opts.bundle) / "stdout.log")
    sys.stderr = _LogFallback(sys.stderr, Path(opts.bundle) / "stderr.log")
    capture = capture_mod.CompileCapture.install(torch)
    runner = ChildRunner(opts, torch, protocol, capture)
    # the launcher holds off SIGTERM once it knows the stop is being handled (core/runner/process.py)
    _Signals.on_first_stop(lambda signum: runner.ev.emit("notice", code="stopping", message="stopping…"))
    code = runner.run(str(Path(opts.script).resolve()), list(opts.args))
    if _Orphan.stopped and runner.rank == 0:
        _guards.mark_orphaned(runner.bundle, code)  # the launcher died: nobody else closes run.json
    return code


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(code)
