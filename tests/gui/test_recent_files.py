"""The recent-files list is saved off the UI thread in its own JSON file (QSettings.sync fsynced a
temp file holding the GIL: 120-160 ms after a 10 GB load on the test VM); reads never see an older
list, quitting keeps it, and a list from an older version or a broken file never stops the app."""
from __future__ import annotations

import json
import threading
import time

from gui import actions


def _slow_fsync(monkeypatch):
    started, release = threading.Event(), threading.Event()
    real = actions.os.fsync

    def fsync(fd):
        started.set()
        release.wait(5)  # a real fsync waits with the GIL released, as this does
        real(fd)

    monkeypatch.setattr(actions.os, "fsync", fsync)
    return started, release


def test_adding_does_not_wait_for_a_slow_disk(monkeypatch, tmp_path):
    started, release = _slow_fsync(monkeypatch)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    t = time.perf_counter()
    assert actions.add_recent(a) == [str(a.resolve())]
    assert started.wait(5)  # the write has begun and waits on the disk...
    assert actions.add_recent(b) == [str(b.resolve()), str(a.resolve())]  # ...the UI thread goes on
    assert time.perf_counter() - t < 2
    assert actions.recent_files() == [str(b.resolve()), str(a.resolve())]  # never the older list
    release.set()
    actions.flush_recent()
    assert actions._pending is None and actions._writer is None
    stored = json.loads(actions._recent_file().read_text())
    assert stored == actions.recent_files() == [str(b.resolve()), str(a.resolve())]
    assert not list(actions._recent_file().parent.glob(".*.tmp"))


def test_closing_the_window_keeps_the_last_opened_file(qtbot, main_window, tmp_path, monkeypatch):
    started, release = _slow_fsync(monkeypatch)
    path = tmp_path / "t.json"
    actions.add_recent(path)
    assert started.wait(5)
    threading.Timer(0.3, release.set).start()
    main_window.close()  # waits for the write
    assert actions._writer is None
    assert json.loads(actions._recent_file().read_text()) == [str(path.resolve())]


def test_an_older_versions_list_and_a_broken_file(tmp_path):
    s = actions.settings()
    s.setValue("recent", [str(tmp_path / "old.json")])
    s.sync()
    assert actions.recent_files() == [str(tmp_path / "old.json")]  # read from the settings once...
    actions.add_recent(tmp_path / "new.json")
    actions.flush_recent()
    assert actions.recent_files() == [str((tmp_path / "new.json").resolve()), str(tmp_path / "old.json")]
    for bad in (b"{not json", b"\xff\xfe", b'{"a": 1}', b"[" * 5000, b"[1, null, \"x\"]"):
        actions._recent_file().write_bytes(bad)
        assert isinstance(actions.recent_files(), list)  # ...and a broken file is an empty list
    assert actions.recent_files() == ["1", "x"]
