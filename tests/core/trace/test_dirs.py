"""Directories: a TensorBoard log dir with several workers and spans, multi-rank dirs, ranks from
distributedInfo or the file name, one shared time base."""
from __future__ import annotations

import shutil

from helpers import shared_trace

from core.trace.loader import load


def _copy(name, dst):
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(shared_trace(name), dst)
    return dst


def test_tensorboard_log_dir_with_workers_and_spans(tmp_path):
    run = tmp_path / "logs" / "plugins" / "profile" / "run1"
    _copy("gpu_issues.pt.trace.json.gz", run / "hostA_111.1795963387000.pt.trace.json.gz")
    _copy("gpu_clean.pt.trace.json.gz", run / "hostB_222.1795963389000.pt.trace.json.gz")
    _copy("gpu_minimal_opts.pt.trace.json.gz", run / "hostA_111.1795964672000.pt.trace.json.gz")
    (run / "events.out.tfevents.1795963387.hostA").write_bytes(b"\x00\x01")
    (tmp_path / "logs" / "notes.txt").write_text("not a trace")
    ts = load(tmp_path / "logs", use_cache=False)
    assert len(ts.models) == 3
    singles = [load(shared_trace(n), use_cache=False) for n in
               ("gpu_issues.pt.trace.json.gz", "gpu_clean.pt.trace.json.gz", "gpu_minimal_opts.pt.trace.json.gz")]
    assert ts.counts == singles[0].counts + singles[1].counts + singles[2].counts
    assert any("share one rank" in w for w in ts.warnings)
    # one time base: the earliest file starts at 0, the others at their wall-clock offset
    starts = sorted(int(m.slices.ts_ns.min()) for m in ts.models)
    assert starts[0] == 0
    offsets = sorted(m.meta.base_unix_ns for m in ts.models)
    assert ts.base_unix_ns == offsets[0]
    for m in ts.models:
        assert m.meta.base_unix_ns == ts.base_unix_ns  # every model is expressed on the set's base
    late = max(ts.models, key=lambda m: int(m.slices.ts_ns.min()))
    assert int(late.slices.ts_ns.min()) > 1_000_000_000  # minimal_opts was recorded ~21 min later


def test_ddp_dir_loads_as_two_ranks():
    ts = load(shared_trace("gpu_ddp2"), use_cache=False)
    assert ts.ranks == [0, 1]
    assert [m.meta.distributed_info["rank"] for m in ts.models] == [0, 1]
    assert not ts.warnings


def test_rank_from_file_name_when_no_distributed_info(tmp_path):
    _copy("gpu_minimal_opts.pt.trace.json.gz", tmp_path / "run" / "rank_0" / "a.pt.trace.json.gz")
    _copy("gpu_minimal_opts.pt.trace.json.gz", tmp_path / "run" / "rank_3" / "b.pt.trace.json.gz")
    ts = load(tmp_path / "run")
    assert ts.ranks == [0, 3]
    # the same file opened on its own has no rank hint (the cache must not carry one over)
    alone = load(tmp_path / "run" / "rank_3" / "b.pt.trace.json.gz")
    assert alone.cache_hit and alone.primary.rank == 0
