"""The run panel and Run dialog with an SSH host, against a real sshd on 127.0.0.1 (tests/sshd_server.py):
the Host row connects and probes interpreters, a remote run shows live, a dropped connection shows
"disconnected — reconnecting (n)" while the run goes on, the bundle is fetched and offered to open."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from PySide6 import QtCore, QtWidgets
from sshd_server import ALIAS

from core.remote.session import validate_remote
from core.remote.ssh import SshHost
from core.runner.config import RunConfig, Schedule
from gui.remote import host_row
from gui.run.dialog import RunDialog
from gui.run.panel import RunPanel

pytest.importorskip("torch")
SLOW = """
import time, torch
from torch import nn
m = nn.Linear(8, 2); opt = torch.optim.SGD(m.parameters(), lr=0.1)
for i in range(40):
    opt.zero_grad(); m(torch.randn(4, 8)).sum().backward(); opt.step(); print("step", i, flush=True); time.sleep(0.15)
"""


def _until(qtbot, predicate, timeout_s: float) -> None:
    qtbot.waitUntil(predicate, timeout=int(timeout_s * 1000))


@pytest.mark.timeout(200)
def test_remote_run_in_the_panel_survives_a_dropped_connection(qtbot, sshd, remote_root, tmp_path):
    script = tmp_path / "slow.py"
    script.write_text(SLOW)
    panel = RunPanel()
    qtbot.addWidget(panel)
    ready, connections = [], []
    panel.sig_bundle_ready.connect(ready.append)
    panel.controller.sig_connection_changed.connect(connections.append)
    cfg = validate_remote(RunConfig(script=str(script), python=sys.executable, cwd=str(tmp_path),
                                    env=(("OMP_NUM_THREADS", "1"),), schedule=Schedule(1, 1, 2, 1),
                                    out_dir=str(tmp_path / "bundle")))
    assert panel.start(cfg, None, host=SshHost(ALIAS, config_file=str(sshd.config)))
    assert panel.controller.state == "connecting"  # the UI did not wait for the connection
    _until(qtbot, lambda: panel.controller.session.state.step >= 3, 90)
    sshd.stop()
    try:
        _until(qtbot, lambda: "reconnecting" in panel.status.text(), 60)
        assert panel.live.link.isVisibleTo(panel) and "the run goes on there" in panel.live.link.text()
    finally:
        sshd.start()
    _until(qtbot, lambda: not panel.controller.is_running, 150)
    assert ready == [str(tmp_path / "bundle")] and panel.status.text().startswith("Finished · 40 steps")
    assert not panel.live.link.isVisibleTo(panel)
    assert connections[0] == "connected" and any(c.startswith("disconnected") for c in connections)
    assert (tmp_path / "bundle" / "traces").is_dir() and list((tmp_path / "bundle" / "traces").iterdir())


@pytest.mark.timeout(120)
def test_run_dialog_with_a_host(qtbot, sshd, remote_root, tmp_path, monkeypatch):
    monkeypatch.setattr(host_row, "make_host", lambda text: SshHost(text, config_file=str(sshd.config)))
    dlg = RunDialog(None)
    qtbot.addWidget(dlg)
    dlg.host_row.set_host(ALIAS)
    assert dlg.cwd.placeholderText().startswith("your home folder on the host")
    assert dlg.host_row.connect_host(folder=str(tmp_path), python=sys.executable)
    _until(qtbot, lambda: dlg.host_row.helper is not None or "cannot" in dlg.host_row.status.text(), 90)
    assert "interpreter(s) with torch" in dlg.host_row.status.text()
    tips = [dlg.python.itemData(i, QtCore.Qt.ItemDataRole.ToolTipRole) or "" for i in range(dlg.python.count())]
    assert any("torch 2." in t for t in tips), tips  # each probed interpreter says its torch / CUDA / GPUs
    dlg.script.setText("train.py")  # a path on the host: not checked here
    dlg.cwd.setText(str(tmp_path))
    dlg.python.setCurrentText(sys.executable)
    assert not dlg._remote_dir_row.isHidden()  # "Bundle on host" shows with a host only
    dlg.remote_dir.setText(str(tmp_path / "scratch"))
    dlg.accept()
    assert dlg.accepted_config is not None and dlg.accepted_host is not None
    assert dlg.accepted_host.label == ALIAS and dlg.accepted_config.cwd == str(tmp_path)
    assert dlg.accepted_remote_dir == str(tmp_path / "scratch")
    local = RunDialog(None)
    qtbot.addWidget(local)
    assert local._remote_dir_row.isHidden() and local.accepted_remote_dir == ""
    assert host_row.recent_hosts()[0] == ALIAS


@pytest.mark.timeout(120)
def test_open_remote_fetches_a_trace_and_opens_it(qtbot, sshd, remote_root, tmp_path, monkeypatch):
    from helpers import SAMPLE

    from gui.remote import open_remote
    monkeypatch.setattr(open_remote, "CACHE", tmp_path / "cache")
    monkeypatch.setattr(open_remote, "make_host", lambda text: SshHost(text, config_file=str(sshd.config)))
    opened = []

    class Win(QtWidgets.QMainWindow):
        def open_path(self, path):
            opened.append(path)
    win = Win()
    qtbot.addWidget(win)
    flow = open_remote.OpenRemote(win)
    helpers = []
    flow.sig_connected.disconnect(flow._on_connected)
    flow.sig_connected.connect(helpers.append)
    flow.connect(ALIAS)
    _until(qtbot, lambda: bool(helpers), 60)
    assert not isinstance(helpers[0], str), helpers[0]
    flow.fetch(helpers[0], str(SAMPLE))  # a trace file on the host
    _until(qtbot, lambda: bool(opened), 60)
    assert Path(opened[0]).name == SAMPLE.name and Path(opened[0]).read_bytes() == SAMPLE.read_bytes()
    assert (tmp_path / "cache") in Path(opened[0]).parents


@pytest.mark.timeout(200)
def test_closing_the_app_leaves_a_remote_run_going_then_reattach(qtbot, sshd, remote_root, tmp_path):
    from core.remote.session import unfinished_mirrors
    script = tmp_path / "slow.py"
    script.write_text(SLOW)
    runs = tmp_path / "ptprof-runs"
    cfg = validate_remote(RunConfig(script=str(script), python=sys.executable, cwd=str(tmp_path),
                                    env=(("OMP_NUM_THREADS", "1"),), schedule=Schedule(1, 1, 2, 1),
                                    out_dir=str(tmp_path / "elsewhere" / "slow-1")))  # not in `runs`
    host = SshHost(ALIAS, config_file=str(sshd.config))
    first = RunPanel()
    qtbot.addWidget(first)
    assert first.start(cfg, None, host=host, remote_dir=str(tmp_path / "scratch"))  # the host's bundle folder
    _until(qtbot, lambda: first.controller.session is not None and first.controller.session.state.step >= 2, 90)
    first.shutdown()  # the app closes: the run goes on on the host, nothing is stopped
    assert first.controller.session.exit_code == -1 and not first.controller.session.stopping_requested
    found = unfinished_mirrors(runs)
    assert [f.name for f, _ in found] == ["slow-1"] and found[0][1]["host"] == ALIAS  # by the mirrors index
    assert [p.name for p in (tmp_path / "scratch").iterdir()] == [found[0][1]["id"]]
    second = RunPanel()
    qtbot.addWidget(second)
    ready = []
    second.sig_bundle_ready.connect(ready.append)
    assert second.attach(host, found[0][1]["id"], str(found[0][0]))
    _until(qtbot, lambda: bool(ready), 150)
    assert second.status.text().startswith("Finished · 40 steps")
    assert unfinished_mirrors(runs) == []  # the fetched run.json replaced the placeholder


def test_askpass_program_is_private_and_answers_once(qtbot, monkeypatch, capsys):
    import os
    import stat

    from gui.remote import askpass
    path = askpass.askpass_program()
    mode = os.stat(path).st_mode
    assert stat.S_IMODE(mode) == 0o700 and stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    assert "gui.remote.askpass" in open(path).read()
    shown = []

    def exec_(self):
        shown.append((self.labelText(), self.textEchoMode()))
        self.setTextValue("yes")
        return 1
    monkeypatch.setattr(QtWidgets.QInputDialog, "exec", exec_)
    prompt = "The authenticity of host 'x' can't be established.\nED25519 key fingerprint is SHA256:abc.\n" \
             "Are you sure you want to continue connecting (yes/no/[fingerprint])?"
    assert askpass.main([prompt]) == 0
    assert capsys.readouterr().out == "yes\n"
    assert "SHA256:abc" in shown[0][0] and shown[0][1] == QtWidgets.QLineEdit.EchoMode.Normal
    assert askpass.main(["Enter passphrase for key '/k':"]) == 0
    assert shown[1][1] == QtWidgets.QLineEdit.EchoMode.Password  # a passphrase is never echoed
