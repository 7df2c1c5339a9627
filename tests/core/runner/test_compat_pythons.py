"""The runner's child under every Python a user may train with (3.9, 3.10, 3.12, 3.13), with the fake torch
of tests/fake_torch: compiles and imports, records end to end (steps, windows, cycles, stop), refuses a
too-old Python or torch with one line, says which features an older torch lacks. Skips, saying which, when an
interpreter is not on this machine. The same checks run as `python tests/compat_job.py` in .ci/run."""
from __future__ import annotations

import ast

import compat_job as job
import pytest

from core.runner import compat, doctor


def _python(version: str) -> str:
    exe, why = job.find_python(version)
    if exe is None:
        pytest.skip(why)
    return exe


@pytest.mark.parametrize("version", job.VERSIONS)
def test_child_modules_compile_and_import(version):
    out = job.compile_and_import(_python(version))
    assert out["python"].startswith(version + ".")
    assert {"child.py", "guards.py", "protocol.py", "stepsource.py", "compat.py", "start.py"} <= set(out["compiled"])
    assert out["features"]["step_detection"]["on"] is True


@pytest.mark.parametrize("version", job.VERSIONS)
@pytest.mark.parametrize("check", [job.check_optimizer, job.check_backward, job.check_inference, job.check_stop],
                         ids=lambda c: c.__name__[len("check_"):])
def test_child_end_to_end_with_fake_torch(version, check, tmp_path):
    assert check(_python(version), tmp_path)


@pytest.mark.parametrize("check", [job.check_legacy, job.check_old_torch], ids=["torch_2_1_like", "torch_2_0"])
def test_older_torch_on_oldest_python(check, tmp_path):
    assert check(_python("3.9"), tmp_path)


@pytest.mark.parametrize("version", ["3.8", "3.7", "3.6", "2.7"])
def test_too_old_python_gets_one_line(version, tmp_path):
    assert job.check_old_python(_python(version), tmp_path)


def test_start_gate_agrees_with_compat_and_compiles_on_python2():
    tree = ast.parse((job.RUNNER / "start.py").read_text())
    gate = next(n.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "MIN_PYTHON")
    assert ast.literal_eval(gate) == compat.MIN_PYTHON
    assert "f\"" not in (job.RUNNER / "start.py").read_text()  # no f-strings: it must compile on any Python


def test_compat_probes_on_a_bare_module():
    """An object without any of the APIs (a torch far too old or broken): every probe answers, nothing raises."""
    class Bare:
        __version__ = "1.13.1"
    feats = compat.features(Bare, cuda=True)
    assert feats["step_detection"]["on"] is False and "1.13.1" in feats["step_detection"]["why"]
    assert compat.too_old(Bare).startswith("torch 1.13.1")
    assert compat.too_old(Bare, python=(3, 8, 1)).startswith("Python 3.8.1")
    assert compat.version_tuple("2.6.0a0+git12") == (2, 6) and compat.version_tuple("junk") == (0, 0)
    assert compat.experimental_config(None, {"verbose": True}) == (None, ["verbose"])
    assert compat.features_or_why(None)["step_detection"]["on"] is False  # even a non-module answers
    events = []
    emit = lambda kind, **f: events.append((kind, f))  # noqa: E731
    compat.announce(emit, feats)
    assert [f["feature"] for _, f in events] == [n for n, f in feats.items() if f["on"] is False]
    events.clear()
    assert compat.refuse_if_too_old(Bare, emit) and [k for k, _ in events] == ["exception", "end"]
    assert events[1][1]["exit_code"] == 2 and "too old for ptprof's runner" in events[0][1]["message"]
    events.clear()
    compat.each_or_notice(emit, works=lambda: None, broken=lambda: Bare.missing_api)
    assert [(k, f["feature"], f["message"][:22]) for k, f in events] == [("notice", "broken", "broken off - Attribute")]
    assert [n for n, _ in compat.off_notices(feats)] == [n for n, f in feats.items() if f["on"] is False]


@pytest.mark.parametrize("version", ["3.9", "3.13"])
def test_doctor_reports_features_of_another_python(version, monkeypatch):
    """The Run dialog's interpreter check on an interpreter with the fake torch: Python / torch versions and
    which ptprof features work."""
    exe = _python(version)
    monkeypatch.setenv("PYTHONPATH", str(job.FAKE_TORCH))
    monkeypatch.setenv("FAKE_TORCH_LEGACY", "1")
    r = doctor.check(exe)
    text = [m for _, m in r.messages]
    assert r.ok and r.facts["python_version"].startswith(version + ".") and r.facts["torch_version"] == "2.1.0+fake"
    assert any(m.startswith(f"Python {r.facts['python_version']} · torch 2.1.0+fake") for m in text), text
    assert any(m.startswith("ptprof features: step detection") and "CUDA only" in m for m in text), text


def test_doctor_refuses_too_old_python(tmp_path):
    exe = None
    for version in ("3.8", "3.7", "3.6", "2.7"):
        exe, _ = job.find_python(version)
        if exe:
            break
    if exe is None:
        pytest.skip("no Python older than 3.9 on this machine (python3.8 / 3.7 / 3.6 / 2.7)")
    r = doctor.check(exe)
    assert not r.ok and r.messages[0][0] == "error" and "too old for ptprof's runner" in r.messages[0][1], r.messages
