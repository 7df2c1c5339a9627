"""Runtime switches (core/runner/switches.py) applied by the child inside a real CPU torch: every switch is
checked from inside the user's script (the DataLoader's attributes, the optimizer's defaults, the conv
weight's memory format, the autocast state in forward, zero_grad's effect, the backend flags), and every
refusal stops the run before anything is measured, with one line."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import no_torch_skip
from runner_scripts import write
from switch_scripts import FACTS, FLAGS_OFF, PLAIN

from core.gpu.backend import NoGpu
from core.runner.bundle import read_json
from core.runner.config import ConfigError, RunConfig, Schedule, validate
from core.runner.session import RunSession
from core.runner.switches import REFUSED_EXIT, SwitchError, parse
from core.tryfix.fixes import resolve, resolve_spec, switch_for_rule
from core.tryfix.store import read_switches

REPO = Path(__file__).resolve().parents[3]


def _run(tmp_path, script, args, apply, name="bundle", timeout_s=120):
    cfg = validate(RunConfig(script=str(script), args=tuple(args), schedule=Schedule(1, 1, 2, 1),
                             out_dir=str(tmp_path / name), apply=apply, nvml_hz=20))
    s = RunSession(cfg, backend=NoGpu("test")).start()
    t0 = time.monotonic()
    while not s.finished:
        s.poll()
        assert time.monotonic() - t0 < timeout_s, "run did not finish"
        time.sleep(0.05)
    return s


def _status(bundle) -> dict:
    return {s["name"]: s for s in read_switches(bundle)}


# -- spec parsing and the rule -> switch map (no torch) ---------------------------------------------------
def test_parse_accepts_switches_with_values_and_refuses_bad_ones():
    assert parse("pin_memory, num_workers=4,compile=reduce-overhead") == [
        ("pin_memory", None), ("num_workers", "4"), ("compile", "reduce-overhead")]
    for bad, words in (("nosuch", "unknown switch"), ("num_workers=0", ">= 1"), ("num_workers=x", ">= 1"),
                       ("compile=fast", "compile mode"), ("tf32=1", "takes no value"), ("tf32,tf32", "twice"),
                       ("foreach,fused", "exclude")):
        with pytest.raises(SwitchError, match=words):
            parse(bad)


def test_rule_ids_map_to_their_switch_and_code_changes_are_refused():
    assert switch_for_rule("pageable_memcpy") == "pin_memory"
    assert switch_for_rule("zero_grad_not_none") == "set_to_none"
    assert switch_for_rule("host_sync") is None
    assert resolve("pageable_memcpy,pin_memory,tf32") == [("pin_memory", None), ("tf32", None)]
    assert resolve_spec("dataloader_bound") == "num_workers"
    with pytest.raises(SwitchError, match="needs a code change"):
        resolve("host_sync")
    with pytest.raises(SwitchError, match="unknown fix"):
        resolve("fast_please")


def test_config_refuses_a_bad_spec_in_one_line(tmp_path):
    script = write(tmp_path, "plain.py", PLAIN)
    with pytest.raises(ConfigError, match="--apply: unknown switch"):
        validate(RunConfig(script=str(script), apply="warp_drive"))


def test_switches_are_stdlib_only_and_python39_clean():
    """They run in the user's interpreter: no core/ import, no 3.10+ syntax at run time."""
    for name in ("switches.py", "switch_module.py", "switch_checks.py"):
        text = (REPO / "core" / "runner" / name).read_text()
        assert "from core" not in text and "import core" not in text, name
        ast.parse(text, name, feature_version=(3, 9))  # the 3.9 grammar (no match, no parenthesised with)


# -- each switch really applied, seen from inside the script (CPU torch) ----------------------------------

@pytest.mark.needs_torch
@no_torch_skip
def test_every_switch_takes_inside_the_users_script(tmp_path):
    script = write(tmp_path, "facts.py", FACTS)
    out = tmp_path / "facts.json"
    apply = "pin_memory,num_workers=2,tf32,bf16_autocast,foreach,set_to_none,channels_last,cudnn_benchmark"
    s = _run(tmp_path, script, ["16", str(out)], apply)  # a loader with 2 workers: the window starts after 8
    assert s.exit_code == 0, (s.bundle.stderr_log.read_text()[-2000:])
    facts = json.loads(out.read_text())
    assert facts["pin_memory"] is True  # DataLoader(pin_memory=True)
    assert facts["num_workers"] == 2
    assert facts["foreach"] is True  # Adam(foreach=False) in the script -> defaults['foreach'] True
    assert facts["conv_cl"] is True  # the top-level module's conv weight in channels_last
    assert facts["seen"] and all(x["cl_input"] for x in facts["seen"])  # 4-D inputs too
    assert all(x["autocast"] and x["dtype"] == "torch.bfloat16" for x in facts["seen"])  # forward under autocast
    assert set(facts["out_dtypes"]) == {"torch.float32"}  # outputs cast back for the loss outside the region
    assert facts["grads_none"] and all(facts["grads_none"])  # zero_grad(set_to_none=False) -> None grads
    assert facts["tf32_matmul"] is True and facts["tf32_cudnn"] is True and facts["benchmark"] is True
    status = _status(s.bundle.root)
    assert [status[n]["status"] for n, _ in parse(apply)] == ["applied"] * 8
    assert status["num_workers"]["value"] == "2"
    run = read_json(s.bundle.run_json)
    assert run["config"]["apply"] == apply
    assert any("bf16_autocast: Net.forward under torch.autocast" in n for n in run["notices"])
    assert s.bundle.trace_files()  # the run was recorded as usual


@pytest.mark.needs_torch
@no_torch_skip
def test_fused_and_compile_take(tmp_path):
    script = write(tmp_path, "facts.py", FACTS)
    out = tmp_path / "facts.json"
    s = _run(tmp_path, script, ["5", str(out), json.dumps({"foreach": True})], "fused,compile=eager")
    assert s.exit_code == 0, (s.bundle.stderr_log.read_text()[-2000:])
    facts = json.loads(out.read_text())
    assert facts["fused"] is True and not facts["foreach"]  # foreach=True given by the script is dropped
    status = _status(s.bundle.root)
    assert status["fused"]["status"] == "applied" and "fused=True on Adam" in status["fused"]["message"]
    assert status["compile"]["status"] == "applied"
    assert "compiled frame(s)" in status["compile"]["message"] and "graph break(s)" in status["compile"]["message"]


@pytest.mark.needs_torch
@no_torch_skip
def test_flags_the_script_turns_off_are_set_again_at_the_first_step(tmp_path):
    script = write(tmp_path, "flags.py", FLAGS_OFF)
    out = tmp_path / "flags.txt"
    s = _run(tmp_path, script, ["5", str(out)], "tf32,cudnn_benchmark")
    assert s.exit_code == 0
    assert out.read_text() == "True True"
    run = read_json(s.bundle.run_json)
    assert any("turned TF32 off itself" in n for n in run["notices"])


# -- refusals: the run stops at the check step, one line, nothing silently unchanged ----------------------
@pytest.mark.needs_torch
@no_torch_skip
@pytest.mark.parametrize("apply, words", [
    ("pin_memory", "no torch.utils.data.DataLoader"),
    ("num_workers=2", "no torch.utils.data.DataLoader"),
    ("set_to_none", "already sets gradients to None"),
    ("channels_last", "has no 4-D (convolution) weights"),
    ("foreach", "already uses foreach=True"),
])
def test_a_switch_that_cannot_apply_stops_the_run(tmp_path, apply, words):
    script = write(tmp_path, "plain.py", PLAIN if apply != "foreach" else PLAIN.replace("lr=0.1", "lr=0.1, foreach=True"))
    s = _run(tmp_path, script, ["30"], apply)
    assert s.exit_code == REFUSED_EXIT
    status = _status(s.bundle.root)
    assert status[apply.partition("=")[0]]["status"] == "refused"
    assert words in status[apply.partition("=")[0]]["message"]
    assert read_json(s.bundle.run_json)["steps"] <= 3  # stopped at the check step, not after the whole loop


@pytest.mark.needs_torch
@no_torch_skip
def test_record_apply_refusal_is_one_line_exit_2(tmp_path):
    script = write(tmp_path, "plain.py", PLAIN)
    r = subprocess.run([sys.executable, "-m", "core.cli", "record", "--quiet", "--out", str(tmp_path / "b"),
                        "--apply", "pageable_memcpy", str(script), "20"], cwd=REPO, capture_output=True, text=True,
                       timeout=180)
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("ptprof:")]
    assert lines == [lines[0]] and "pin_memory cannot apply: no torch.utils.data.DataLoader" in lines[0]
    assert "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, "-m", "core.cli", "record", "--apply", "host_sync", str(script)], cwd=REPO,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "needs a code change" in r.stderr


@pytest.mark.needs_torch
@no_torch_skip
def test_compiled_frames_are_counted_whichever_counter_torch_keeps(monkeypatch):
    """torch 2.11 (the H100's) left counters['stats'] empty and counted frames['ok'] only: the compile switch was
    refused as 'no graph ran' on the device although 2 frames compiled."""
    import types

    import torch

    from core.runner.switches import Switches
    sw = Switches(torch, "compile")
    for counters, n in (({"stats": {}, "frames": {"total": 2, "ok": 2}}, 2),
                        ({"stats": {"unique_graphs": 3}, "frames": {"ok": 1}}, 3), ({}, 0)):
        monkeypatch.setitem(sys.modules, "torch._dynamo.utils", types.SimpleNamespace(counters=counters))
        assert sw._dynamo_graphs() == n
