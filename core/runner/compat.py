"""What the user's Python and torch can do, for the code that runs INSIDE the user's interpreter (child.py and
the siblings it loads by path; the env doctor's probe loads it too). Stdlib only; torch is passed in.

The runner supports CPython 3.9+ and torch 2.1+: older ones get one line before anything starts (start.py
for the interpreter - it has to compile on a Python 2 -, `too_old` for torch). Within that range a torch API
that came later switches one ptprof feature off; `features(torch)` says which, and why, and the child says it
once (a `feature_off` notice: run.json notices, the Run panel's console; run.json environment.features).
"""
from __future__ import annotations

import importlib
import inspect
import re
import sys

MIN_PYTHON = (3, 9)
MIN_TORCH = (2, 1)


def version_tuple(text) -> tuple:
    """(major, minor) of "2.2.2+cpu", "2.6.0a0+git1234", "2.15.0"; (0, 0) when there is none."""
    m = re.match(r"\s*(\d+)\.(\d+)", str(text or ""))
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def too_old(torch=None, python=None) -> str | None:
    """One line when this interpreter (or its torch) is older than the runner supports, else None."""
    python = tuple(python or sys.version_info[:3])
    if python[:2] < MIN_PYTHON:
        return (f"Python {'.'.join(map(str, python))} at {sys.executable} is too old for ptprof's runner: "
                f"it needs Python {MIN_PYTHON[0]}.{MIN_PYTHON[1]} or newer with torch {MIN_TORCH[0]}.{MIN_TORCH[1]}+")
    if torch is not None:
        version = getattr(torch, "__version__", "?")
        if version_tuple(version) < MIN_TORCH:
            return (f"torch {version} in {sys.executable} is too old for ptprof's runner: it needs torch "
                    f"{MIN_TORCH[0]}.{MIN_TORCH[1]} or newer")
    return None


# -- the torch APIs the child uses that came after 2.1 (or may go away) -----------------------------------
def optimizer_hooks(torch):
    """(register_optimizer_step_pre_hook, register_optimizer_step_post_hook) - torch >= 2.0 - or None."""
    try:  # torch.optim does not expose its `optimizer` submodule as an attribute (2.13): import it
        optim = importlib.import_module(torch.__name__ + ".optim.optimizer")
    except Exception:  # not a module (no __name__), no torch.optim.optimizer
        return None
    pre = getattr(optim, "register_optimizer_step_pre_hook", None)
    post = getattr(optim, "register_optimizer_step_post_hook", None)
    return (pre, post) if callable(pre) and callable(post) else None


def is_compiling(torch):
    """A no-argument callable: True while dynamo traces (our hooks then do nothing), or None. torch.compiler.
    is_compiling came in torch 2.3; 2.1 / 2.2 have torch._dynamo.is_compiling, taken only when something
    already imported torch._dynamo (importing it costs 60 % of `import torch` again: 8.7 s of 14 s for
    torch 2.2.2 on a loaded 2-core VM)."""
    fn = getattr(getattr(torch, "compiler", None), "is_compiling", None)
    if callable(fn):
        return fn
    dynamo = sys.modules.get(f"{getattr(torch, '__name__', '')}._dynamo")
    fn = getattr(dynamo, "is_compiling", None)
    return fn if callable(fn) else None


def experimental_config(profiler, options: dict):
    """(torch.profiler._ExperimentalConfig(**options) or None, [option names this torch does not take]).
    Options are dropped one at a time, newest first (enable_cuda_sync_events first)."""
    config = getattr(profiler, "_ExperimentalConfig", None)
    options = dict(options)
    if config is None:
        return None, sorted(options)
    dropped = []
    while options:
        try:
            return config(**options), dropped
        except TypeError:
            name = next((k for k in _NEWEST_FIRST if k in options), None)
            if name is None:
                break
            options.pop(name)
            dropped.append(name)
    return None, dropped + sorted(options)


_NEWEST_FIRST = ("enable_cuda_sync_events", "verbose")


def _takes(fn, *names) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return all(n in params for n in names) or any(p.kind == p.VAR_KEYWORD for p in params.values())


# -- which ptprof features this interpreter + torch supports --------------------------------------------
def features(torch, cuda=None) -> dict:
    """{feature: {"on": bool, "why": str}} - `why` says what is missing (and since which torch) when off,
    what the feature does when on. `cuda`: whether CUDA is in use (CUDA-only features are "on": None,
    "why": not applicable, when it is not)."""
    version = getattr(torch, "__version__", "?")
    if cuda is None:
        try:
            cuda = bool(torch.cuda.is_available())
        except Exception:
            cuda = False
    out = {}

    def put(name, on, why_on, why_off, cuda_only=False):
        if cuda_only and not cuda:
            out[name] = {"on": None, "why": "CUDA only (this run has no GPU)"}
        else:
            out[name] = {"on": bool(on), "why": why_on if on else f"torch {version}: {why_off}"}

    put("step_detection", optimizer_hooks(torch) is not None,
        "optimizer / backward / forward steps found at run time",
        "no global optimizer step hooks (torch 2.0+): the script runs without the profiler")
    put("compile_aware_hooks", is_compiling(torch) is not None,
        "step hooks stand aside while torch.compile traces",
        "no torch.compiler.is_compiling (torch 2.3+): while torch.compile traces, the forward hooks of an "
        "inference script may count the traced calls as steps")
    tp = getattr(torch, "profiler", None)
    _, dropped = experimental_config(tp, {"enable_cuda_sync_events": True}) if cuda else (None, [])
    put("cuda_sync_events", not dropped, "cross-stream waits (cudaStreamWaitEvent) in the trace",
        "_ExperimentalConfig has no enable_cuda_sync_events: cross-stream waits are not in the trace, the "
        "critical path does not see them", cuda_only=True)
    profile = getattr(tp, "profile", None)
    put("trace_metadata", hasattr(profile, "add_metadata_json"),
        "run facts (flags, sync sites) in each trace's metadata",
        "torch.profiler.profile has no add_metadata_json: traces lack ptprof's run facts")
    logging_ = getattr(torch, "_logging", None)
    put("compile_reasons", _takes(getattr(logging_, "set_logs", None), "graph_breaks", "recompiles"),
        "torch.compile graph breaks and recompiles with reasons and user lines (compile.json)",
        "torch._logging.set_logs has no graph_breaks / recompiles: compile.json has dynamo's counters only")
    tc = getattr(torch, "cuda", None)
    put("sync_debug", callable(getattr(tc, "set_sync_debug_mode", None)),
        "implicit host syncs (.item(), .cpu(), ...) at their source line",
        "no torch.cuda.set_sync_debug_mode: implicit host syncs are not located", cuda_only=True)
    return out


def off_notices(feats: dict) -> list:
    """(feature, message) for every feature that is off (not those that do not apply)."""
    return [(name, f"{name.replace('_', ' ')} off - {f['why']}") for name, f in feats.items() if f["on"] is False]


# -- what child.py calls (kept here: child.py stays small) ------------------------------------------------
def features_or_why(torch) -> dict:
    """features(torch), or the probe's own failure as one "off" feature: a probe never stops the run."""
    try:
        return features(torch)
    except Exception as exc:
        return {"probe": {"on": False, "why": f"{type(exc).__name__}: {exc}"}}


def announce(emit, feats: dict) -> None:
    """One `feature_off` notice per feature this torch lacks (run.json notices, the Run panel's console)."""
    for name, message in off_notices(feats):
        emit("notice", code="feature_off", feature=name, message=message)


def refuse_if_too_old(torch, emit) -> bool:
    """A torch older than MIN_TORCH: the one line as an `exception` event, then `end` (exit 2)."""
    why = too_old(torch)
    if why:
        emit("exception", message=why, traceback="")
        emit("end", exit_code=2, steps=0, cycles=0, step_source=None)
    return bool(why)


def each_or_notice(emit, **patches) -> None:
    """Run each of the child's optional patches; one that this torch cannot take costs that feature (a
    `feature_off` notice), never the run."""
    for name, patch in patches.items():
        try:
            patch()
        except Exception as exc:
            emit("notice", code="feature_off", feature=name,
                 message=f"{name.replace('_', ' ')} off - {type(exc).__name__}: {exc}")
