"""RunDialog: config from widgets, one-line errors, per-script settings, interpreter check in a worker."""
from __future__ import annotations

import sys

import pytest
from PySide6 import QtCore

from gui.run import dialog as dlg_mod
from gui.run.dialog import RunDialog


@pytest.fixture(autouse=True)
def _settings(tmp_path):
    QtCore.QSettings.setDefaultFormat(QtCore.QSettings.Format.IniFormat)
    QtCore.QSettings.setPath(QtCore.QSettings.Format.IniFormat, QtCore.QSettings.Scope.UserScope, str(tmp_path))
    yield


def test_defaults_and_config(qtbot, tmp_path):
    script = tmp_path / "train.py"
    script.write_text("print(1)\n")
    d = RunDialog(script=str(script))
    qtbot.addWidget(d)
    assert d.python.currentText() == sys.executable
    from core.runner.config import Schedule
    default = Schedule()
    assert (d.wait.value(), d.warmup.value(), d.active.value(), d.repeat.value()) == \
        (default.wait, default.warmup, default.active, default.repeat)  # the dialog opens on the CLI's schedule
    d.args.setText("--lr 0.1 --name 'a b'")
    d.env.setPlainText("CUDA_VISIBLE_DEVICES=0\n\nFOO=bar=baz")
    d.with_stack.setChecked(True)
    d.nproc.setValue(2)
    cfg = d.validated_config()
    assert cfg.args == ("--lr", "0.1", "--name", "a b")
    assert dict(cfg.env) == {"CUDA_VISIBLE_DEVICES": "0", "FOO": "bar=baz"}
    assert cfg.with_stack and cfg.torchrun and cfg.cwd == str(tmp_path)


def test_bad_input_keeps_the_dialog_open_with_one_line(qtbot, tmp_path):
    d = RunDialog(script=str(tmp_path / "missing.py"))
    qtbot.addWidget(d)
    d.accept()
    assert d.result() == 0 and d.accepted_config is None
    assert d.error.text().startswith("script not found")
    script = tmp_path / "s.py"
    script.write_text("")
    d.script.setText(str(script))
    d.python.setCurrentText(str(tmp_path / "venv/bin/python"))
    d.accept()
    assert d.error.text().startswith("interpreter not found")


def test_settings_are_remembered_per_script(qtbot, tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("")
    b.write_text("")
    d = RunDialog(script=str(a))
    qtbot.addWidget(d)
    d.args.setText("--epochs 2")
    d.active.setValue(7)
    d.profile_memory.setChecked(False)
    d.nvml_hz.setValue(25.0)
    with qtbot.waitSignal(d.accepted, timeout=60_000):  # after the automatic interpreter check
        d.accept()
    assert d.accepted_config is not None and d.accepted_config.schedule.active == 7
    assert d.accepted_doctor is not None and d.accepted_doctor["ok"]  # goes into run.json
    again = RunDialog(script=str(a))
    qtbot.addWidget(again)
    assert again.args.text() == "--epochs 2" and again.active.value() == 7 and not again.profile_memory.isChecked()
    assert d.accepted_config.nvml_hz == 25.0 and again.nvml_hz.value() == 25.0
    other = RunDialog(script=str(b))
    qtbot.addWidget(other)
    from core.runner.config import Schedule
    assert other.args.text() == "" and other.active.value() == Schedule().active >= 4  # issue 31: 5 by default


def test_check_interpreter_runs_in_a_worker(qtbot, tmp_path):
    pytest.importorskip("torch")
    d = RunDialog()
    qtbot.addWidget(d)
    with qtbot.waitSignal(d.sig_doctor_finished, timeout=60_000) as done:
        d.check_button.click()
        assert not d.check_button.isEnabled()  # the UI thread is free while it runs
    assert done.args[0].ok and "torch" in d.doctor_label.text()
    d.python.setCurrentText(str(tmp_path / "nope" / "python"))
    with qtbot.waitSignal(d.sig_doctor_finished, timeout=10_000):
        d.check_button.click()
    assert "interpreter not found" in d.doctor_label.text()


def test_stacks_with_compile_get_a_size_warning(qtbot, tmp_path):
    script = tmp_path / "c.py"
    script.write_text("import torch\nmodel = torch.compile(model)\n")
    d = RunDialog(script=str(script))
    qtbot.addWidget(d)
    assert d.advice.text() == ""
    d.with_stack.setChecked(True)
    assert "several GB" in d.advice.text()
    d.with_stack.setChecked(False)
    assert d.advice.text() == ""


def test_run_checks_the_interpreter_first_and_refuses_one_without_torch(qtbot, tmp_path):
    script = tmp_path / "s.py"
    script.write_text("")
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\nexec {sys.executable} -S -I \"$@\"\n")  # no site-packages -> no torch
    fake.chmod(0o755)
    d = RunDialog(script=str(script))
    qtbot.addWidget(d)
    d.python.setCurrentText(str(fake))
    with qtbot.waitSignal(d.sig_doctor_finished, timeout=60_000):
        d.accept()
    assert d.result() == 0 and d.accepted_config is None  # still open: nothing was launched
    assert d.error.text().startswith("cannot run with this interpreter: torch not installed in")
    assert d.run_button.isEnabled()


@pytest.mark.parametrize("answer", [True, False])
def test_a_non_empty_output_folder_is_never_written_into(qtbot, tmp_path, monkeypatch, answer):
    """The dialog asks (answered here: no modal box in tests) to record into a new subfolder instead."""
    script = tmp_path / "train.py"
    script.write_text("print(1)\n")
    user = tmp_path / "work"
    (user / "traces").mkdir(parents=True)
    (user / "traces" / "weights.bin").write_bytes(b"w")
    d = RunDialog(script=str(script))
    qtbot.addWidget(d)
    asked = []
    monkeypatch.setattr(d, "ask_subfolder", lambda folder, sub: asked.append((folder, sub)) or answer)
    monkeypatch.setattr(d, "_start_check", lambda python, compile_test: None)  # the interpreter check is not tested here
    d.out_dir.setText(str(user))
    d.accept()
    assert asked and asked[0][0] == user and asked[0][1].parent == user and not asked[0][1].exists()
    if answer:
        assert d.out_dir.text() == str(asked[0][1]) and d.error.text() == ""
    else:
        assert "not empty and not a ptprof run bundle" in d.error.text()
    assert sorted(p.name for p in user.rglob("*")) == ["traces", "weights.bin"]


def test_module_mode_and_stop_after_window(qtbot, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    d = RunDialog()
    qtbot.addWidget(d)
    d.kind.setCurrentIndex(1)
    assert d.script.placeholderText() == "package.train"
    d.script.setText("pkg.train")
    d.args.setText("--steps 3")
    d.stop_after_window.setChecked(True)
    cfg = d.validated_config()
    assert cfg.module == "pkg.train" and cfg.script == "" and cfg.args == ("--steps", "3")
    assert cfg.stop_after_window and cfg.cwd == str(tmp_path) and cfg.target == "-m pkg.train"
    d.save_settings(cfg)
    d2 = RunDialog()
    qtbot.addWidget(d2)
    assert d2.load_settings("-m pkg.train")
    assert d2.module_mode and d2.script.text() == "pkg.train" and d2.stop_after_window.isChecked()
    d.script.setText("not a module!")
    with pytest.raises(dlg_mod.ConfigError, match="not a module name"):
        d.validated_config()
