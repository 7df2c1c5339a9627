"""Interpreter check and `ptprof record` end to end (CPU torch)."""
from __future__ import annotations

import json
import sys

import pytest
from runner_scripts import SYNTAX_ERROR, write

from core.cli import main
from core.runner import doctor
from core.runner.bundle import read_json
from core.runner.protocol import read_events

REPO_EXAMPLE = __import__("pathlib").Path(__file__).resolve().parents[3] / "resources" / "examples" / "train_small.py"


def test_doctor_reports_on_this_interpreter():
    pytest.importorskip("torch")
    r = doctor.check(sys.executable)
    assert r.ok and r.facts["torch_version"].startswith("2.")
    text = " ".join(m[1] for m in r.messages)
    assert "torch " + r.facts["torch_version"] in text
    if not r.facts["cuda_available"]:
        assert any(level == "warning" and m.startswith("CUDA not available: running on CPU") for level, m in r.messages)


def test_doctor_missing_interpreter_and_no_torch(tmp_path):
    r = doctor.check(str(tmp_path / "venv" / "bin" / "python"))
    assert not r.ok and r.messages[0][1].startswith("interpreter not found")
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\nexec {sys.executable} -S -I \"$@\"\n")  # no site-packages -> no torch
    fake.chmod(0o755)
    r = doctor.check(str(fake))
    assert not r.ok and r.messages[0][1].startswith("torch not installed in ")


@pytest.mark.needs_torch
def test_record_example_cli(tmp_path, capsys):
    pytest.importorskip("torch")
    out = tmp_path / "bundle"
    code = main(["record", "--out", str(out), "--wait", "1", "--warmup", "1", "--active", "2",
                 str(REPO_EXAMPLE), "--steps", "6", "--device", "cpu"])
    assert code == 0
    err = capsys.readouterr().err
    assert f"ptprof info {out}" in err
    events = read_events(str(out / "events.jsonl"))
    steps = [e for e in events if e["type"] == "step"]
    assert len(steps) == 6 and all(e["dur_ns"] > 0 for e in steps)
    assert events[-1] == {**events[-1], "type": "end", "exit_code": 0}
    assert read_json(out / "run.json")["exit_code"] == 0
    assert main(["info", str(out), "--json", "--no-cache"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["steps"] == 2 and info["cpu_ops"] > 100


def test_record_bad_input_is_one_line(tmp_path, capsys):
    assert main(["record", str(tmp_path / "missing.py")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "script not found" in err
    script = write(tmp_path, "s.py", "print(1)\n")
    assert main(["record", "--python", str(tmp_path / "nopython"), str(script)]) == 2
    assert "interpreter not found" in capsys.readouterr().err


@pytest.mark.needs_torch
def test_record_failing_script_exit_code(tmp_path, capsys):
    pytest.importorskip("torch")
    script = write(tmp_path, "bad.py", SYNTAX_ERROR)
    code = main(["record", "--quiet", "--out", str(tmp_path / "b"), str(script)])
    assert code == 2  # bad input
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("ptprof: SyntaxError: ") and "bad.py, line" in last


@pytest.mark.needs_torch
def test_record_with_an_interpreter_without_torch_is_one_line_exit_2(tmp_path, capsys):
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\nexec {sys.executable} -S -I \"$@\"\n")  # no site-packages -> no torch
    fake.chmod(0o755)
    script = write(tmp_path, "s.py", "print(1)\n")
    code = main(["record", "--quiet", "--python", str(fake), "--out", str(tmp_path / "b"), str(script)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1].startswith("ptprof: torch not installed in ") and "--python" in err[-1]
    assert not any("Traceback" in line for line in err)


def test_record_with_an_interpreter_that_never_starts_the_script(tmp_path, capsys):
    script = write(tmp_path, "s.py", "print(1)\n")
    code = main(["record", "--quiet", "--python", "/bin/true", "--out", str(tmp_path / "b"), str(script)])
    assert code == 2
    assert "did not start the script" in capsys.readouterr().err.strip().splitlines()[-1]
