"""The trace tab's health banner: computed in a worker, shown only for warnings / errors."""
from __future__ import annotations

from pathlib import Path

import pytest

from core.trace.loader import load

pytest.importorskip("pytestqt")

PAIRS = Path(__file__).resolve().parents[1] / "data" / "device" / "pairs"


def test_banner_shows_warnings_from_a_worker(qtbot):
    from gui.health_banner import HealthBanner
    banner = HealthBanner()
    qtbot.addWidget(banner)
    ts = load(PAIRS / "launchbound", use_cache=False)  # recorded 2.5x slower than unprofiled
    with qtbot.waitSignal(banner.sig_checked, timeout=30_000) as got:
        banner.check(ts)
    codes = {h["code"] for h in got.args[0]}
    assert "recording_inflation" in codes
    assert not banner.isHidden() and "recording slowed" in banner.text()
    banner.set_items([{"code": "x", "severity": "info", "message": "fine", "count": 1}])
    assert banner.isHidden()  # info alone is no banner


def test_a_check_that_raises_is_one_banner_line_not_a_traceback(qtbot, monkeypatch):
    from core.analysis import health
    from gui.health_banner import HealthBanner

    def boom(ts):
        raise OverflowError("cannot convert float infinity to integer")
    monkeypatch.setattr(health, "check", boom)
    banner = HealthBanner()
    qtbot.addWidget(banner)
    with qtbot.waitSignal(banner.sig_checked, timeout=30_000) as got:
        banner.check(load(PAIRS / "launchbound", use_cache=False))
    assert [h["code"] for h in got.args[0]] == ["check_failed"]
    assert not banner.isHidden() and "OverflowError" in banner.text()


def test_a_truncated_trace_gets_a_banner_not_only_the_warnings_button(qtbot, tmp_path):
    """Issue 31: a crashed run's cut-off file said so only in the status bar's small "⚠ 1 warning" button."""
    import gzip

    from gui.health_banner import HealthBanner
    raw = gzip.open(Path(__file__).resolve().parents[1] / "data" / "traces" / "gpu_clean.pt.trace.json.gz").read()
    path = tmp_path / "cut.pt.trace.json"
    path.write_bytes(raw[: len(raw) * 6 // 10])
    ts = load(path, use_cache=False)
    assert any(w.startswith("file is truncated") for w in ts.all_warnings)
    banner = HealthBanner()
    qtbot.addWidget(banner)
    with qtbot.waitSignal(banner.sig_checked, timeout=30_000) as got:
        banner.check(ts)
    assert "truncated" in {h["code"] for h in got.args[0]}
    assert not banner.isHidden() and "file is truncated" in banner.text() and "cover only that part" in banner.text()
