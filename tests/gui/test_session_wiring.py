"""Issue 35 item 7: what install_all wired by closures now follows the window's session (core/session.py,
gui/subscriptions.py): the HTA tab of each loaded trace, the Run dock's cycle and bundle tabs, and the
tables' "Export … as CSV…" hooks. Each test drives the window (signals, menus), never a private hook."""
from __future__ import annotations

import shutil

from helpers import REPO, shared_trace

from core.export import tables
from core.export.csv import write_table


def _open_two_at_once(qtbot, win, paths, timeout_ms=120_000):
    """Open both paths in the same turn: the first view is ready while the second tab may already be the
    current one (the closures keyed on current_view() skipped such a trace)."""
    loaded = []
    win.sig_trace_loaded.connect(loaded.append)
    for path in paths:
        win.open_path(str(path))
    qtbot.waitUntil(lambda: len(loaded) == len(paths), timeout=timeout_ms)
    win.sig_trace_loaded.disconnect(loaded.append)
    return loaded


def test_each_loaded_trace_gets_its_hta_tab_built_when_first_opened(qtbot, main_window):
    from gui.hta import HtaTab
    win = main_window
    seen = []
    win.session.subscribe("trace_loaded", seen.append)
    loaded = _open_two_at_once(qtbot, win, [shared_trace("gpu_clean.pt.trace.json.gz"),
                                           shared_trace("gpu_issues.pt.trace.json.gz")])
    assert seen == loaded  # the session announced each, in the order the window did
    assert len(win.views()) == 2 and not win.findChildren(HtaTab)  # nothing built while opening
    for view in win.views():
        win.tabs.setCurrentWidget(view)
        assert view.tabs.indexOf(view.hta_placeholder) >= 0
        view.tabs.setCurrentWidget(view.hta_placeholder)
        (hta,) = view.findChildren(HtaTab)
        assert view.tabs.currentWidget() is hta and view.tabs.tabText(view.tabs.currentIndex()) == "HTA"
        assert hta._trace_set is view.trace_set  # its own trace, not the current tab's at load time
        assert hta._worker is None  # opening the tab runs nothing: its Run button does
    assert len(win.findChildren(HtaTab)) == 2


def test_a_run_opens_its_cycles_then_its_bundle_replaces_them(qtbot, main_window, tmp_path):
    """The Run dock's signals go to the session's Run: the dock shows at the start, each saved cycle
    opens as a tab while the script goes on, and the finished bundle replaces every cycle tab, also a
    cycle whose load finished after the bundle had opened; the dock folds to its status line."""
    win = main_window
    panel, dock = win.integrations.run_panel, win.integrations.run_dock
    bundle = tmp_path / "run1"
    shutil.copytree(REPO / "tests" / "data" / "bundles" / "c1", bundle)
    cycle1, cycle2 = (bundle / "traces" / f"rank0.cycle{i}.pt.trace.json.gz" for i in (1, 2))
    changes = []
    win.session.subscribe("run", lambda run, change: changes.append(change))

    assert not dock.isVisible()
    panel.sig_run_started.emit(str(bundle))
    assert dock.isVisible() and win.session.run.running and win.session.run.bundle == str(bundle)
    with qtbot.waitSignal(win.sig_trace_loaded, timeout=120_000):
        panel.sig_trace_saved.emit(str(cycle1))
    assert [v.trace_set.path for v in win.views()] == [str(cycle1.resolve())]

    loaded = []
    win.sig_trace_loaded.connect(loaded.append)
    panel.sig_trace_saved.emit(str(cycle2))  # its load is still going when the run ends and the bundle opens
    panel.sig_run_finished.emit(str(bundle), 0)
    panel.sig_bundle_ready.emit(str(bundle))
    assert [v.trace_set.path for v in win.views()] == []  # cycle 1's tab closed at once
    qtbot.waitUntil(lambda: len(loaded) == 2, timeout=120_000)  # cycle 2, then (or before) the bundle
    qtbot.waitUntil(lambda: len(win.views()) == 1, timeout=10_000)  # cycle 2's late tab closed on load
    (view,) = win.views()
    assert view.trace_set.bundle is not None and len(view.trace_set.models) == 2  # both cycles, one tab
    assert win.current_view() is view
    assert changes == ["started", "cycle", "cycle", "finished", "bundle"]
    assert (win.session.run.exit_code, win.session.run.bundle_opened) == (0, True)
    qtbot.waitUntil(panel.is_folded, timeout=5_000)

    # the next run starts afresh: its own cycles, the old bundle's tab stays
    panel.sig_run_started.emit(str(tmp_path / "run2"))
    assert win.session.run.running and win.session.run.cycle_paths == []
    assert win.session.run.bundle == str(tmp_path / "run2") and win.views() == [view]
    panel.sig_run_finished.emit(str(tmp_path / "run2"), 1)  # ends: closing the window asks while one runs
    assert not win.session.run_in_progress


def _export_via_menu(qtbot, exporter, table_view, out, monkeypatch):
    monkeypatch.setattr(exporter, "_ask_file", lambda *a: out)
    with qtbot.waitSignal(exporter.sig_export_finished, timeout=60_000):
        table_view.context_menu().actions()[1].trigger()
    return out.read_bytes()


def test_csv_hooks_export_each_tables_own_rows(qtbot, main_window, tmp_path, monkeypatch):
    """Each loaded trace's Kernels / Ops / Steps menus write exactly core.export.tables' CSV of that
    trace (also the trace that finished loading behind another tab); Issues writes the findings."""
    import csv
    win = main_window
    exporter = win.integrations.exporter
    _open_two_at_once(qtbot, win, [shared_trace("gpu_issues.pt.trace.json.gz"),
                                   shared_trace("gpu_clean.pt.trace.json.gz")])
    builders = {"kernels": tables.kernels, "ops": tables.ops, "steps": tables.steps_table}
    for view in win.views():
        win.tabs.setCurrentWidget(view)
        ts = view.trace_set
        for panel, name in ((view.kernels, "kernels"), (view.ops, "ops"), (view.steps, "steps")):
            assert [a.text() for a in panel.table.context_menu().actions()] == ["Copy", "Export table as CSV…"]
            got = _export_via_menu(qtbot, exporter, panel.table, tmp_path / f"{name}.csv", monkeypatch)
            want = write_table(builders[name](ts), tmp_path / f"want_{name}.csv").read_bytes()
            assert got == want and got.count(b"\n") > 1, (ts.path, name)
    # the Issues panel's menu: the current trace's findings, as its analysis has them
    view = next(v for v in win.views() if v.trace_set.path.endswith("gpu_issues.pt.trace.json.gz"))
    win.tabs.setCurrentWidget(view)
    qtbot.waitUntil(lambda: win.session.analysis_for(view.trace_set) is not None, timeout=60_000)
    findings = win.session.analysis_for(view.trace_set).findings
    out = tmp_path / "findings.csv"
    monkeypatch.setattr(exporter, "_ask_file", lambda *a: out)
    with qtbot.waitSignal(exporter.sig_export_finished, timeout=60_000):
        win.integrations.issues.csv_export()
    want = write_table(tables.findings_table(findings, view.trace_set), tmp_path / "want_findings.csv")
    assert out.read_bytes() == want.read_bytes()
    assert len(list(csv.reader(out.open(encoding="utf-8")))) == len(findings) + 1 > 3
