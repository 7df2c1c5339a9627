"""Runs a user's training script under torch.profiler. Runs INSIDE the user's interpreter: stdlib + torch only.

    python child.py --bundle DIR [--wait N --warmup N --active N --repeat N] [--no-shapes] [--no-memory]
                    [--with-stack] [--fallback-steps N] [--module] -- SCRIPT|MODULE [ARGS...]

The script runs as __main__ (runpy.run_path, or runpy.run_module like `python -m` with --module) with its
own argv; cwd is the launcher's. Nothing in the script changes: what a step is gets decided at run time
(stepsource.py: the first optimizer's step(), else the main loss's backward pass, else a bounded window of
top-level module forwards), and the schedule counts steps from the first one (the first iteration, with
setup and compilation, is never recorded). A script that drives torch.profiler itself gets no second
profiler (we step aside and say so). Events go to
events.jsonl (core/runner/protocol.py), traces to traces/rank<R>.cycle<N>.pt.trace.json.gz, torch.compile
graph breaks and recompiles to compile.json.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import signal
import sys
import threading
import time
import traceback
import warnings
from pathlib import Path

_HERE = Path(__file__).resolve().parent
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
    for name, default in (("wait", 5), ("warmup", 1), ("active", 5), ("repeat", 1), ("fallback-steps", 5)):
        p.add_argument(f"--{name}", type=int, default=default)
    p.add_argument("--no-shapes", action="store_true")
    p.add_argument("--no-memory", action="store_true")
    p.add_argument("--with-stack", action="store_true")
    p.add_argument("--no-sync-debug", action="store_true")
    p.add_argument("--stop-after-window", action="store_true", help="end the script once the last cycle is saved")
    p.add_argument("--memory-history", action="store_true")  # memhist.py: the allocator's history + snapshot
    p.add_argument("--max-entries", type=int, default=100000)
    p.add_argument("--module", action="store_true", help="SCRIPT is a module name, run like `python -m`")
    p.add_argument("--apply", default="", help="runtime switches (switches.py), e.g. pin_memory,tf32")
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
_stepsource, _syncsite, _target = _load_sibling("stepsource"), _load_sibling("syncsite"), _load_sibling("target")
_devinfo, _observe = _load_sibling("devinfo"), _load_sibling("observe")
_switches = _load_sibling("switches")  # --apply: a finding's fix applied at run time (ptprof try)
_memhist = _load_sibling("memhist")  # allocator history, the snapshot at an OOM (issue 32)
_compat = _load_sibling("compat")  # what this Python / torch can do (older torch: features off, said once)
_trace_export = _load_sibling("trace_export")  # a cycle -> traces/<name>.pt.trace.json.gz, atomically


class ChildRunner:
    def __init__(self, opts: argparse.Namespace, torch, protocol, capture):
        self.o = opts
        self.torch = torch
        self.rank = int(os.environ.get("RANK", "0"))
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.bundle = Path(opts.bundle)
        self.traces = self.bundle / "traces"
        self.traces.mkdir(parents=True, exist_ok=True)
        self.protocol = protocol
        self.ev = protocol.EventWriter(str(self.bundle / protocol.EVENTS_FILE), self.rank)
        self.capture = capture
        self.target = None
        self.prof = None  # the profiler of the current step source (started at its first step)
        self.stepped_aside = False
        self.step = 0
        self._top_calls: dict[int, int] = {}
        self._fallback_module = None
        self._forward_done = False  # the bounded forward window ran: no further forward steps
        self._last_ns = time.perf_counter_ns()
        self._hook_ns = 0  # our own time in the last step hook (profiler transitions, export, device sync)
        self._cycle, self._discard, self._phase = 0, False, "start"
        self._meta_cycle = -1
        self._autocast_seen: set[str] = set()
        self.loaders = _observe.LoaderWatch()
        self.sources = _stepsource.StepSources(torch, self._on_switch, self._on_step, self._on_forward_pre,
                                               self._guarded, compat=_compat)
        self.sites = _syncsite.SiteFinder(os.path.dirname(torch.__file__), str(_HERE))
        self.sync_sites: dict[tuple, dict] = {}
        self._sync_meta_n = 0
        self.switches = _switches.Switches(torch, opts.apply, self.ev.emit, str(self.bundle), self.rank)
        self.memhist = _memhist.MemoryHistory(torch, self.bundle, self.rank, self.ev.emit, opts.memory_history,
                                              opts.max_entries, (os.path.dirname(torch.__file__), str(_HERE)))
        self.features = _compat.features_or_why(torch)  # {feature: {on, why}} -> start event, notices

    @property
    def source(self) -> str:
        return self.sources.source or "optimizer"

    # -- profiler construction -------------------------------------------------------------------
    def _make_profiler(self, wait, warmup, active, repeat):
        tp = self.torch.profiler
        acts = [tp.ProfilerActivity.CPU]
        if self.torch.cuda.is_available():
            acts.append(tp.ProfilerActivity.CUDA)
        extra = {}
        options = {"verbose": True} if self.o.with_stack else {}
        if len(acts) > 1:  # CUPTI's sync records: cross-stream waits (cudaStreamWaitEvent) for the critical path
            options["enable_cuda_sync_events"] = True
        if options:  # an option this torch does not take is left out (compat.features said it at the start)
            config, _ = _compat.experimental_config(tp, options)
            if config is not None:
                extra["experimental_config"] = config
        prof = tp.profile(activities=acts, schedule=tp.schedule(wait=wait, warmup=warmup, active=active,
                                                                 repeat=repeat),
                          on_trace_ready=self._on_trace_ready, record_shapes=not self.o.no_shapes,
                          profile_memory=not self.o.no_memory, with_stack=self.o.with_stack, **extra)
        if hasattr(prof, "preset_metadata_json"):  # lands in the trace even for cycles without a hook call
            prof.preset_metadata_json("ptprof_run", json.dumps(self._run_meta()))
        return prof

    def _schedule(self) -> tuple[int, int, int, int]:
        if self.source == "forward":
            return 0, 1, max(1, self.o.fallback_steps), 1
        # after a DataLoader's prefetched batches, a batch of every worker (observe.py)
        return self.loaders.schedule(self.o.wait, self.o.warmup, self.o.active, self.o.repeat)

    def _run_meta(self) -> dict:
        t = self.torch
        cuda = t.cuda.is_available()
        return {"rank": self.rank, "world_size": self.world, "script": self.target.label if self.target else "",
                "torch_version": t.__version__, "cuda_runtime": getattr(t.version, "cuda", None),
                "cudnn_version": t.backends.cudnn.version() if cuda else None,
                "python": sys.version.split()[0], "step_source": self.source}

    def _flags(self) -> dict:
        b = self.torch.backends
        return {"cudnn_benchmark": bool(b.cudnn.benchmark), "cudnn_deterministic": bool(b.cudnn.deterministic),
                "cudnn_enabled": bool(b.cudnn.enabled), "tf32_matmul": bool(b.cuda.matmul.allow_tf32),
                "tf32_cudnn": bool(b.cudnn.allow_tf32),
                "float32_matmul_precision": self.torch.get_float32_matmul_precision(),
                "deterministic_algorithms": bool(self.torch.are_deterministic_algorithms_enabled()),
                "autocast": sorted(self._autocast_seen), **self._run_meta()}

    # -- hooks -----------------------------------------------------------------------------------
    def install(self) -> None:
        if not self.sources.install():  # torch < 2.0
            self.step_aside(f"torch {self.torch.__version__} has no global optimizer hook (needs torch >= 2.0): "
                            "the script runs without the profiler")
            return
        _compat.each_or_notice(self.ev.emit, own_profiler_check=self._patch_profiler_start,  # failing: feature off
                               autocast_flags=lambda: _observe.patch_autocast(self.torch, self._autocast_seen),
                               loader_watch=lambda: self.loaders.install(self.torch), sync_debug=self._install_sync_debug)

    def _guarded(self, hook):
        """Our hooks run inside the user's training step: a profiler failure must never break it."""
        def call(*args):
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

    def _on_switch(self, old: str | None, new: str) -> None:
        """A stronger step source appeared (stepsource.py): the window of the weaker one is dropped."""
        if self.prof is not None:
            recording = self.prof.current_action.name != "NONE"
            self._discard = True
            try:
                self.prof.stop()
            finally:
                self._discard = False
            self.prof = None
            if recording:  # said only when a window was dropped (not for 2-step accumulation in the wait step)
                self.ev.emit("notice", code="step_source_switched", message=(
                    f"{new} steps seen after {self.step} {old} step(s): the {old} window in progress was "
                    f"dropped, steps count {new} steps from here on"))
        self.step = 0
        self._phase = "start"
        self._meta_cycle, self._sync_meta_n = -1, 0  # the new profiler gets the metadata again

    def _on_step(self, source: str) -> None:
        start_ns = self._record_step(source)
        try:
            self.switches.at_step(self.step)  # a switch that did not take stops the run here (exit 3)
            if self.stepped_aside or (self.prof is None and source == "forward" and self._forward_done):
                return
            if self.prof is None:
                self.prof = self._make_profiler(*self._schedule())
                self.prof.start()
                if self.loaders.moved:
                    self.ev.emit("notice", code="loader_schedule", **self.loaders.notice())
            else:
                if self.prof.current_action.name == "RECORD_AND_SAVE":
                    self._close_window_sync(self.prof)
                self.prof.step()
            self._after_step(self.prof)
        finally:
            self._last_ns = time.perf_counter_ns()
            self._hook_ns = self._last_ns - start_ns

    def _on_forward_pre(self, module) -> None:
        if self.stepped_aside or self._forward_done:
            return
        key = id(module)
        if self.sources.source is None:
            # inference = a top-level module runs a third time before any backward / optimizer step (a loss
            # module or a second model called once per iteration does not count, nor a GAN discriminator
            # called on real and fake data before the first backward)
            self._top_calls[key] = self._top_calls.get(key, 0) + 1
            if self._top_calls[key] < 3:
                return
            self._fallback_module = key
            self.sources.become_forward()
            self.ev.emit("notice", code="fallback", message=(
                f"no optimizer step or backward pass seen: profiling a bounded window of {max(1, self.o.fallback_steps)} "
                f"forward calls of {type(module).__name__} instead (inference script?)"))
            self._on_step("forward")
        elif key == self._fallback_module:
            self._on_step("forward")

    def _record_step(self, source: str) -> int:
        now = time.perf_counter_ns()
        self.step += 1
        # dur_ns: the script's own time since the previous step hook returned (our profiler transitions,
        # trace export and window-end sync are that hook's hook_ns); phase: the profiler state the interval
        # ran in ("start" = from the child's start to the first step)
        self.ev.emit("step", step=self.step, dur_ns=now - self._last_ns, source=source, phase=self._phase,
                     hook_ns=self._hook_ns)
        return now

    def _close_window_sync(self, prof) -> None:
        """The coming step()/stop() closes an active window: wait for the GPU first, so the window's GPU work
        (queued behind a CPU that runs ahead) is in the trace. The sync runs after ProfilerStep#N has ended
        (no step's CPU span holds it), under a `ptprof::window_end_sync` range; the wait is a gpu_lag event."""
        cuda = self.torch.cuda
        if not (cuda.is_available() and cuda.is_initialized()):
            return
        rec = getattr(prof, "step_rec_fn", None)
        if rec is not None:
            rec.__exit__(None, None, None)
            prof.step_rec_fn = None
        t0 = time.perf_counter_ns()
        with self.torch.profiler.record_function("ptprof::window_end_sync"):
            cuda.synchronize()
        self.ev.emit("gpu_lag", step=self.step, cycle=self._cycle + 1, lag_ns=time.perf_counter_ns() - t0,
                     source=self.source)

    def _after_step(self, prof) -> None:
        action = prof.current_action.name  # schedule() returns NONE both while waiting and when done
        if action == "NONE":
            w, wu, a, r = self._schedule()
            done = self.source == "forward" or (r > 0 and prof.step_num >= (w + wu + a) * r)
            phase = "done" if done else "wait"
            if done and self.source == "forward":
                self._forward_done = True
        else:
            phase = "warmup" if action == "WARMUP" else "active"
        if phase != self._phase:
            self._phase = phase
            self.ev.emit("phase", phase=phase, step=self.step, source=self.source)
            if phase == "done":
                self.memhist.window_done()
            if phase == "done" and self.o.stop_after_window and self._cycle:
                raise _guards.WindowDone()  # ends the script here, in its main thread (not SIGINT)
        if phase in ("warmup", "active") and len(self.sync_sites) != self._sync_meta_n:
            self._sync_meta_n = len(self.sync_sites)
            try:
                prof.add_metadata_json("ptprof_sync_sites", self.protocol.kineto_json(list(self.sync_sites.values())))
            except Exception:
                pass
        if phase in ("warmup", "active") and self._meta_cycle != self._cycle:
            self._meta_cycle = self._cycle
            try:
                prof.add_metadata_json("ptprof", self.protocol.kineto_json(self._flags()))
            except Exception as exc:  # metadata is a nicety; never break the user's run
                self.ev.emit("notice", code="metadata", message=f"could not add trace metadata: {exc}")

    def _on_trace_ready(self, prof) -> None:
        if self._discard:
            return
        self._cycle += 1
        name = f"rank{self.rank}.cycle{self._cycle}.pt.trace.json.gz"
        t0 = time.perf_counter()
        try:
            final = _trace_export.export_cycle(prof, self.traces, name)
        except Exception as exc:
            self.ev.emit("notice", code="export_failed", message=f"could not write trace {name}: {exc}")
            return
        self.ev.emit("cycle", cycle=self._cycle, path=f"traces/{name}", bytes=final.stat().st_size,
                     export_s=round(time.perf_counter() - t0, 3), step=self.step, source=self.source)

    # -- patches ---------------------------------------------------------------------------------
    def _install_sync_debug(self) -> None:
        """Implicit host syncs (.item(), .cpu(), masks, nonzero, pageable .to()) become "sync" events and
        trace metadata at their line (syncsite.install_sync_debug). Explicit synchronize() is not reported."""
        if self.o.no_sync_debug or not self.torch.cuda.is_available():
            return
        _syncsite.install_sync_debug(self)

    def _patch_profiler_start(self) -> None:
        cls = self.torch.profiler.profile
        original = cls.start
        runner = self

        def start(prof_self):
            if prof_self is not runner.prof and not runner.stepped_aside:
                runner.step_aside("the script started its own torch.profiler: ptprof stepped aside "
                                  "(trace cycles recorded so far are kept)")
            return original(prof_self)
        cls.start = start

    def step_aside(self, message: str) -> None:
        self.stepped_aside = True
        if self.prof is not None:
            try:
                self.prof.stop()
            except Exception:
                pass
        self.prof = None
        self.ev.emit("notice", code="step_aside", message=message)

    # -- the run ---------------------------------------------------------------------------------
    def run(self, target, args: list[str]) -> int:
        torch = self.torch
        self.target = target
        self.ev.emit("start", pid=os.getpid(), python=sys.executable, torch_version=torch.__version__,
                     cuda=torch.cuda.is_available(), devices=torch.cuda.device_count(), world_size=self.world,
                     argv=[target.label, *args], cwd=os.getcwd(), module=target.name if target.module else None,
                     device_properties=_devinfo.device_properties(torch), cpus=_observe.cpus(), features=self.features,
                     teardown_cupti=os.environ.get("TEARDOWN_CUPTI") == "1",
                     schedule={k: getattr(self.o, k) for k in ("wait", "warmup", "active", "repeat")})
        _compat.announce(self.ev.emit, self.features)
        try:
            target.check()
        except _target.BadTarget as exc:  # bad input: Python's own few lines (file, line, caret), no runner frames
            self.ev.emit("exception", message=exc.message, traceback=exc.text)
            sys.stderr.write(exc.text)
            self.finish(2)
            return 2
        if _USES_PROFILER.search(target.source()):
            self.step_aside("the script uses torch.profiler itself: ptprof does not add a second profiler "
                            "(steps and GPU are still monitored; the script's own traces are not in the bundle)")
        self.install()
        self.memhist.start()
        exit_code = 0
        try:
            self.switches.install()  # before the script: raises switches.Refused (exit 3) when one cannot apply
            target.run(args)
        except SystemExit as exc:
            exit_code = _exit_code(exc.code)
            if isinstance(exc, _Terminated):
                self.ev.emit("notice", code="terminated", message="stopped by SIGTERM")
        except _guards.WindowDone:
            exit_code = 0
            self.ev.emit("notice", code="window_done", message=_guards.WindowDone.message)
        except KeyboardInterrupt:
            exit_code = 130
            self.ev.emit("notice", code="interrupted", message="stopped by SIGINT (Ctrl-C / Stop)")
        except BaseException as exc:  # the user's script failed: record it, keep the traces
            exit_code = 1
            self.memhist.on_exception(exc)  # an OOM: its snapshot and figures (the failure itself goes on)
            tb = "".join(traceback.format_exception(type(exc), exc, _user_frames(exc.__traceback__)))
            self.ev.emit("exception", message=f"{type(exc).__name__}: {exc}", traceback=tb)
            sys.stderr.write(tb)
        finally:
            self.finish(exit_code)
        return exit_code

    def finish(self, exit_code: int) -> None:
        prof = self.prof
        if prof is not None and prof.current_action.name != "NONE":
            self.ev.emit("notice", code="flushing", message="writing the trace window in progress…")
        # a second Ctrl-C, or torchrun's SIGTERM after our SIGINT, must not cut the trace flush
        # (the launcher escalates to SIGKILL if the flush hangs)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        _Signals.flushing = True  # an orphaned child's own escalation waits for the flush (guards.stop_self)
        if prof is not None:
            try:
                if prof.current_action.name in ("RECORD", "RECORD_AND_SAVE"):
                    self._close_window_sync(prof)
                prof.stop()  # saves the cycle in progress (partial) if it was recording
            except Exception as exc:
                self.ev.emit("notice", code="flush_failed", message=f"could not flush the profiler: {exc}")
        self.sources.remove()
        self.memhist.finish()
        if self.capture is not None and self.rank == 0:
            try:
                self.capture.write(self.bundle / "compile.json")
            except Exception as exc:
                self.ev.emit("notice", code="compile_json", message=f"could not write compile.json: {exc}")
        self.ev.emit("end", exit_code=exit_code, steps=self.step, cycles=self._cycle,
                     step_source=self.sources.source)
        self.ev.close()
        _Signals.flushing = False


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
    rank = int(os.environ.get("RANK", "0"))
    protocol.take_key()  # the run's key, before any script code runs: only signed lines are believed
    early = protocol.EventWriter(str(Path(opts.bundle) / protocol.EVENTS_FILE), rank)
    # stop handlers first, then `launch`: the launcher counts its stop grace from that event (before it,
    # a SIGINT ends the interpreter with Python's own 130). The answer goes out from a thread as soon as
    # the signal arrives, even while the main thread is inside `import torch` (seconds under load).
    signal.signal(signal.SIGTERM, _on_sigterm)
    # SIG_IGN here is inherited, not the script's choice: `ptprof record ... &` from a script (a shell
    # without job control ignores SIGINT in background jobs) or nohup-style wrappers. The launcher
    # stops by SIGINT, so it is taken back; a script that ignores SIGINT itself still can, later.
    if signal.getsignal(signal.SIGINT) in (signal.default_int_handler, signal.SIG_IGN):
        signal.signal(signal.SIGINT, _Signals.handle)
    _Signals.on_first_stop(lambda signum: early.emit("notice", code="stopping", message="stopping…"))
    _Signals.watch_wakeups()
    # the launcher's death is noticed from here on, during the torch import too
    threading.Thread(target=_Orphan.watch, name="ptprof-parent-watch", daemon=True).start()
    early.emit("launch", pid=os.getpid())  # before the (slow) torch import: the launcher's start timeout
    warnings.filterwarnings("ignore", message=".*Profiler clears events at the end of each cycle")
    warnings.filterwarnings("ignore", message="Synchronization debug mode is a prototype feature")
    # about our own global forward hooks (stepsource.py), which ignore the OptimizedModule's extra call
    warnings.filterwarnings("ignore", message="Using `torch.compile\\(module\\)` when there are global hooks")
    _observe.cupti_teardown(opts.repeat)
    try:
        import torch
    except ImportError as exc:  # bad input (wrong interpreter): the launcher says it in one line
        early.emit("exception", message=f"torch not installed in {sys.executable} ({exc})", traceback="")
        early.emit("end", exit_code=2)
        return 2
    except (KeyboardInterrupt, _Terminated) as exc:  # stopped during the torch import: nothing to save
        code = 130 if isinstance(exc, KeyboardInterrupt) else exc.code
        early.emit("notice", code="interrupted" if code == 130 else "terminated",
                   message=f"stopped by {'SIGINT' if code == 130 else 'SIGTERM'} before the script started")
        early.emit("end", exit_code=code, steps=0, cycles=0, step_source=None)
        if _Orphan.stopped and rank == 0:
            _guards.mark_orphaned(Path(opts.bundle), code)
        return code
    if _compat.refuse_if_too_old(torch, early.emit):  # one line before anything starts (older Python: start.py)
        return 2
    sys.stdout = _LogFallback(sys.stdout, Path(opts.bundle) / "stdout.log")
    sys.stderr = _LogFallback(sys.stderr, Path(opts.bundle) / "stderr.log")
    capture = capture_mod.CompileCapture.install(torch)
    runner = ChildRunner(opts, torch, protocol, capture)
    target = _target.Target(opts.script if opts.module else str(Path(opts.script).resolve()), opts.module)
    code = runner.run(target, list(opts.args))
    if _Orphan.stopped and runner.rank == 0:
        _guards.mark_orphaned(runner.bundle, code)  # the launcher died: nobody else closes run.json
    return code


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(code)
