"""A bundle whose run did not end cleanly says so wherever health shows (info, analyze, report, banner):
os._exit / a crash mid-window, a launcher killed with -9, a run.json still "running" (issue 14)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from core.analysis import health
from core.trace.loader import load

E1 = Path(__file__).resolve().parents[2] / "data" / "bundles" / "e1"
LOST = ("rank(s) 0 ended without ptprof's end of run (os._exit, a crash or a kill, exit 0): the trace window in "
        "progress at step 8 was lost")


@pytest.mark.parametrize("run, want", [
    ({"status": "incomplete", "exit_code": 0, "notices": ["other", LOST]}, LOST),
    ({"status": "launcher_lost", "exit_code": 130}, "launcher (ptprof record / the app) died"),
    ({"status": "running"}, "still says \"running\""),
    ({"status": "failed", "exit_code": 1, "exception": "RuntimeError: boom\nmore"}, "failed (exit 1): RuntimeError: boom"),
])
def test_unclean_ends_are_one_warning(run, want):
    h = health.run_status(run)
    assert h.code == "run_status" and h.severity == "warning" and want in h.message and "\n" not in h.message


@pytest.mark.parametrize("run", [None, [], {"status": "ok"}, {"status": "stopped"}, {"status": ["incomplete"]},
                                 {"status": "failed", "exit_code": "x", "notices": "no", "exception": 5},
                                 {"status": "incomplete", "notices": [None, 3, {"a": "window"}]}])
def test_hostile_or_clean_run_json_never_raises(run):
    h = health.run_status(run)
    assert h is None or (h.code == "run_status" and isinstance(h.message, str) and len(h.message) <= 400)


def test_a_bundle_with_a_lost_window_says_it_through_health(tmp_path):
    b = tmp_path / "e1"
    shutil.copytree(E1, b)
    run = json.loads((b / "run.json").read_text())
    run.update(status="incomplete", end_seen=False, notices=[LOST])
    (b / "run.json").write_text(json.dumps(run))
    items = health.check(load(b, use_cache=False))
    assert [h.message for h in items if h.code == "run_status"] == [LOST]
    assert not [h for h in health.check(load(E1, use_cache=False)) if h.code == "run_status"]
