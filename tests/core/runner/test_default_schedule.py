"""The default record schedule gives a significant Compare: >= 4 recorded steps a side (issue 31 item 11; the
README's rule), the same default in `ptprof record`, the child runner and the Run dialog (tests/gui/test_run_dialog),
and the DataLoader-drain window of issue 28 still built on it."""
from __future__ import annotations

import subprocess
import sys

import pytest
from helpers import REPO
from runner_scripts import TRAIN, write

from core.analysis.significance import min_p_value
from core.runner.config import Schedule


def test_default_window_can_show_a_significant_change():
    d = Schedule()
    assert d.active >= 4 and min_p_value(d.active, d.active) < 0.05
    assert d.wait >= 5  # issue 28: the unprofiled steps that measure the recording inflation stay


def test_record_and_the_child_default_to_the_same_schedule():
    import argparse

    from core.commands import record
    p = argparse.ArgumentParser()
    record.add_arguments(p)
    a = p.parse_args(["train.py"])
    assert (a.wait, a.warmup, a.active, a.repeat) == (lambda d: (d.wait, d.warmup, d.active, d.repeat))(Schedule())
    child = (REPO / "core" / "runner" / "child.py").read_text()
    assert f'("active", {Schedule().active})' in child and f'("wait", {Schedule().wait})' in child


def test_dataloader_drain_still_records_whole_rounds_of_the_workers():
    from core.runner.observe import MAX_ACTIVE, LoaderWatch
    d = Schedule()
    plain = LoaderWatch()
    assert plain.schedule(d.wait, d.warmup, d.active, d.repeat) == (d.wait, d.warmup, d.active, d.repeat)
    w = LoaderWatch()
    w.seen(4, 2)  # 4 workers x 2 prefetched batches: 8 queued batches to use up first
    wait, warmup, active, repeat = w.schedule(d.wait, d.warmup, d.active, d.repeat)
    assert wait == 16 and active % 4 == 0 and d.active <= active <= MAX_ACTIVE and active == 8
    assert "records 8 steps" in w.notice()["message"]


@pytest.mark.needs_torch
def test_a_default_record_holds_the_default_steps(tmp_path):
    pytest.importorskip("torch")
    script = write(tmp_path, "train.py", TRAIN)
    n = Schedule().steps_needed + 2
    r = subprocess.run([sys.executable, "-m", "core.cli", "record", "--quiet", "--out", str(tmp_path / "b"),
                        str(script), str(n)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    from core.trace.loader import load
    ts = load(tmp_path / "b", use_cache=False)
    assert len(ts.primary.steps) == Schedule().active >= 4
