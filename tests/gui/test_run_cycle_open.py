"""Run Script opens each cycle's trace as soon as it is saved while the script goes on (issue 31: it
opened only when the script exited); the bundle replaces those tabs at the end."""
from __future__ import annotations

import shutil
from types import SimpleNamespace

from helpers import shared_trace


def _fake_session(panel, root, nproc=1):
    panel.controller.session = SimpleNamespace(finished=False, cfg=SimpleNamespace(nproc=nproc, script="t.py"),
                                               bundle=SimpleNamespace(root=root))


def test_a_saved_cycle_opens_while_the_script_runs(qtbot, main_window, tmp_path):
    win = main_window
    panel = win.integrations.run_panel
    (tmp_path / "traces").mkdir()
    trace = tmp_path / "traces" / "cycle1.pt.trace.json.gz"
    shutil.copy(shared_trace("gpu_clean.pt.trace.json.gz"), trace)
    _fake_session(panel, tmp_path)
    with qtbot.waitSignal(win.sig_trace_loaded, timeout=120_000):
        panel._on_controller_event_received({"type": "cycle", "cycle": 1, "path": "traces/cycle1.pt.trace.json.gz",
                                             "bytes": 1, "step": 9, "rank": 0})
    assert [v.trace_set.path for v in win.views()] and "cycle 1 trace opened" in panel.status.text()
    # outside the bundle, a multi-rank run, a finished run: nothing opens
    for event, nproc in (({"path": "../x.json"}, 1), ({"path": "traces/cycle1.pt.trace.json.gz"}, 2)):
        _fake_session(panel, tmp_path, nproc)
        got = []
        panel.sig_trace_saved.connect(got.append)
        panel._on_controller_event_received({"type": "cycle", "cycle": 2, "rank": 0, **event})
        panel.sig_trace_saved.disconnect(got.append)
        assert not got
    panel.controller.session = None
    # the end of the run: the bundle replaces the cycle's tab
    with qtbot.waitSignal(win.sig_trace_loaded, timeout=120_000):
        panel.sig_bundle_ready.emit(str(shared_trace("gpu_issues.pt.trace.json.gz")))
    assert [str(v.trace_set.path).endswith("gpu_issues.pt.trace.json.gz") for v in win.views()] == [True]
