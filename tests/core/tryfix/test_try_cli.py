"""`ptprof try` end to end on a tiny CPU script: the after run, the JSON shape, tried.json in the before bundle,
`analyze --json` reading the measured saving back, refusals before anything runs, bad input."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import no_torch_skip
from runner_scripts import write
from switch_scripts import ZERO_GRAD

from core.tryfix import plan
from core.tryfix.measure import unprofiled_steps
from core.tryfix.store import annotate, measured_for_rule, read_tried, write_tried

REPO = Path(__file__).resolve().parents[3]


def _cli(*argv, timeout=300):
    return subprocess.run([sys.executable, "-m", "core.cli", *argv], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def before(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("try")
    script = write(tmp, "zg.py", ZERO_GRAD)
    bundle = tmp / "before"
    r = _cli("record", "--quiet", "--out", str(bundle), "--wait", "2", "--warmup", "1", "--active", "4",
             str(script), "40")
    assert r.returncode == 0, r.stderr
    return bundle


@pytest.mark.needs_torch
@no_torch_skip
def test_try_set_to_none_json_shape_stored_and_read_back(before):
    r = _cli("try", str(before), "--fix", "zero_grad_not_none", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["before"] == str(before.resolve())
    (fix,) = doc["fixes"]
    for key in ("fix", "after", "predicted_saving_ns", "measured_saving_ns", "ci_ns", "p_value", "significant"):
        assert key in fix, key
    assert fix["fix"] == "set_to_none" and fix["status"] == "measured"
    after = Path(fix["after"])
    assert after == before.with_name("before.tries") / "set_to_none" and (after / "run.json").is_file()
    switches = json.loads((after / "switches.json").read_text())["switches"]
    assert switches[0]["name"] == "set_to_none" and switches[0]["status"] == "applied"
    assert isinstance(fix["measured_saving_ns"], int)
    assert fix["basis"].startswith("unprofiled") and fix["steps"][0] >= 8 and fix["steps"][1] >= 8
    assert len(fix["ci_ns"]) == 2 and fix["ci_ns"][0] <= fix["measured_saving_ns"] <= fix["ci_ns"][1]
    assert 0 <= fix["p_value"] <= 1 and isinstance(fix["significant"], bool)
    # the same script, args, interpreter, cwd and window, the switch on; the window moved to the run's end (the
    # steps compared ran before the profiler started), for the baseline run as well
    baseline = Path(fix["baseline"])
    assert baseline == before.with_name("before.tries") / "baseline" and fix["baseline_runs"] == [str(baseline)]
    run_b, run_a, run_0 = (json.loads((p / "run.json").read_text()) for p in (after, before, baseline))
    for key in ("script", "args", "python", "cwd"):
        assert run_b["config"][key] == run_a["config"][key] == run_0["config"][key], key
    for key in ("warmup", "active", "repeat"):
        assert run_b["config"]["schedule"][key] == run_a["config"]["schedule"][key], key
    assert run_b["config"]["schedule"] == run_0["config"]["schedule"]
    assert run_b["config"]["schedule"]["wait"] == 40 - 5 - 2 and run_0["config"]["apply"] == ""
    assert run_b["config"]["apply"] == "set_to_none"
    # stored in the before bundle and read back by analyze --json
    tried = read_tried(before)
    assert tried["set_to_none"]["measured_saving_ns"] == fix["measured_saving_ns"]
    r = _cli("analyze", str(before), "--json")
    assert r.returncode == 0, r.stderr
    f = next(x for x in json.loads(r.stdout)["findings"] if x["rule"] == "zero_grad_not_none")
    assert f["measured_saving_ns"] == fix["measured_saving_ns"] and f["measured_fix"] == "set_to_none"
    assert f["measured_ci_ns"] == fix["ci_ns"]
    r = _cli("analyze", str(before))
    assert "measured " in r.stdout and "ptprof try --fix set_to_none" in r.stdout


@pytest.mark.needs_torch
@no_torch_skip
def test_try_refuses_before_running_and_on_bad_input(before, tmp_path):
    r = _cli("try", str(before), "--fix", "pin_memory", "--json")  # no DataLoader (and no GPU) in this run
    assert r.returncode == 0, r.stderr
    (fix,) = json.loads(r.stdout)["fixes"]
    assert fix["status"] == "refused" and fix["measured_saving_ns"] is None and fix["after"] is None
    assert "pin_memory: the recorded run shows no torch.utils.data.DataLoader" in r.stderr
    assert "running" not in r.stderr  # said before anything runs; nothing ran
    assert not (before.with_name("before.tries") / "pin_memory").exists()
    for argv, words in ((["--fix", "host_sync"], "needs a code change"), (["--fix", "warp"], "unknown fix"),
                        ([], "give --fix"), (["--fix", "tf32", "--runs", "0"], "--runs")):
        r = _cli("try", str(before), *argv)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and words in r.stderr, (argv, r.stderr)
    r = _cli("try", str(tmp_path), "--fix", "tf32")
    assert r.returncode == 2 and "not a ptprof run bundle" in r.stderr
    r = _cli("try", str(before), "--all")  # a CPU run: no finding a switch fixes with a what-if on CPU
    assert r.returncode in (0, 2) and "Traceback" not in r.stderr


@pytest.mark.needs_torch
@no_torch_skip
def test_unprofiled_steps_and_after_config(before):
    steps = unprofiled_steps(before)
    run = json.loads((before / "run.json").read_text())
    # 40 steps: step 1 is start, wait 2 (the first dropped), then the window: steps after it are not clean
    assert len(steps) == 1 and (steps > 0).all()
    b = plan.load_before(before)
    late = plan.timing_schedule(b)
    assert (late.wait, late.warmup, late.active, late.repeat) == (33, 1, 4, 1)
    cfg = plan.after_config(b, "set_to_none", before.parent / "x")
    assert cfg.apply == "set_to_none" and cfg.script == run["config"]["script"]
    assert cfg.args == tuple(run["config"]["args"]) and cfg.schedule.active == 4 and cfg.schedule.wait == 2
    assert plan.precheck(b, "channels_last") == "channels_last: the recorded run has no convolution"
    assert plan.precheck(b, "set_to_none") is None


def test_tried_json_round_trip_and_annotation(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps({"format": "ptprof-run/1"}))
    write_tried(tmp_path, "pin_memory", {"rules": ["pageable_memcpy"], "measured_saving_ns": 3_900_000,
                                         "ci_ns": [3_000_000, 4_500_000], "p_value": 0.004, "significant": True,
                                         "predicted_saving_ns": 4_300_000, "measured_pct": 14.0})
    write_tried(tmp_path, "pin_memory,tf32", {"measured_saving_ns": 9_000_000})
    tried = read_tried(tmp_path)
    assert set(tried) == {"pin_memory", "pin_memory,tf32"}
    assert measured_for_rule(tried, "pageable_memcpy")[0] == "pin_memory"  # its own fix, not the combination
    assert measured_for_rule(tried, "host_sync") is None
    findings = annotate([{"rule": "pageable_memcpy"}, {"rule": "host_sync"}], tried)
    assert findings[0]["measured_saving_ns"] == 3_900_000 and findings[0]["measured_ci_ns"] == [3_000_000, 4_500_000]
    assert "measured_saving_ns" not in findings[1]
    # hostile tried.json: wrong types are dropped, never a crash
    (tmp_path / "tried.json").write_text(json.dumps({"format": "ptprof-tried/1", "fixes": {
        "tf32": {"measured_saving_ns": "lots", "ci_ns": [1, "x"], "significant": "yes"}, "x": [1]}}))
    tried = read_tried(tmp_path)
    assert tried["tf32"]["measured_saving_ns"] is None and tried["tf32"]["ci_ns"] is None
    assert "x" not in tried
    (tmp_path / "tried.json").write_text("[" * 100000)
    assert read_tried(tmp_path) == {}


def test_runs_interleave_baseline_and_fixes_and_the_table(tmp_path):
    from core.commands.tryfix import text, verdict
    from core.tryfix.session import plan_runs
    b = plan.Before(tmp_path / "run", {"config": {"script": "x.py"}, "steps": 100})
    runs = plan_runs(b, ["pin_memory", "tf32"], 2)
    assert [(r.spec, r.run, r.out.name) for r in runs] == [
        ("", 1, "baseline"), ("pin_memory", 1, "pin_memory"), ("tf32", 1, "tf32"),
        ("", 2, "baseline-2"), ("pin_memory", 2, "pin_memory-2"), ("tf32", 2, "tf32-2")]
    assert all(r.out.parent == tmp_path / "run.tries" for r in runs)
    e = {"fix": "pin_memory", "predicted_saving_ns": 4_300_000, "predicted_pct": 15.0, "measured_saving_ns": 3_900_000,
         "measured_pct": 14.0, "p_value": 0.004, "ci_ns": [3_000_000, 4_500_000], "significant": True,
         "status": "measured", "steps": [190, 190], "basis": "unprofiled steps", "message": ""}
    assert verdict(e) == "predicted -4.30 ms/step (-15.0 %), measured -3.90 ms/step (-14.0 %, p = 0.004)"
    refused = {"fix": "tf32", "predicted_saving_ns": None, "measured_saving_ns": None, "status": "refused",
               "message": "no GPU", "significant": None, "ci_ns": None}
    out = text([e, refused], table=True)
    assert "FIX" in out and "PREDICTED" in out and "refused" in out and "tf32: no prediction" in out


def test_switches_json_hostile(tmp_path):
    from core.tryfix.store import read_switches
    (tmp_path / "switches.json").write_text(json.dumps({"switches": [{"name": 3}, "x", {"name": "tf32", "status": "applied",
                                                                                      "message": "ok", "value": 5}]}))
    assert read_switches(tmp_path) == [{"name": "tf32", "value": None, "status": "applied", "message": "ok"}]
    (tmp_path / "switches.json").write_text("{" * 50000)
    assert read_switches(tmp_path) == []
