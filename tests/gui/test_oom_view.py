"""The OOM view (issue 32): a bundle whose run died of OOM opens on it, with the failing request, the live
allocations by where they were made, fragmentation and the suggestions; its traces open on request."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "analysis"))
import oom_bundle  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data" / "bundles"


def _open(qtbot, win, path):
    with qtbot.waitSignal(win.sig_snapshot_loaded, timeout=120_000) as blocker:
        win.open_path(str(path))
    return blocker.args[0], win.tabs.currentWidget()


def test_oom_bundle_opens_on_the_oom_view(qtbot, main_window, tmp_path):
    from gui.snapshot.oom_view import OomView
    data, view = _open(qtbot, main_window, oom_bundle.write(tmp_path / "b"))
    assert isinstance(view, OomView)
    assert "256.00 MiB" in view.headline.text() and "train.py:21" in view.headline.text()
    assert view.table_model.rowCount() == 2
    assert "train.py:21 in forward" in view.stack_text.toPlainText()  # the top group, selected
    assert "Growth" in view.suggestions.text()
    assert view.blocks.isVisible() or view.blocks.layout_ is not None
    assert not view.open_traces.isVisible()  # no traces in this bundle


@pytest.mark.parametrize("name", ["oom_a_batch_doubles", "oom_b_losses_kept"])
def test_device_bundles_open(qtbot, main_window, name):
    bundle = DATA / name
    if not bundle.is_dir():
        pytest.skip(f"{bundle} not shipped")
    from gui.snapshot.oom_view import OomView
    data, view = _open(qtbot, main_window, bundle)
    assert isinstance(view, OomView) and data.report.request_bytes > 0


def test_a_rank_oom_names_its_rank(qtbot, main_window, tmp_path):
    """Under torchrun the OOM is rank 1's (tests/core/runner/test_oom_ranks.py records one on CPU): the view
    says which rank and device ran out."""
    import json

    from gui.snapshot.oom_view import OomView
    root = oom_bundle.write(tmp_path / "b")
    (root / "oom.rank0.snapshot.pickle").rename(root / "oom.rank1.snapshot.pickle")
    run = json.loads((root / "run.json").read_text())
    run["oom"][0].update(rank=1, device=1, snapshot="oom.rank1.snapshot.pickle")
    (root / "run.json").write_text(json.dumps(run))
    events = [json.loads(line) for line in (root / "events.jsonl").read_text().splitlines()]
    (root / "events.jsonl").write_text("".join(json.dumps(dict(e, rank=1)) + "\n" for e in events))
    data, view = _open(qtbot, main_window, root)
    assert isinstance(view, OomView) and data.report.rank == 1
    assert "cuda:1 (rank 1)" in view.headline.text()
