"""Screens of a remote run, offscreen, against a real sshd on 127.0.0.1 (tests/sshd_server.py):
`python docs/remote_screenshots.py --out DIR --theme light|dark`.

remote_dialog.<theme>.png (the Run dialog with a host, connected: its interpreters probed),
remote_live.<theme>.png (the run panel of a remote run), remote_reconnecting.<theme>.png (sshd killed
mid-run: "disconnected — reconnecting (n)" while the run goes on), remote_done.<theme>.png (fetched).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

SCRIPT = """
import time, torch
from torch import nn
model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for i in range(120):
    opt.zero_grad(); model(torch.randn(64, 256)).sum().backward(); opt.step()
    print(f"step {i} loss ok", flush=True)
    time.sleep(0.12)
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--theme", default="light")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    import sshd_server
    from PySide6 import QtWidgets

    from core.remote.ssh import SshHost
    from gui import theme
    tmp = Path(tempfile.mkdtemp(prefix="ptprof-shots-"))
    os.environ["PTPROF_REMOTE_ROOT"] = str(tmp / "remote-root")
    os.environ["HOME"] = str(tmp)  # its ~/.ssh/config offers the test host in the Host list
    (tmp / ".ssh").mkdir()
    (tmp / "sshd").mkdir()
    server = sshd_server.Sshd(tmp / "sshd").start()
    (tmp / ".ssh" / "config").write_text(f"Include {server.config}\nHost gpu-node-01\n  HostName 10.0.0.7\n")
    app = QtWidgets.QApplication([])
    theme.apply_scheme(app, a.theme)
    script = tmp / "train.py"
    script.write_text(SCRIPT)

    def pump(seconds: float, until=None) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end and not (until and until()):
            app.processEvents()
            time.sleep(0.02)

    from gui.remote import host_row
    from gui.run.dialog import RunDialog
    from gui.run.panel import RunPanel
    host_row.make_host = lambda text: SshHost(text, config_file=str(server.config))  # the test key, no askpass
    dlg = RunDialog(None)
    dlg.resize(900, 760)
    dlg.host_row.set_host(sshd_server.ALIAS)
    dlg.script.setText(str(script))
    dlg.args.setText("--epochs 1")
    dlg.cwd.setText(str(tmp))
    dlg.show()
    dlg.host_row.connect_host(folder=str(tmp), python=sys.executable)
    pump(60, lambda: dlg.host_row.helper is not None or "cannot" in dlg.host_row.status.text())
    pump(0.3)
    dlg.python.setCurrentText(sys.executable)
    dlg.grab().save(str(out / f"remote_dialog.{a.theme}.png"))
    cfg = dlg.config().with_(env=(("OMP_NUM_THREADS", "1"),), out_dir=str(tmp / "local-bundle"))
    from core.remote.session import validate_remote
    panel = RunPanel()
    panel.resize(1400, 760)
    panel.show()
    panel.start(validate_remote(cfg), None, host=SshHost(sshd_server.ALIAS, config_file=str(server.config)))
    pump(90, lambda: panel.controller.session is not None and panel.controller.session.state.step >= 25)
    pump(1.0)
    panel.grab().save(str(out / f"remote_live.{a.theme}.png"))
    server.stop()
    pump(30, lambda: "reconnecting" in panel.status.text())
    pump(2.5)
    panel.grab().save(str(out / f"remote_reconnecting.{a.theme}.png"))
    server.start()
    pump(120, lambda: not panel.controller.is_running)
    pump(1.0)
    panel.grab().save(str(out / f"remote_done.{a.theme}.png"))
    server.stop()
    print("wrote", *sorted(p.name for p in out.glob(f"remote_*.{a.theme}.png")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
