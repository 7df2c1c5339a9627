"""RunDialog: what to run and how (script, args, interpreter, cwd, env, schedule, options, output, nproc).

    dlg = RunDialog(parent, script="train.py")
    if dlg.exec():
        cfg = dlg.validated_config()          # core.runner.config.RunConfig, paths resolved

Settings are remembered per script (QSettings). "Check interpreter" runs core.runner.doctor in a
worker thread against the chosen Python (usually the user's training venv, not the app's).
"""
from __future__ import annotations

import hashlib
import json
import shlex
import sys
from pathlib import Path

import shiboken6
from PySide6 import QtCore, QtWidgets
from superqt.utils import create_worker

from core.runner import bundle as bundle_mod, doctor
from core.runner.config import ConfigError, RunConfig, Schedule, advice, validate
from gui.remote.host_row import RemoteRunMixin
from gui.settings import settings, string, string_list

STACK_NOTE = ("Python stacks give exact source lines for findings but multiply the trace size "
              "(GBs around torch.compile): keep the active window short.")


def _script_key(script: str) -> str:
    """Settings key of a script path, or of "-m MODULE" (a module is remembered by its name)."""
    name = script if script.startswith("-m ") else str(Path(script).expanduser().resolve())
    return "run/scripts/" + hashlib.sha1(name.encode()).hexdigest()[:16]


class RunDialog(RemoteRunMixin, QtWidgets.QDialog):
    sig_doctor_finished = QtCore.Signal(object)  # core.runner.doctor.DoctorReport

    def __init__(self, parent: QtWidgets.QWidget | None = None, script: str = ""):
        super().__init__(parent)
        self.setWindowTitle("Run script under the profiler")
        self.setMinimumWidth(720)
        self._worker = None
        self._config: RunConfig | None = None
        self.doctor_report: doctor.DoctorReport | None = None  # the last check, kept for run.json
        self._pending: RunConfig | None = None  # Run pressed, waiting for the interpreter check
        form = QtWidgets.QFormLayout()
        self._add_host_row(form)  # This computer or an SSH host (gui/remote/host_row.py)
        self.script = QtWidgets.QLineEdit(self)
        self.script.setPlaceholderText("train.py")
        self.script.editingFinished.connect(self._on_script_editing_finished)
        self.kind = QtWidgets.QComboBox(self)
        self.kind.addItems(["Script", "Module"])
        self.kind.setToolTip("Module: run it like `python -m package.train` (working dir on sys.path, "
                             "relative imports work)")
        self.kind.currentIndexChanged.connect(self._on_kind_changed)
        target = self._with_browse(self.script, self._browse_script)
        target.layout().insertWidget(0, self.kind)
        form.addRow("Run", target)
        self.args = QtWidgets.QLineEdit(self)
        self.args.setPlaceholderText("--epochs 1 --batch-size 64   (as in a shell)")
        form.addRow("Arguments", self.args)
        self.python = QtWidgets.QComboBox(self)
        self.python.setEditable(True)
        self.python.setInsertPolicy(QtWidgets.QComboBox.InsertPolicy.NoInsert)
        known = [sys.executable] + [p for p in string_list("run/interpreters") if p != sys.executable]
        self.python.addItems(known)
        self.check_button = QtWidgets.QPushButton("Check interpreter", self)
        self.check_button.clicked.connect(self._on_check_clicked)
        self.compile_check = QtWidgets.QCheckBox("with torch.compile test", self)
        row = self._with_browse(self.python, self._browse_python)
        row.layout().addWidget(self.check_button)
        form.addRow("Python", row)
        self.doctor_label = QtWidgets.QLabel("", self)
        self.doctor_label.setWordWrap(True)
        self.doctor_label.setTextFormat(QtCore.Qt.TextFormat.RichText)
        form.addRow("", self.compile_check)
        form.addRow("", self.doctor_label)
        self.cwd = QtWidgets.QLineEdit(self)
        self.cwd.setPlaceholderText("the script's folder")
        form.addRow("Working dir", self._with_browse(self.cwd, lambda: self._browse_dir(self.cwd)))
        self.env = QtWidgets.QPlainTextEdit(self)
        self.env.setPlaceholderText("KEY=VALUE, one per line")
        self.env.setFixedHeight(56)
        form.addRow("Environment", self.env)
        sched = QtWidgets.QHBoxLayout()
        d = Schedule()  # the default schedule of `ptprof record` (core/runner/config.py)
        self.wait, self.warmup, self.active, self.repeat = (self._spin(v, lo) for v, lo in
                                                            ((d.wait, 0), (d.warmup, 0), (d.active, 1), (d.repeat, 0)))
        for spin in (self.wait, self.warmup, self.active, self.repeat):
            spin.setToolTip("counted in optimizer steps, from the first one (setup and compilation are skipped)")
        for label, spin in (("wait", self.wait), ("warmup", self.warmup), ("active", self.active),
                            ("repeat", self.repeat)):
            sched.addWidget(QtWidgets.QLabel(label, self))
            sched.addWidget(spin)
        sched.addStretch(1)
        form.addRow("Schedule (steps)", sched)
        self.record_shapes = QtWidgets.QCheckBox("shapes", self)
        self.record_shapes.setChecked(True)
        self.profile_memory = QtWidgets.QCheckBox("memory", self)
        self.profile_memory.setChecked(True)
        self.with_stack = QtWidgets.QCheckBox("Python stacks", self)
        self.sync_debug = QtWidgets.QCheckBox("host-sync lines (CUDA)", self)
        self.sync_debug.setChecked(True)
        self.sync_debug.setToolTip("torch.cuda.set_sync_debug_mode('warn'): the source line of every implicit "
                                   "host sync (.item(), .cpu(), masks, pageable copies), reported once per line")
        opts = QtWidgets.QHBoxLayout()
        for w in (self.record_shapes, self.profile_memory, self.with_stack, self.sync_debug):
            opts.addWidget(w)
        opts.addStretch(1)
        form.addRow("Profiler", opts)
        note = QtWidgets.QLabel(STACK_NOTE, self)
        note.setWordWrap(True)
        note.setStyleSheet("color: gray; font-size: small;")
        form.addRow("", note)
        self.out_dir = QtWidgets.QLineEdit(self)
        self.out_dir.setPlaceholderText("~/ptprof-runs/<script>-<time>")
        form.addRow("Output folder", self._with_browse(self.out_dir, lambda: self._browse_dir(self.out_dir)))
        self.nproc = self._spin(1, 1, 64)
        self.torchrun = QtWidgets.QCheckBox("through torchrun even for 1", self)
        procs = QtWidgets.QHBoxLayout()
        procs.addWidget(self.nproc)
        procs.addWidget(self.torchrun)
        procs.addStretch(1)
        form.addRow("Processes per node", procs)
        self.stop_after_window = QtWidgets.QCheckBox("Stop the script when profiling is done", self)
        self.stop_after_window.setToolTip("after the last trace cycle is saved, stop the script as Stop does "
                                          "(for long training runs)")
        form.addRow("", self.stop_after_window)
        self.memory_history = QtWidgets.QCheckBox("Record allocator history", self)
        self.memory_history.setToolTip("torch.cuda.memory._record_memory_history: the stack of every CUDA "
                                       "allocation, saved as memory.snapshot.pickle at the end of the last window "
                                       "(an OOM is caught and snapshotted with or without it)")
        form.addRow("Memory", self.memory_history)
        self.nvml_hz = QtWidgets.QDoubleSpinBox(self)
        self.nvml_hz.setRange(0.5, 100.0)
        self.nvml_hz.setDecimals(1)
        self.nvml_hz.setValue(10.0)
        self.nvml_hz.setSuffix(" Hz")
        self.nvml_hz.setToolTip("how often NVML is read for the live GPU plots and nvml.csv (10 Hz cost 0.5 % of "
                                "one core on the H200 host; NVML's utilisation counters update every ~17-170 ms)")
        form.addRow("GPU sampling", self.nvml_hz)
        self.advice = QtWidgets.QLabel("", self)
        self.advice.setStyleSheet("color: #d08b00;")
        self.advice.setWordWrap(True)
        for w in (self.with_stack, self.repeat):
            (w.toggled if isinstance(w, QtWidgets.QCheckBox) else w.valueChanged).connect(self._on_options_changed)
        self.script.textChanged.connect(self._on_options_changed)
        self.error = QtWidgets.QLabel("", self)
        self.error.setStyleSheet("color: #d9534f;")
        self.error.setWordWrap(True)
        buttons = QtWidgets.QDialogButtonBox(QtWidgets.QDialogButtonBox.StandardButton.Ok |
                                             QtWidgets.QDialogButtonBox.StandardButton.Cancel, self)
        self.run_button = buttons.button(QtWidgets.QDialogButtonBox.StandardButton.Ok)
        self.run_button.setText("Run")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        lay = QtWidgets.QVBoxLayout(self)
        lay.addLayout(form)
        lay.addWidget(self.advice)
        lay.addWidget(self.error)
        lay.addWidget(buttons)
        if script:
            self.script.setText(script)
            self.load_settings(script)

    # -- helpers ---------------------------------------------------------------------------------
    def _spin(self, value: int, lo: int = 0, hi: int = 100_000) -> QtWidgets.QSpinBox:
        s = QtWidgets.QSpinBox(self)
        s.setRange(lo, hi)
        s.setValue(value)
        return s

    def _with_browse(self, field: QtWidgets.QWidget, browse) -> QtWidgets.QWidget:
        w = QtWidgets.QWidget(self)
        h = QtWidgets.QHBoxLayout(w)
        h.setContentsMargins(0, 0, 0, 0)
        h.addWidget(field, 1)
        b = QtWidgets.QPushButton("…", w)
        b.setFixedWidth(32)
        b.clicked.connect(browse)
        h.addWidget(b)
        return w

    @property
    def module_mode(self) -> bool:
        return self.kind.currentIndex() == 1

    def _on_kind_changed(self, *_) -> None:
        module = self.module_mode
        self.script.setPlaceholderText("package.train" if module else "train.py")
        self.cwd.setPlaceholderText("the current folder (on sys.path, as python -m)" if module else "the script's folder")
        self._on_options_changed()

    def _browse_script(self) -> None:
        if self.module_mode or self._browse_remote(self.script, "file"):
            return
        path, _ = QtWidgets.QFileDialog.getOpenFileName(self, "Training script", "", "Python (*.py);;All files (*)")
        if path:
            self.script.setText(path)
            self.load_settings(path)

    def _browse_python(self) -> None:
        if self._browse_remote(self.python.lineEdit(), "file"):
            return
        path, _ = QtWidgets.QFileDialog.getOpenFileName(self, "Python interpreter (e.g. venv/bin/python)")
        if path:
            self.python.setCurrentText(path)

    def _browse_dir(self, field: QtWidgets.QLineEdit) -> None:
        if field is self.cwd and self._browse_remote(field, "dir"):
            return
        path = QtWidgets.QFileDialog.getExistingDirectory(self, "Folder")
        if path:
            field.setText(path)

    def _on_options_changed(self, *_) -> None:
        try:
            notes = advice(self.config())
        except ConfigError:
            notes = []
        self.advice.setText("\n".join(notes))

    def _on_script_editing_finished(self) -> None:
        if self.script.text().strip():
            self.load_settings(("-m " if self.module_mode else "") + self.script.text().strip())

    # -- config <-> widgets ----------------------------------------------------------------------
    def config(self) -> RunConfig:
        """The config as typed (ConfigError for unparsable arguments / environment lines)."""
        try:
            args = tuple(shlex.split(self.args.text()))
        except ValueError as exc:
            raise ConfigError(f"arguments: {exc}") from None
        env = []
        for line in self.env.toPlainText().splitlines():
            if not line.strip():
                continue
            key, sep, value = line.strip().partition("=")
            if not sep:
                raise ConfigError(f"environment line is not KEY=VALUE: {line.strip()!r}")
            env.append((key.strip(), value))
        target = self.script.text().strip()
        return RunConfig(script="" if self.module_mode else target, module=target if self.module_mode else "",
                         stop_after_window=self.stop_after_window.isChecked(),
                         args=args, python=self.python.currentText().strip(),
                         cwd=self.cwd.text().strip(), env=tuple(env),
                         schedule=Schedule(self.wait.value(), self.warmup.value(), self.active.value(),
                                           self.repeat.value()),
                         record_shapes=self.record_shapes.isChecked(), profile_memory=self.profile_memory.isChecked(),
                         with_stack=self.with_stack.isChecked(), sync_debug=self.sync_debug.isChecked(),
                         out_dir=self.out_dir.text().strip(),
                         nproc=self.nproc.value(), use_torchrun=self.torchrun.isChecked(),
                         nvml_hz=float(self.nvml_hz.value()), memory_history=self.memory_history.isChecked())

    def set_config(self, d: dict) -> None:
        """Fill the widgets from a RunConfig.to_dict()-like dict (remembered settings)."""
        self.args.setText(shlex.join(d.get("args", [])))
        if d.get("module"):
            self.kind.setCurrentIndex(1)
            self.script.setText(d["module"])
        self.stop_after_window.setChecked(bool(d.get("stop_after_window", False)))
        if d.get("python"):
            self.python.setCurrentText(d["python"])
        self.cwd.setText(d.get("cwd_typed", ""))
        self.env.setPlainText("\n".join(f"{k}={v}" for k, v in d.get("env", {}).items()))
        s = d.get("schedule", {})
        for spin, key in ((self.wait, "wait"), (self.warmup, "warmup"), (self.active, "active"), (self.repeat, "repeat")):
            if key in s:
                spin.setValue(int(s[key]))
        self.record_shapes.setChecked(bool(d.get("record_shapes", True)))
        self.profile_memory.setChecked(bool(d.get("profile_memory", True)))
        self.with_stack.setChecked(bool(d.get("with_stack", False)))
        self.sync_debug.setChecked(bool(d.get("sync_debug", True)))
        self.out_dir.setText(d.get("out_dir", ""))
        self.nproc.setValue(int(d.get("nproc", 1)))
        self.torchrun.setChecked(bool(d.get("use_torchrun", False)))
        self.nvml_hz.setValue(float(d.get("nvml_hz", 10.0)))
        self.memory_history.setChecked(bool(d.get("memory_history", False)))

    def load_settings(self, script: str) -> bool:
        raw = string(_script_key(script))
        if not raw:
            return False
        try:
            self.set_config(json.loads(raw))
        except (ValueError, TypeError):
            return False
        return True

    def save_settings(self, cfg: RunConfig) -> None:
        d = cfg.to_dict()
        d.update(cwd_typed=self.cwd.text().strip(), out_dir="", use_torchrun=cfg.use_torchrun)
        s = settings()
        s.setValue(_script_key(cfg.target), json.dumps(d))
        interpreters = [cfg.python] + [p for p in string_list("run/interpreters", s) if p != cfg.python]
        s.setValue("run/interpreters", interpreters[:10])

    def validated_config(self) -> RunConfig:
        """Valid config or ConfigError (one line)."""
        return validate(self.config())

    def accept(self) -> None:
        """Run: validate, check the interpreter (in a worker, unless this Python was just checked),
        and close only when it can run the script - a missing torch is said here, not after a launch."""
        if self.host_row.host_text():
            return self._accept_remote()
        try:
            cfg = self._output_folder_answered(self.config())
            if cfg is None:
                return
            cfg = validate(cfg)
        except ConfigError as exc:
            self.error.setText(str(exc))
            return
        r = self.doctor_report
        if r is None or r.python != cfg.python:
            self._pending = cfg
            self.error.setText("")
            self.run_button.setEnabled(False)
            self._start_check(cfg.python, compile_test=False)
            return
        self._finish_accept(cfg, r)

    def _output_folder_answered(self, cfg: RunConfig) -> RunConfig | None:
        """A non-empty output folder that is not one of our bundles is never written into: ask whether
        to record into a new subfolder of it instead (None when the user says no)."""
        out = Path(cfg.out_dir).expanduser() if cfg.out_dir else None
        if out is None or not out.is_dir() or bundle_mod.out_dir_problem(out) is None:
            return cfg
        sub = bundle_mod.default_dir(cfg.script or "run", root=out)
        if not self.ask_subfolder(out, sub):
            self.error.setText(f"output folder is not empty and not a ptprof run bundle: {out}")
            return None
        self.out_dir.setText(str(sub))
        return cfg.with_(out_dir=str(sub))

    def ask_subfolder(self, folder: Path, sub: Path) -> bool:
        """The question itself (tests replace this method: no modal box nothing answers)."""
        answer = QtWidgets.QMessageBox.question(
            self, "Output folder is not empty",
            f"{folder} already holds files that ptprof did not write; ptprof never deletes or overwrites them."
            f"\n\nRecord into a new subfolder instead?\n{sub}",
            QtWidgets.QMessageBox.StandardButton.Yes | QtWidgets.QMessageBox.StandardButton.Cancel,
            QtWidgets.QMessageBox.StandardButton.Yes)
        return answer == QtWidgets.QMessageBox.StandardButton.Yes

    def _finish_accept(self, cfg: RunConfig, report: doctor.DoctorReport) -> None:
        if not report.ok:
            errors = [text for level, text in report.messages if level == "error"]
            self.error.setText(f"cannot run with this interpreter: {errors[0] if errors else 'check failed'}")
            return
        self._config = cfg
        self.save_settings(cfg)
        super().accept()

    @property
    def accepted_config(self) -> RunConfig | None:
        return self._config

    @property
    def accepted_doctor(self) -> dict | None:
        """The interpreter check of the accepted config's Python, if one was run."""
        r = self.doctor_report
        return r.to_dict() if r is not None and self._config is not None and r.python == self._config.python else None

    # -- interpreter check -----------------------------------------------------------------------
    def _on_check_clicked(self) -> None:
        self._pending = None
        self._start_check(self.python.currentText().strip(), compile_test=self.compile_check.isChecked())

    def _start_check(self, python: str, compile_test: bool) -> None:
        if self._worker is not None:
            return  # a check is running; its result is used
        self.check_button.setEnabled(False)
        self.doctor_label.setText("checking the interpreter…")
        self._worker = create_worker(doctor.check, python, compile_test=compile_test, _start_thread=False,
                                     _ignore_errors=True)  # errored is answered below: no event-loop traceback
        self._worker.returned.connect(self._on_doctor_returned)
        self._worker.errored.connect(lambda exc: self._on_doctor_returned(
            doctor.DoctorReport(python, False, {}, (("error", str(exc)),))))
        self._worker.start()

    def _on_doctor_returned(self, report: doctor.DoctorReport) -> None:
        if not shiboken6.isValid(self.doctor_label):
            return  # the dialog was closed while the check ran
        colors = {"error": "#d9534f", "warning": "#d08b00", "info": "inherit"}
        lines = [f'<span style="color:{colors[level]}">{_esc(text)}</span>' for level, text in report.messages]
        self.doctor_label.setText("<br>".join(lines))
        self.doctor_report = report
        self.check_button.setEnabled(True)
        self._worker = None
        self.sig_doctor_finished.emit(report)
        cfg, self._pending = self._pending, None
        if cfg is not None:  # Run was pressed: go on with the run if this interpreter can do it
            self.run_button.setEnabled(True)
            if report.python == cfg.python:
                self._finish_accept(cfg, report)


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
