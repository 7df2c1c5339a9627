"""core/snapshot/columns.py + intern.py: the vectorised reader gives the per-row answers (issue 37), and
refuses numbers no allocator reports with the field named."""
from __future__ import annotations

import pickle

import gen_big_snapshot as bench_gen  # tests/gen_big_snapshot.py (bench/gen_big_snapshot.py runs it)
import numpy as np
import pytest
from hostile import gen_snapshot as hostile

from core.snapshot import columns
from core.snapshot.intern import MAX_STACK_FRAMES, Interner
from core.snapshot.load import from_dict, load_snapshot
from core.trace.model import TraceParseError


def _frame(k):
    return {"filename": f"/p/m{k % 7}.py", "line": k, "name": f"f{k}"}


def test_vectorised_stacks_match_one_at_a_time():
    pool = [_frame(k) for k in range(50)]
    deep = [pool[k % 50] for k in range(MAX_STACK_FRAMES + 40)]
    lists = []
    for k in range(3000):
        kind = k % 9
        if kind == 0:
            lists.append([])
        elif kind == 1:
            lists.append(None)
        elif kind == 2:
            lists.append([pool[1], "junk", 3, pool[2]])  # elements that are not dicts are dropped
        elif kind == 3:
            lists.append(deep)  # cut at MAX_STACK_FRAMES, shared
        elif kind == 4:
            lists.append(["only junk"])
        elif kind == 5:
            lists.append(lists[k - 1])  # the same list object again
        else:
            lists.append([pool[(k * 7 + j) % 50] for j in range(k % 13 + 1)])
    fast, slow = Interner(), Interner()
    got = fast.stacks_of(lists)
    want = np.array([slow.stack(f) for f in lists])
    key = lambda it, s: tuple((it.files[f], it.lines[f], it.names[f]) for f in it.stacks[s]) if s >= 0 else None  # noqa: E731
    for g, w, f in zip(got.tolist(), want.tolist(), lists):
        assert key(fast, g) == (key(slow, w) or (None if not (isinstance(f, list) and f) else ())) or \
            (g == -1 and key(slow, w) == ()), (g, w, f)
    assert fast.stacks_of(lists).tolist() == got.tolist()  # a second pass hits the id caches


def test_c_grouping_matches_the_python_path(monkeypatch):
    """core/snapshot/_stackkeys.h groups rows by the objects their lists hold; the stack ids it leads to
    are those of the Python keying (the extension not built), for equal lists that are distinct objects,
    shared lists, junk, empty lists and non-lists."""
    from core.snapshot import intern
    if intern._stack_groups() is None:
        pytest.skip("core.trace._scan not built")
    pool = [_frame(k) for k in range(40)]
    shared = [pool[3], pool[5]]
    lists = []
    for k in range(5000):
        kind = k % 7
        lists.append([] if kind == 0 else None if kind == 1 else shared if kind == 2 else
                     [pool[3], pool[5]] if kind == 3 else [pool[k % 40], "x", pool[(k * 3) % 40]] if kind == 4 else
                     [dict(pool[1])] if kind == 5 else [pool[(k + j) % 40] for j in range(k % 11 + 1)])
    c_side = Interner()
    got = c_side.stacks_of(lists)
    monkeypatch.setattr(intern, "_stack_groups", lambda: None)
    py_side = Interner()
    want = py_side.stacks_of(lists)
    assert got.tolist() == want.tolist()
    assert c_side.stacks == py_side.stacks and c_side.names == py_side.names
    assert got[2] == got[3] >= 0 and got[0] == got[1] == -1  # equal contents, distinct objects: one stack
    from core.trace.columns import _scan
    ids, reps = _scan.stack_groups(lists)
    group = np.frombuffer(ids, np.int64)
    assert group[0] == group[1] == -1 and group[2] == group[3] and reps[group[2]] is shared
    assert len(reps) == len({tuple(map(id, x)) for x in lists if isinstance(x, list) and x})
    with pytest.raises(TypeError):
        _scan.stack_groups((shared,))


def test_generated_snapshot_columns(tmp_path):
    snap = bench_gen.build(3000, 12, 0.5, n_stacks=40)
    p = tmp_path / "g.pickle"
    p.write_bytes(pickle.dumps(snap, protocol=4))
    got = load_snapshot(p)
    ring = snap["device_traces"][0]
    tr = got.trace(0)
    assert len(tr) == len(ring)
    assert tr.addr.tolist() == [e["addr"] for e in ring]
    assert tr.time_ns.tolist() == [e["time_us"] * 1000 for e in ring]
    for i in (0, 1, 17, len(ring) - 1):
        frames = ring[i]["frames"]
        s = int(tr.stack[i])
        assert [(got.stacks.frame_file[f], int(got.stacks.frame_line[f]), got.stacks.frame_name[f])
                for f in got.stacks.stack(s)] == [(f["filename"], f["line"], f["name"]) for f in frames]
    assert len(got.stacks) == 40
    blocks = [b for s in snap["segments"] for b in s["blocks"]]
    assert got.blocks.size.tolist() == [b["size"] for b in blocks]
    assert got.blocks.segment.tolist() == [i for i, s in enumerate(snap["segments"]) for _ in s["blocks"]]


@pytest.mark.parametrize("case, field", [("negative_size", "'size' -9,223,372,036,854,775,808"),
                                         ("huge_size", "'size'"), ("huge_time", "'time_us'"),
                                         ("negative_total_size", "'total_size' beyond 64 bits")])
def test_out_of_range_numbers_are_named(case, field, tmp_path):
    p = tmp_path / "x.pickle"
    p.write_bytes(hostile.CASES[case]())
    with pytest.raises(TraceParseError, match="malformed memory snapshot") as err:
        load_snapshot(p)
    assert field in err.value.reason and "\n" not in err.value.reason


def test_shared_rings_are_bounded_by_what_they_expand_to():
    ring = [{"action": "alloc", "addr": i, "size": 512, "time_us": i} for i in range(2000)]
    assert len(from_dict({"segments": [], "device_traces": [ring, ring]}, "x").traces) == 2  # 2x: read
    with pytest.raises(TraceParseError, match="expands to more than"):
        from_dict({"segments": [], "device_traces": [ring] * 10}, "x")


def test_many_annotations_are_cut_with_a_warning():
    ann = [{"name": f"ProfilerStep#{i // 2}", "stage": "END" if i % 2 else "START", "device": 0, "time_us": i}
           for i in range(2 * columns.MAX_ANNOTATIONS + 10)]
    snap = from_dict({"segments": [], "device_traces": [], "external_annotations": ann}, "x")
    assert len(snap.windows) == columns.MAX_ANNOTATIONS // 2
    assert any("external annotations" in w for w in snap.warnings)


def test_settings_with_wide_integers_and_shared_lists():
    shared = list(range(900))
    settings = {"big": 10**30, "wide": -(2**300), "lists": [shared] * 900, 10**5000: 1}
    snap = from_dict({"segments": [], "device_traces": [], "allocator_settings": settings}, "x")
    assert snap.allocator_settings["big"] == "1" + "0" * 30
    assert snap.allocator_settings["wide"] == "<an integer of 301 bits>"
    assert "<an integer of 16610 bits>" in snap.allocator_settings


def test_no_gc_nests_and_restores():
    import gc
    was = gc.isenabled()  # the GUI's gc_guard keeps it off in the app (and in GUI tests run before this)
    gc.enable()
    try:
        with columns.no_gc():
            with columns.no_gc():
                assert not gc.isenabled()
            assert not gc.isenabled()
        assert gc.isenabled()
        gc.disable()
        with columns.no_gc():
            pass
        assert not gc.isenabled()  # off before: left off
    finally:
        (gc.enable if was else gc.disable)()
