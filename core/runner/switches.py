"""Runtime switches: a finding's fix applied inside the user's interpreter, with no change to their code.
Runs INSIDE the user's interpreter (stdlib + torch only, Python 3.9): core/runner/child.py loads it by path
(`--apply pin_memory,num_workers=4`); core/ imports `parse` from here to check a spec before a run.

Each switch is one small patch, installed before the script runs:
- pin_memory       DataLoader(..., pin_memory=True); the pinned batches it yields are copied to the GPU
                   with non_blocking=True (Tensor.to / Tensor.cuda of those tensors only).
- num_workers=N    DataLoader(..., num_workers=N); N defaults to min(8, CPUs available - 1).
- tf32             torch.backends.cuda.matmul.allow_tf32 and cudnn.allow_tf32 on (matmul precision 'high').
- bf16_autocast    the top-level module's forward runs under torch.autocast(device, torch.bfloat16); its
                   bf16 outputs are cast back to float32 (the loss outside the region sees float32, as the
                   autocast docs advise).
- foreach / fused  torch.optim constructors that take the argument get foreach=True / fused=True.
- set_to_none      Optimizer.zero_grad / Module.zero_grad always set_to_none=True.
- channels_last    the top-level module .to(memory_format=channels_last) and its 4-D tensor inputs too.
- cudnn_benchmark  torch.backends.cudnn.benchmark = True.
- compile[=MODE]   the top-level module compiled in place (nn.Module.compile; MODE: default,
                   reduce-overhead, max-autotune, max-autotune-no-cudagraphs, or the backends eager /
                   aot_eager); graph breaks are counted in the switch's result (reasons: compile.json).

The top-level module is found when the first optimizer is constructed (the root nn.Module holding most of
its parameters), or at the first step when no optimizer is ever made (inference).

A switch never silently leaves the run unchanged: each one checks at an early step that its patch took
(the DataLoader's pin_memory attribute, the optimizer's defaults['foreach'], the module's parameter
memory format, the autocast region entered, the compiled graphs ...). If not, the run stops there with
one line saying why (`Refused`, exit code 3) before anything is measured. Results go to the bundle's
switches.json (rank 0) and as `notice` events.
"""
from __future__ import annotations

import importlib.util
import inspect
import json
import os
import sys
import warnings
import weakref


def _sibling(name: str):
    """switch_module.py / switch_checks.py by path: in the user's interpreter our package is not importable
    (and a user package named `core` must not be shadowed)."""
    key = f"_ptprof_{name}"
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                     f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module
    spec.loader.exec_module(module)
    return module


_module, _checks = _sibling("switch_module"), _sibling("switch_checks")

NAMES = ("pin_memory", "num_workers", "tf32", "bf16_autocast", "foreach", "fused", "set_to_none",
         "channels_last", "cudnn_benchmark", "compile")
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
COMPILE_BACKENDS = _module.COMPILE_BACKENDS
REFUSED_EXIT = 3  # the child's exit code when a switch could not apply
SWITCHES_JSON = "switches.json"
CHECK_BY_STEP = 2  # a switch not confirmed by this step did not take (the first step pays setup)


class SwitchError(ValueError):
    """A bad --apply spec; str(exc) is one line."""


def default_workers() -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(8, cpus - 1))


def parse(spec: str) -> list:
    """'pin_memory,num_workers=4,compile=reduce-overhead' -> [(name, value or None), ...]; SwitchError."""
    out, seen = [], set()
    for item in (spec or "").split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip() if sep else None
        if name not in NAMES:
            raise SwitchError(f"unknown switch {name!r} (known: {', '.join(NAMES)})")
        if name == "num_workers":
            if value is not None and (not value.isdigit() or int(value) < 1):
                raise SwitchError(f"num_workers expects a whole number >= 1, got {value!r}")
        elif name == "compile":
            if value is not None and value not in COMPILE_MODES + COMPILE_BACKENDS:
                raise SwitchError(f"compile mode {value!r} unknown (modes: {', '.join(COMPILE_MODES)}; "
                                  f"backends: {', '.join(COMPILE_BACKENDS)})")
        elif value is not None:
            raise SwitchError(f"switch {name} takes no value (got {name}={value})")
        if name in seen:
            raise SwitchError(f"switch {name} given twice")
        seen.add(name)
        out.append((name, value))
    if {"foreach", "fused"} <= seen:
        raise SwitchError("foreach and fused exclude each other (torch.optim refuses both): pick one")
    return out


def spec_text(switches: list) -> str:
    return ",".join(n if v is None else f"{n}={v}" for n, v in switches)


class Refused(SystemExit):
    """A switch could not apply: the run stops (the launcher says why, in one line)."""

    def __init__(self, message: str):
        super().__init__(REFUSED_EXIT)
        self.message = message


class Switches(_module.ModuleSwitches, _checks.Checks):
    """The requested switches of one run: install() before the script, at_step(n) at each step boundary."""

    refused_error = Refused

    def __init__(self, torch, spec: str, emit=None, bundle: str = "", rank: int = 0):
        self.torch = torch
        self.wanted = parse(spec)
        self.emit = emit or (lambda *a, **k: None)
        self.bundle, self.rank = bundle, rank
        self.status = {name: ["pending", ""] for name, _ in self.wanted}
        self.values = dict(self.wanted)
        self.loaders = weakref.WeakSet()  # DataLoaders constructed with our arguments
        self.optimizers = []  # weak refs of every torch.optim.Optimizer constructed
        self.failed_ctor = {}  # switch -> why a constructor refused the argument (fused on a CPU param ...)
        self.counts = {"nonblocking": 0, "batch_copies": 0, "zero_grad": 0, "zero_grad_false": 0, "autocast": 0}
        self.batch = {}  # id(tensor) -> weakref of tensors a patched DataLoader yielded (pinned)
        self.top = None  # weakref of the top-level module, once found
        self._patched = []
        self._module_done = False
        self._resolved = False
        self._dynamo_base = 0
        self._final_step = CHECK_BY_STEP

    # -- public -----------------------------------------------------------------------------------
    @property
    def active(self) -> bool:
        return bool(self.wanted)

    def install(self) -> None:
        """Patch what the script will call. Refused (before the script runs) when a switch cannot apply
        in this interpreter at all."""
        t = self.torch
        if "bf16_autocast" in self.values and t.cuda.is_available() and not t.cuda.is_bf16_supported():
            self._refuse("bf16_autocast", "this GPU has no bfloat16 support")
        if "compile" in self.values and not hasattr(t, "compile"):
            self._refuse("compile", f"torch {t.__version__} has no torch.compile (needs torch >= 2.0)")
        loader_args = {}
        if "pin_memory" in self.values:
            loader_args["pin_memory"] = True
        if "num_workers" in self.values:
            n = self.values["num_workers"]
            loader_args["num_workers"] = int(n) if n else default_workers()
            self.values["num_workers"] = str(loader_args["num_workers"])
        if loader_args:
            self._patch_loader(loader_args)
        if "pin_memory" in self.values:
            self._patch_copies()
        if "tf32" in self.values:
            self._set_tf32()
        if "cudnn_benchmark" in self.values:
            t.backends.cudnn.benchmark = True
        for key in ("foreach", "fused"):
            if key in self.values:
                self._patch_optimizer_arg(key)
        self._patch_optimizer_init()
        if "set_to_none" in self.values:
            self._patch_zero_grad()
        self._dynamo_base = self._dynamo_graphs()
        self._write()

    def at_step(self, step: int) -> None:
        """Called at each step boundary: re-assert flags the script turned off, apply the module switches when
        no optimizer found the module, and confirm every switch by CHECK_BY_STEP (else Refused)."""
        if self._resolved or not self.wanted:
            return
        if step == 1:
            self._reassert_flags()
            if not self._module_done:
                self._apply_module_safely(None)
                if self._module_switches():
                    self._final_step = CHECK_BY_STEP + 1  # wrapped only now: its forward runs from the next call
        if step < self._final_step:
            self._check(final=False)
            return
        self._check(final=True)
        self._resolved = True
        self._write()

    def results(self) -> list:
        return [{"name": n, "value": self.values.get(n), "status": self.status[n][0], "message": self.status[n][1]}
                for n, _ in self.wanted]

    def remove(self) -> None:
        for owner, name, original in reversed(self._patched):
            setattr(owner, name, original)
        self._patched = []

    # -- bookkeeping ------------------------------------------------------------------------------
    def _set(self, name: str, status: str, message: str) -> None:
        if self.status[name][0] in ("applied", "refused"):
            return
        self.status[name] = [status, message]
        if status == "applied":
            self.emit("notice", code="switch_applied", message=f"{name}: {message}")
        elif status == "refused":
            self.emit("notice", code="switch_refused", message=f"{name} cannot apply: {message}")

    def _refuse(self, name: str, message: str):
        self._set(name, "refused", message)
        self._write()
        raise Refused(f"{name} cannot apply: {message}")

    def _write(self) -> None:
        if not self.bundle or self.rank != 0:
            return
        path = os.path.join(self.bundle, SWITCHES_JSON)
        tmp = f"{path}.{os.getpid()}.tmp"
        try:
            with open(tmp, "w") as fh:
                json.dump({"format": "ptprof-switches/1", "spec": spec_text(self.wanted),
                           "switches": self.results()}, fh, indent=1)
            os.replace(tmp, path)
        except OSError:
            pass

    def _patch(self, owner, name: str, new) -> None:
        original = owner.__dict__[name] if name in owner.__dict__ else getattr(owner, name)
        new.__wrapped__ = original
        for attr in ("__name__", "__qualname__", "__doc__"):
            try:
                setattr(new, attr, getattr(original, attr))
            except (AttributeError, TypeError):
                pass
        self._patched.append((owner, name, original))
        setattr(owner, name, new)

    # -- DataLoader: pin_memory, num_workers ---------------------------------------------------------
    def _patch_loader(self, overrides: dict) -> None:
        cls = self.torch.utils.data.DataLoader
        original = cls.__init__
        sig = inspect.signature(original)
        loaders = self.loaders

        def __init__(loader, *args, **kwargs):
            try:
                bound = sig.bind(loader, *args, **kwargs)
            except TypeError:  # not our call shape: leave it to torch's own error
                return original(loader, *args, **kwargs)
            bound.arguments.update(overrides)
            original(*bound.args, **bound.kwargs)
            loaders.add(loader)
        self._patch(cls, "__init__", __init__)

        if "pin_memory" in overrides:
            it_cls = self.torch.utils.data.dataloader._BaseDataLoaderIter
            nxt = it_cls.__next__
            switches = self

            def __next__(it):
                data = nxt(it)
                if getattr(it, "_pin_memory", False):
                    switches._remember(data, 0)
                return data
            self._patch(it_cls, "__next__", __next__)

    def _remember(self, data, depth: int) -> None:
        t = self.torch
        if isinstance(data, t.Tensor):
            key = id(data)
            self.batch[key] = weakref.ref(data, lambda _r, k=key, b=self.batch: b.pop(k, None))
        elif depth < 3 and isinstance(data, (list, tuple)):
            for item in data:
                self._remember(item, depth + 1)
        elif depth < 3 and isinstance(data, dict):
            for item in data.values():
                self._remember(item, depth + 1)

    def _is_batch(self, tensor) -> bool:
        ref = self.batch.get(id(tensor))
        return ref is not None and ref() is tensor

    def _patch_copies(self) -> None:
        t = self.torch
        switches = self
        compiling = getattr(getattr(t, "compiler", None), "is_compiling", None) or (lambda: False)
        to, cuda = t.Tensor.to, t.Tensor.cuda

        def _to(tensor, *args, **kwargs):
            if switches.batch and not compiling() and switches._is_batch(tensor):
                switches.counts["batch_copies"] += 1
                if "non_blocking" not in kwargs and not any(isinstance(a, bool) for a in args):
                    kwargs["non_blocking"] = True
                    switches.counts["nonblocking"] += 1
            return to(tensor, *args, **kwargs)

        def _cuda(tensor, *args, **kwargs):
            if switches.batch and not compiling() and switches._is_batch(tensor):
                switches.counts["batch_copies"] += 1
                if "non_blocking" not in kwargs and len(args) < 2:
                    kwargs["non_blocking"] = True
                    switches.counts["nonblocking"] += 1
            return cuda(tensor, *args, **kwargs)
        self._patch(t.Tensor, "to", _to)
        self._patch(t.Tensor, "cuda", _cuda)

    # -- flags: tf32, cudnn_benchmark ------------------------------------------------------------------
    def _set_tf32(self) -> None:
        b = self.torch.backends
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # newer torch prefers fp32_precision; the old flags still work
            b.cuda.matmul.allow_tf32 = True
            b.cudnn.allow_tf32 = True
            self.torch.set_float32_matmul_precision("high")

    def _tf32_on(self) -> bool:
        b = self.torch.backends
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return bool(b.cuda.matmul.allow_tf32) and bool(b.cudnn.allow_tf32)

    def _reassert_flags(self) -> None:
        if "tf32" in self.values and not self._tf32_on():
            self._set_tf32()
            self.emit("notice", code="switch_reasserted",
                      message="tf32: the script turned TF32 off itself; ptprof turned it on again at the first step")
        if "cudnn_benchmark" in self.values and not self.torch.backends.cudnn.benchmark:
            self.torch.backends.cudnn.benchmark = True
            self.emit("notice", code="switch_reasserted", message="cudnn_benchmark: the script set "
                      "cudnn.benchmark = False itself; ptprof set it again at the first step")

    # -- optimizers: foreach, fused; finding the top-level module ----------------------------------
    def _optimizer_classes(self, key: str) -> list:
        optim = self.torch.optim
        out = []
        for value in vars(optim).values():
            if isinstance(value, type) and issubclass(value, optim.Optimizer) and value is not optim.Optimizer:
                try:
                    if key in inspect.signature(value.__init__).parameters:
                        out.append(value)
                except (TypeError, ValueError):
                    continue
        return out

    def _patch_optimizer_arg(self, key: str) -> None:
        switches = self
        for cls in self._optimizer_classes(key):
            original = cls.__dict__["__init__"]
            sig = inspect.signature(original)

            def __init__(opt, *args, _original=original, _sig=sig, **kwargs):
                try:
                    bound = _sig.bind(opt, *args, **kwargs)
                except TypeError:
                    return _original(opt, *args, **kwargs)
                given = dict(bound.arguments)
                if given.get(key) is True:
                    switches.failed_ctor[key] = f"{type(opt).__name__} already uses {key}=True: nothing would change"
                    return _original(opt, *args, **kwargs)
                if key == "foreach" and given.get("fused"):
                    switches.failed_ctor["foreach"] = f"{type(opt).__name__} already uses fused=True"
                    return _original(opt, *args, **kwargs)
                bound.arguments[key] = True
                if key == "fused" and given.get("foreach"):
                    bound.arguments["foreach"] = None
                try:
                    return _original(*bound.args, **bound.kwargs)
                except (RuntimeError, ValueError) as exc:  # fused on unsupported params, differentiable ...
                    switches.failed_ctor[key] = f"{type(opt).__name__}({key}=True) refused: {exc}"
                    return _original(opt, *args, **kwargs)
            self._patch(cls, "__init__", __init__)

    def _patch_optimizer_init(self) -> None:
        cls = self.torch.optim.Optimizer
        original = cls.__init__
        switches = self

        def __init__(opt, *args, **kwargs):
            original(opt, *args, **kwargs)
            switches.optimizers.append(weakref.ref(opt))
            if not switches._module_done:
                switches._apply_module_safely(opt)
        self._patch(cls, "__init__", __init__)

    def _apply_module_safely(self, optimizer) -> None:
        try:
            self._apply_module(optimizer)
        except Exception as exc:  # never break the user's code here: the step check stops the run
            self._module_done = True
            for name in self._module_switches():
                self._set(name, "refused", f"failed on the module: {type(exc).__name__}: {exc}")

    # -- zero_grad -------------------------------------------------------------------------------------
    def _patch_zero_grad(self) -> None:
        t = self.torch
        counts = self.counts
        for owner in (t.optim.Optimizer, t.nn.Module):
            original = owner.zero_grad

            def zero_grad(obj, set_to_none=True, _original=original):
                counts["zero_grad"] += 1
                if not set_to_none:
                    counts["zero_grad_false"] += 1
                return _original(obj, True)
            self._patch(owner, "zero_grad", zero_grad)
