"""A try of one fix on a recorded run: the before bundle's command, what its findings predict, whether the
switch can apply to this run (said before anything runs), the after run's RunConfig, and the result.

Used by `ptprof try` (core/commands/tryfix.py) and the GUI's Try it (gui/tryfix/). Qt-free.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from core.runner.bundle import is_bundle, read_json
from core.runner.config import RunConfig, Schedule
from core.runner.switches import SwitchError, parse, spec_text
from core.tryfix.fixes import RULE_SWITCH, resolve, rules_for_switch

_LABEL = re.compile(r"^\[rank [^\]]*\]\s*")


class TryError(ValueError):
    """A try cannot start (not a bundle, unknown fix ...); str(exc) is one line."""


@dataclass
class Before:
    path: Path
    run: dict
    findings: list[dict] = field(default_factory=list)
    summary: dict = field(default_factory=dict)
    names: frozenset = frozenset()  # every event name of the run's traces (pre-checks)
    cuda: bool = False

    @property
    def step_ns(self) -> float | None:
        s = self.summary
        return s.get("unprofiled_step_ns") or s.get("mean_step_ns") or None


def load_before(path: str | Path, use_cache: bool = True, trace_set=None, analysis: dict | None = None) -> Before:
    """The recorded run: run.json, its findings and summary (rules engine), its event names."""
    root = Path(path).expanduser()
    if not root.is_dir() or not is_bundle(root):
        raise TryError(f"not a ptprof run bundle (no run.json of ours): {root}")
    run = read_json(root / "run.json") or {}
    config = run.get("config")
    if not isinstance(config, dict) or not (config.get("script") or config.get("module")):
        raise TryError(f"{root}: run.json has no recorded command to run again")
    if trace_set is None:
        from core.trace.loader import load
        trace_set = load(str(root), use_cache=use_cache)
    if analysis is None:
        from core.rules import analyze
        analysis = analyze(trace_set).to_json()
    names = set()
    for m in trace_set.models:
        names.update(str(m.strings[i]) for i in range(len(m.strings)))
    cuda = any(m.devices for m in trace_set.models) or bool((run.get("environment") or {}).get("cuda"))
    return Before(root.resolve(), run, list(analysis.get("findings", [])), dict(analysis.get("summary", {})),
                  frozenset(names), cuda)


def predicted(before: Before, spec: str) -> tuple[float | None, float | None, list[str]]:
    """(saving ns per step, % of the step, rule ids) the before run's findings predict for the switches in
    `spec`: each rule's findings' savings summed per rank/cycle label, the median over labels; None when no
    finding with a what-if is fixed by these switches."""
    rules = []
    for name, _ in parse(spec):
        rules += [r for r in rules_for_switch(name) if r not in rules]
    groups: dict[str, list[float]] = {}
    pcts: dict[str, list[float]] = {}
    for f in before.findings:
        if f.get("rule") in rules and isinstance(f.get("saving_ns"), (int, float)):
            label = (_LABEL.match(f.get("title", "")) or [""])[0]
            groups.setdefault(label, []).append(float(f["saving_ns"]))
            pcts.setdefault(label, []).append(float(f.get("saving_pct") or 0.0))
    hit = sorted({f.get("rule") for f in before.findings if f.get("rule") in rules})
    if not groups:
        return None, None, hit
    import numpy as np
    ns = float(np.median([sum(v) for v in groups.values()]))
    pct = float(np.median([sum(v) for v in pcts.values()]))
    if before.step_ns and not pct:
        pct = 100.0 * ns / before.step_ns
    return ns, pct, hit


def candidates(before: Before) -> list[str]:
    """The switch specs the before run's findings ask for (one per rule that has a switch), largest
    predicted saving first: what `try --all` tries and what gets a Try it button."""
    seen, out = set(), []
    for f in sorted(before.findings, key=lambda f: -(f.get("saving_ns") or 0)):
        spec = RULE_SWITCH.get(f.get("rule", ""))
        if spec and spec not in seen and precheck(before, spec) is None:
            seen.add(spec)
            out.append(spec)
    return out


def precheck(before: Before, spec: str) -> str | None:
    """Why these switches cannot apply to this run, from what it recorded (one line), or None."""
    names = before.names
    step_source = before.run.get("step_source")
    for name, _ in parse(spec):
        if name in ("pin_memory", "num_workers") and not any("DataLoader" in n for n in names):
            return f"{name}: the recorded run shows no torch.utils.data.DataLoader (its batches come from elsewhere)"
        if name in ("foreach", "fused", "set_to_none") and step_source not in (None, "optimizer"):
            return f"{name}: the recorded run has no optimizer step (steps came from {step_source} passes)"
        if name == "set_to_none" and not any("zero_grad" in n for n in names):
            return "set_to_none: the recorded run never calls zero_grad()"
        if name == "channels_last" and not any("conv" in n.lower() for n in names):
            return "channels_last: the recorded run has no convolution"
        if name in ("tf32", "cudnn_benchmark", "pin_memory") and not before.cuda:
            return f"{name}: the recorded run used no GPU: the switch would change nothing"
    return None


def fix_key(spec: str) -> str:
    return spec_text(parse(spec))


def folder_name(spec: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", spec.replace(",", "+"))[:80] or "fix"


def _int(v, default):
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def recorded_schedule(before: Before) -> Schedule:
    c = before.run["config"]
    s = c.get("schedule") if isinstance(c.get("schedule"), dict) else {}
    return Schedule(_int(s.get("wait"), 1), _int(s.get("warmup"), 1), _int(s.get("active"), 3), _int(s.get("repeat"), 1))


def timing_schedule(before: Before) -> Schedule:
    """The recorded schedule with its window(s) moved to the end of the run: the same warm-up, active steps and
    cycles, but `wait` = the run's steps less the window(s) less a margin of 2, so nearly every step runs before
    the profiler ever starts. Steps after a trace window are not clean: on the H100 the loop stayed 30-45 %
    slower once the profiler had run (bench/try_pairs, docs/architecture.md), so only steps before the first
    window measure a fix. The recorded schedule when the run's step count is unknown or too small."""
    rec = recorded_schedule(before)
    total = _int(before.run.get("steps"), 0)
    window = (rec.warmup + rec.active) * max(1, rec.repeat)
    late = total - window - 2 - max(0, rec.repeat - 1) * rec.wait
    if late <= rec.wait or rec.repeat == 0:
        return rec
    return Schedule(late, rec.warmup, rec.active, rec.repeat)


def after_config(before: Before, spec: str, out_dir: str | Path, schedule: Schedule | None = None) -> RunConfig:
    """The before run's command (script or module, args, interpreter, extra env, cwd, options) with `spec`'s
    switches on, recording into `out_dir`; `schedule` (default: the recorded one)."""
    c = before.run["config"]
    env = c.get("env") if isinstance(c.get("env"), dict) else {}
    return RunConfig(
        script=str(c.get("script") or ""), module=str(c.get("module") or ""),
        args=tuple(str(a) for a in c.get("args", []) if isinstance(a, (str, int, float))),
        python=str(c.get("python") or before.run.get("python") or ""), cwd=str(c.get("cwd") or ""),
        env=tuple((str(k), str(v)) for k, v in env.items()),
        schedule=schedule or recorded_schedule(before),
        record_shapes=bool(c.get("record_shapes", True)), profile_memory=bool(c.get("profile_memory", True)),
        with_stack=bool(c.get("with_stack", False)), sync_debug=bool(c.get("sync_debug", True)),
        nproc=_int(c.get("nproc"), 1), use_torchrun=bool(c.get("torchrun", False)),
        nvml_hz=float(c.get("nvml_hz", 10.0)) if isinstance(c.get("nvml_hz"), (int, float)) else 10.0,
        stop_after_window=bool(c.get("stop_after_window", False)), out_dir=str(out_dir), apply=spec,
        **_optional(c))


def _optional(c: dict) -> dict:
    """Options of newer RunConfigs the before run.json may hold (memory history ...), when RunConfig has them."""
    import dataclasses
    names = {f.name for f in dataclasses.fields(RunConfig)}
    out = {}
    if "memory_history" in names and isinstance(c.get("memory_history"), bool):
        out["memory_history"] = c["memory_history"]
    if "max_entries" in names and isinstance(c.get("max_entries"), int) and not isinstance(c.get("max_entries"), bool):
        out["max_entries"] = c["max_entries"]
    return out


def tries_dir(before: Before) -> Path:
    """Where the after runs go: a folder beside the bundle, `<bundle>.tries/`."""
    return before.path.with_name(before.path.name + ".tries")


def check_ids(ids: str) -> list[str]:
    """'pageable_memcpy,tf32' -> ['pin_memory', 'tf32'] (one spec per fix tried on its own); TryError."""
    try:
        return [spec_text([sw]) for sw in resolve(ids)]
    except SwitchError as exc:
        raise TryError(str(exc)) from None
