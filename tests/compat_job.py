"""The runner's compatibility job: core/runner/child.py and every module it loads, under each Python a user may
train with (3.9, 3.10, 3.12, 3.13; the suite itself runs on 3.11), with a FAKE torch (tests/fake_torch) so no
torch download is needed.

    python tests/compat_job.py          # what .ci/run runs after the suite: a table, exit 1 on a failure

(a) byte-compile and import: every runner module the child loads compiles and imports under that Python (with
    the fake torch, compat.features() answers);
(b) end to end: the launcher (core.runner.session, this interpreter) runs the child under that Python on
    tests/fake_torch/train_fake.py - optimizer / backward / inference step detection, the schedule's windows
    and trace cycles, run.json, and a Stop (SIGINT) in the middle of a window that still flushes it.
Interpreters are found on PATH (python3.X) or under ~/.pyenv/versions/3.X.*/bin; a missing one is skipped with
the reason. tests/core/runner/test_compat_pythons.py runs the same checks as pytest tests.
"""
from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUNNER = REPO / "core" / "runner"
FAKE_TORCH = REPO / "tests" / "fake_torch"
TRAIN = FAKE_TORCH / "train_fake.py"
VERSIONS = ("3.9", "3.10", "3.12", "3.13")
_found: dict[str, tuple[str | None, str]] = {}


def find_python(version: str) -> tuple[str | None, str]:
    """(path, "") of a working CPython `version`, or (None, why not). A pyenv shim whose version is not
    selected answers "command not found": it does not count."""
    if version in _found:
        return _found[version]
    candidates = []
    on_path = shutil.which(f"python{version}")
    if on_path:
        candidates.append(on_path)
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    candidates += sorted(glob.glob(os.path.join(root, "versions", f"{version}.*", "bin", f"python{version}")),
                         reverse=True)
    for exe in candidates:
        try:
            r = subprocess.run([exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                               capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if r.returncode == 0 and r.stdout.strip() == version:
            _found[version] = (exe, "")
            return _found[version]
    _found[version] = (None, f"python{version} not found (PATH, or {root}/versions/{version}.*/bin)")
    return _found[version]


def child_modules() -> list[str]:
    """child.py, the siblings it loads by path (`_load_sibling("name")`, found in its text, so a new one is
    covered without a change here), and the modules around it that run in the user's interpreter."""
    text = (RUNNER / "child.py").read_text()
    names = {"child", "start", "compat", *re.findall(r"""_load_sibling\(\s*["'](\w+)["']""", text)}
    return sorted(f"{n}.py" for n in names if (RUNNER / f"{n}.py").is_file())


_IMPORT_PROBE = r"""
import importlib.util, json, sys
runner, names = sys.argv[1], sys.argv[2:]
out = {"python": sys.version.split()[0], "compiled": [], "imported": []}
for name in names:
    path = runner + "/" + name
    with open(path, "rb") as fh:
        compile(fh.read(), path, "exec")
    out["compiled"].append(name)
for name in names:
    if name == "start.py":
        continue  # its work happens under __main__ only; compiled above
    spec = importlib.util.spec_from_file_location("_compat_job_" + name[:-3], runner + "/" + name)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out["imported"].append(name)
import torch
assert names[-1] == "compat.py"
out["features"] = mod.features(torch)
print(json.dumps(out))
"""


def compile_and_import(python: str) -> dict:
    """(a): every child module byte-compiles and imports under `python` (fake torch on the path)."""
    names = child_modules()
    names = [n for n in names if n != "compat.py"] + ["compat.py"]  # compat last: its features() are asked
    env = {**os.environ, "PYTHONPATH": str(FAKE_TORCH), "PYTHONDONTWRITEBYTECODE": "1"}
    r = subprocess.run([python, "-c", _IMPORT_PROBE, str(RUNNER), *names], capture_output=True, text=True,
                       timeout=120, env=env, cwd=tempfile.gettempdir())
    if r.returncode != 0:
        raise AssertionError(f"{python}: compile/import failed:\n{r.stderr[-3000:]}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["compiled"] == names and len(out["imported"]) == len(names) - ("start.py" in names), out
    return out


def record(python: str, out_dir: Path, mode: str = "optimizer", steps: int = 12, step_s: float = 0.002,
           schedule=(1, 1, 2, 2), env: dict | None = None, stop_at_step: int | None = None, timeout_s=120.0):
    """(b): one run of train_fake.py under `python` through the real launcher. Returns (session, events)."""
    sys.path[:0] = [str(REPO)] if str(REPO) not in sys.path else []
    from core.gpu.backend import NoGpu
    from core.runner.config import RunConfig, Schedule, validate
    from core.runner.session import RunSession
    extra = {"PYTHONPATH": str(FAKE_TORCH), "MODE": mode, "STEPS": str(steps), "STEP_S": str(step_s),
             **(env or {})}
    cfg = validate(RunConfig(script=str(TRAIN), python=python, env=tuple(extra.items()),
                             schedule=Schedule(*schedule), out_dir=str(out_dir), nvml_hz=5))
    s = RunSession(cfg, backend=NoGpu("compat job")).start()
    events, t0 = [], time.monotonic()
    while not s.finished:
        events += s.poll().events
        if stop_at_step is not None and not s.stopping_requested and \
                any(e["type"] == "step" and e["step"] >= stop_at_step for e in events):
            s.request_stop()
        if time.monotonic() - t0 > timeout_s:
            s.request_stop()
            raise AssertionError(f"{python} {mode}: the run did not finish within {timeout_s:.0f} s")
        time.sleep(0.05)
    return s, events


def run_json(s) -> dict:
    return json.loads(Path(s.bundle.run_json).read_text())


def check_optimizer(python: str, tmp: Path) -> str:
    s, events = record(python, tmp / "optimizer")
    run = run_json(s)
    steps = [e["step"] for e in events if e["type"] == "step"]
    phases = [e["phase"] for e in events if e["type"] == "phase"]
    assert s.exit_code == 0 and run["status"] == "ok", (run.get("status"), run.get("exception"), run["notices"])
    assert steps == list(range(1, 13)) and run["steps"] == 12, steps
    assert phases == ["wait", "warmup", "active", "wait", "warmup", "active", "done"], phases
    cycles = [e for e in events if e["type"] == "cycle"]
    assert [c["step"] for c in cycles] == [5, 9] and run["cycles"] == 2, cycles
    assert [Path(t).name for t in run["traces"]] == ["rank0.cycle1.pt.trace.json.gz", "rank0.cycle2.pt.trace.json.gz"]
    env = run["environment"]
    assert env["python"] == python and env["torch_version"].endswith("+fake"), env
    assert env["features"]["step_detection"]["on"] is True, env.get("features")
    import gzip
    trace = json.loads(gzip.open(s.bundle.root / run["traces"][0]).read())
    names = [e["name"] for e in trace["traceEvents"]]
    assert "ProfilerStep#2" in names and "ProfilerStep#3" in names and trace["ptprof"]["python"], names
    return f"optimizer steps 1-12, windows at 5 and 9, {len(run['traces'])} traces"


def check_backward(python: str, tmp: Path) -> str:
    s, events = record(python, tmp / "backward", mode="backward", schedule=(1, 1, 2, 1))
    run = run_json(s)
    assert s.exit_code == 0 and run["step_source"] == "backward" and run["cycles"] == 1, run
    sources = {e["source"] for e in events if e["type"] == "step"}
    assert sources == {"backward"} and run["steps"] == 11, (sources, run["steps"])  # from the 2nd backward
    return "backward steps"


def check_inference(python: str, tmp: Path) -> str:
    s, events = record(python, tmp / "inference", mode="inference", steps=20)
    run = run_json(s)
    assert s.exit_code == 0 and run["step_source"] == "forward" and run["cycles"] == 1, run
    assert any("forward calls of Linear" in n for n in run["notices"]), run["notices"]
    return "forward fallback window"


def check_stop(python: str, tmp: Path) -> str:
    """Stop (SIGINT through the launcher) during the active window: exit 130, the partial window is saved."""
    s, events = record(python, tmp / "stop", steps=400, step_s=0.05, schedule=(1, 1, 50, 1), stop_at_step=5)
    run = run_json(s)
    assert s.exit_code == 130 and run["status"] == "stopped", (s.exit_code, run.get("status"), run["notices"])
    assert run["cycles"] == 1 and any(n.startswith("stopped by SIGINT") for n in run["notices"]), run["notices"]
    return f"stop at step {run['steps']}: exit 130, window flushed"


def check_legacy(python: str, tmp: Path) -> str:
    """A torch 2.1-like fake (no torch.compiler.is_compiling, no enable_cuda_sync_events, no
    preset_metadata_json): the run goes on, the missing feature is said."""
    s, _ = record(python, tmp / "legacy", env={"FAKE_TORCH_LEGACY": "1"},
                  schedule=(1, 1, 2, 1))
    run = run_json(s)
    assert s.exit_code == 0 and run["status"] == "ok" and run["cycles"] == 1, run
    feats = run["environment"]["features"]
    assert feats["compile_aware_hooks"]["on"] is False and feats["cuda_sync_events"]["on"] is None, feats
    assert any(n.startswith("compile aware hooks off") for n in run["notices"]), run["notices"]
    return "torch 2.1-like: runs, says what is off"


def check_old_torch(python: str, tmp: Path) -> str:
    s, events = record(python, tmp / "oldtorch", env={"FAKE_TORCH_VERSION": "2.0.1"})
    run = run_json(s)
    assert s.exit_code == 2 and "torch 2.0.1" in run["exception"] and "2.1 or newer" in run["exception"], run
    assert not any(e["type"] == "step" for e in events) and "fake training" not in s.bundle.stdout_log.read_text()
    return "torch 2.0: one line, nothing runs"


def check_old_python(python: str, tmp: Path) -> str:
    """A Python older than 3.9 (start.py compiles even on 2.7): one line, nothing of ours runs."""
    s, events = record(python, tmp / "oldpython")
    run = run_json(s)
    assert s.exit_code == 2 and "too old for ptprof's runner" in (run["exception"] or ""), run
    assert "Python 3.9 or newer" in run["exception"] and not any(e["type"] in ("launch", "start") for e in events)
    return "one line: " + run["exception"].split(" at ")[0]


OLD_PYTHONS = ("3.8", "3.7", "3.6", "2.7")
CHECKS = (check_optimizer, check_backward, check_inference, check_stop)
ONCE = (check_legacy, check_old_torch)  # on the oldest interpreter found


def main() -> int:
    t_all = time.monotonic()
    failed = 0
    oldest_done = False
    print(f"compat job: runner child under {', '.join(VERSIONS)} with tests/fake_torch "
          f"(suite: {sys.version.split()[0]})")
    for version in VERSIONS:
        python, why = find_python(version)
        if python is None:
            print(f"  {version:5} SKIP  {why}")
            continue
        t0 = time.monotonic()
        with tempfile.TemporaryDirectory(prefix=f"ptprof-compat-{version}-") as tmp:
            results = []
            try:
                out = compile_and_import(python)
                results.append(f"compiled+imported {len(out['compiled'])} modules")
                for check in CHECKS + (() if oldest_done else ONCE):
                    results.append(check(python, Path(tmp)))
                oldest_done = True
                print(f"  {version:5} ok    {time.monotonic() - t0:5.1f} s  {python}: " + "; ".join(results))
            except Exception as exc:  # noqa: BLE001 - the job reports every interpreter
                failed += 1
                print(f"  {version:5} FAIL  {time.monotonic() - t0:5.1f} s  {python}: {type(exc).__name__}: {exc}")
    for version in OLD_PYTHONS:  # the gate, on the newest too-old interpreter there is
        python, _ = find_python(version)
        if python is not None:
            t0 = time.monotonic()
            with tempfile.TemporaryDirectory(prefix=f"ptprof-compat-{version}-") as tmp:
                try:
                    print(f"  {version:5} ok    {time.monotonic() - t0:5.1f} s  {python}: "
                          + check_old_python(python, Path(tmp)))
                except Exception as exc:  # noqa: BLE001
                    failed += 1
                    print(f"  {version:5} FAIL  {python}: {type(exc).__name__}: {exc}")
            break
    else:
        print(f"  older SKIP  no Python older than 3.9 found ({', '.join(OLD_PYTHONS)}): the gate is not run")
    print(f"compat job: {time.monotonic() - t_all:.1f} s, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
