"""The end-of-run fetch of a remote run has a Cancel button next to its progress; a cancel keeps no part
of the bundle locally (the files are staged and moved into place only once all arrived) and says where
the bundle still is. Against the real sshd of tests/sshd_server.py, the host's pack slowed down (an
uploaded agent_io.py that pauses after each file, flushing what it sent)."""
from __future__ import annotations

import functools
import json
import sys

import pytest
from sshd_server import ALIAS

from core.remote import runner as runner_mod, session as session_mod
from core.remote.session import validate_remote
from core.remote.ssh import SshHost
from core.runner.config import RunConfig, Schedule
from gui.run.panel import RunPanel

pytest.importorskip("torch")
TRAIN = """
import torch
from torch import nn
m = nn.Linear(8, 2); opt = torch.optim.SGD(m.parameters(), lr=0.1)
for i in range(8):
    opt.zero_grad(); m(torch.randn(4, 8)).sum().backward(); opt.step()
"""


def _slow_pack() -> bytes:
    text = (runner_mod.REMOTE_DIR / "agent_io.py").read_text()
    line = "                        tar.addfile(info, fh)\n"
    assert line in text
    return text.replace(line, line + "                        gz.flush(); sys.stdout.flush(); time.sleep(1.5)\n").encode()


@pytest.mark.timeout(200)
def test_cancel_the_end_of_run_fetch(qtbot, sshd, remote_root, tmp_path, monkeypatch):
    monkeypatch.setattr(session_mod, "Helper", functools.partial(runner_mod.Helper, overrides={"agent_io.py": _slow_pack()}))
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    out = tmp_path / "local" / "train-1"
    cfg = validate_remote(RunConfig(script=str(script), python=sys.executable, cwd=str(tmp_path),
                                    env=(("OMP_NUM_THREADS", "1"),), schedule=Schedule(1, 1, 2, 1), out_dir=str(out)))
    panel = RunPanel()
    qtbot.addWidget(panel)
    finished, ready = [], []
    panel.sig_run_finished.connect(lambda b, c: finished.append(c))
    panel.sig_bundle_ready.connect(ready.append)
    assert panel.start(cfg, None, host=SshHost(ALIAS, config_file=str(sshd.config)))
    qtbot.waitUntil(lambda: not panel.cancel_fetch_button.isHidden() or bool(finished), timeout=150_000)
    assert not finished, "the fetch ended before its Cancel button showed"
    s = panel.controller.session
    qtbot.waitUntil(lambda: (out / ".ptprof-fetch").is_dir(), timeout=30_000)  # files are arriving (staged)
    panel.cancel_fetch_button.click()
    qtbot.waitUntil(lambda: bool(finished), timeout=60_000)
    assert s.fetch_cancelled and not ready  # nothing is opened
    assert panel.status.text().startswith("Fetch cancelled · nothing of the bundle was kept in")
    assert f"ptprof remote fetch {ALIAS} {s.run_id}" in panel.status.text()
    assert panel.cancel_fetch_button.isHidden()
    assert not (out / ".ptprof-fetch").exists() and not list(out.rglob("*.pt.trace.json*"))
    placeholder = json.loads((out / "run.json").read_text())
    assert placeholder["status"] == "running" and placeholder["remote"]["id"] == s.run_id  # Reattach offers it
    assert "exit_code" not in placeholder
    assert [f for f, _ in session_mod.unfinished_mirrors(tmp_path / "none")] == [out]
