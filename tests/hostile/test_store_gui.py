"""The GUI's open path gets the store-side hostile corpus (gen_store.py): each input opened in MainWindow
ends in a tab (with warnings) or one error dialog (auto-answered here), never a crash, a traceback in the
dialog, or a hang (every wait has a timeout)."""
from __future__ import annotations

import pytest

from hostile import gen_index as gi, gen_store as g

pytestmark = pytest.mark.timeout(300)

# the snapshot bombs that are refused quickly (the 1 GiB gzip bomb inflates 200 MiB before refusal: CLI test)
# the CLI test walks every class; the window's open path is the same reader, so the few-second ones
# (1 M annotations / appends / memoisations) are left to it
GUI_SNAPSHOTS = sorted(set(g.SNAPSHOT_CASES) - {"gzip_bomb", "many_annotations", "many_appends", "many_memoize",
                                                 "many_appends_top", "deep_list", "deep_marks", "deep_tuples"})


@pytest.fixture
def main_window(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("PTPROF_SETTINGS_DIR", str(tmp_path / "settings"))
    from gui.main_window import MainWindow
    win = MainWindow()
    win.resize(1200, 800)
    qtbot.addWidget(win)
    win.show()
    return win


@pytest.fixture
def dialogs(monkeypatch):
    from PySide6 import QtWidgets
    shown: list[tuple[str, str]] = []
    for kind in ("critical", "warning", "information"):
        monkeypatch.setattr(QtWidgets.QMessageBox, kind,
                            lambda *a, _k=kind, **kw: shown.append((_k, str(a[2]) if len(a) > 2 else "")))
    monkeypatch.setattr(QtWidgets.QMessageBox, "question",
                        lambda *a, **kw: shown.append(("question", "")) or QtWidgets.QMessageBox.StandardButton.No)
    return shown


def _open(qtbot, win, path) -> str:
    """Open `path`; 'loaded' (a tab), or 'failed' (sig_load_failed)."""
    outcome = []
    win.sig_trace_loaded.connect(lambda *_: outcome.append("loaded"))
    win.sig_snapshot_loaded.connect(lambda *_: outcome.append("loaded"))
    win.sig_load_failed.connect(lambda *_: outcome.append("failed"))
    win.open_path(str(path))
    qtbot.waitUntil(lambda: bool(outcome), timeout=240_000)
    qtbot.waitUntil(lambda: not win.jobs, timeout=60_000)
    return outcome[0]


def _check(outcome, shown, win):
    errors = [text for kind, text in shown if kind == "critical"]
    if outcome == "failed":
        assert len(errors) == 1 and "Traceback" not in errors[0] and "\n" not in errors[0], shown
    else:
        assert errors == [] and win.tabs.count() == 1
    assert all("Traceback" not in text for _kind, text in shown)


@pytest.mark.parametrize("case", sorted(g.BUNDLE_CASES))
def test_hostile_bundle_opens_in_the_window(case, qtbot, main_window, dialogs, tmp_path):
    outcome = _open(qtbot, main_window, g.BUNDLE_CASES[case](tmp_path))
    assert outcome == "loaded"  # a bad side file never refuses the traces
    _check(outcome, dialogs, main_window)


@pytest.mark.parametrize("case", GUI_SNAPSHOTS)
def test_hostile_snapshot_opens_in_the_window(case, qtbot, main_window, dialogs, tmp_path):
    outcome = _open(qtbot, main_window, g.write_snapshot(tmp_path, case))
    assert outcome == ("loaded" if case in g.SNAPSHOT_OPENS else "failed")
    _check(outcome, dialogs, main_window)


def test_fifo_snapshot_is_one_dialog(qtbot, main_window, dialogs, tmp_path):
    outcome = _open(qtbot, main_window, g.fifo_snapshot(tmp_path))
    assert outcome == "failed"
    _check(outcome, dialogs, main_window)


@pytest.mark.parametrize("how", g.CACHE_POISONS)
def test_poisoned_cache_opens_from_the_source(how, qtbot, main_window, dialogs, tmp_path, monkeypatch):
    trace, cdir = g.poisoned_cache(tmp_path, how)
    monkeypatch.setenv("PTPROF_CACHE_DIR", str(cdir))
    with qtbot.waitSignal(main_window.sig_trace_loaded, timeout=240_000) as blocker:
        main_window.open_path(str(trace))
    assert not blocker.args[0].cache_hit  # the bad entry was a miss: rebuilt from the trace
    _check("loaded", dialogs, main_window)


@pytest.mark.parametrize("how", gi.INDEX_POISONS)
def test_poisoned_index_opens_with_a_rebuilt_one(how, qtbot, main_window, dialogs, tmp_path, monkeypatch):
    """A kept timeline index that fails its checks is rebuilt for the view, and a good one replaces it
    once the window's after-open work is done (the write behind it)."""
    from core.trace import cache, index_store
    monkeypatch.setenv("PTPROF_INDEX_MIN_SLICES", "0")
    trace, cdir, entry = gi.poisoned_index(tmp_path, how)
    monkeypatch.setenv("PTPROF_CACHE_DIR", str(cdir))
    loaded = []
    main_window.sig_trace_loaded.connect(lambda ts: loaded.append(ts))
    assert _open(qtbot, main_window, trace) == "loaded"
    _check("loaded", dialogs, main_window)
    assert loaded[0].cache_hit  # the entry's columns were fine
    index = main_window.current_view().timeline.indexes[0]
    assert not index.stored and index.count(0, 0, -1e18, 1e18) >= 0
    qtbot.waitUntil(lambda: index_store.has_index(entry), timeout=60_000)  # the write behind the open
    cache.flush(60)
    assert index_store.open_index(entry, loaded[0].primary) is not None
