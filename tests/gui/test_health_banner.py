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
