"""Memory snapshots: the real `_dump_snapshot` pickle, refused malicious/bad pickles, `ptprof info`."""
from __future__ import annotations

import gzip
import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
from helpers import REPO, run_cli, shared_trace

from core.snapshot import Action, active_timeline, is_snapshot_path, load_snapshot, peak_allocations, safe_loads
from core.snapshot.timeline import live_at
from core.trace.model import TraceParseError

NAME = "gpu_memory.snapshot.pickle"


@pytest.fixture(scope="module")
def snap():
    return load_snapshot(shared_trace(NAME))


def test_real_snapshot_columns(snap):
    assert snap.devices == [0]
    assert len(snap.segments) > 10 and len(snap.blocks) >= len(snap.segments)
    tr = snap.trace(0)
    counts = {a: int((tr.action == a).sum()) for a in Action}
    assert counts[Action.ALLOC] > 1000 and counts[Action.FREE_COMPLETED] > 1000
    assert counts[Action.FREE_REQUESTED] == counts[Action.FREE_COMPLETED]
    assert np.all(np.diff(tr.time_ns) >= 0)
    assert (tr.stack >= 0).all() and tr.stack.max() < len(snap.stacks)
    # reserved = sum of segment sizes, blocks tile their segments
    assert snap.reserved_bytes() == int(snap.segments.total_size.sum())
    per_seg = np.bincount(snap.blocks.segment, weights=snap.blocks.size, minlength=len(snap.segments))
    assert np.array_equal(per_seg.astype(np.int64), snap.segments.total_size)
    assert 0 < snap.allocated_bytes() <= snap.reserved_bytes()


def test_active_memory_grows_step_after_step(snap):
    tl = active_timeline(snap, 0)
    assert len(tl) == int(((snap.trace(0).action == Action.ALLOC) | (snap.trace(0).action == Action.FREE_COMPLETED)).sum())
    assert tl.peak_bytes == int(tl.active_bytes.max())
    assert tl.active_bytes[tl.peak_step] == tl.peak_bytes
    # ends where the segments say active memory is at snapshot time
    assert tl.active_bytes[-1] == int(snap.segments.active_size.sum())
    assert tl.active_bytes.min() >= 0
    steps = [w for w in snap.steps(0) if ((tl.time_ns >= w.t0_ns) & (tl.time_ns <= w.t1_ns)).sum() > 10]
    assert len(steps) >= 6
    end_of_step, low = [], []
    for w in steps:
        m = (tl.time_ns >= w.t0_ns) & (tl.time_ns <= w.t1_ns)
        end_of_step.append(int(tl.active_bytes[m][-1]))
        low.append(int(tl.active_bytes[m].min()))
    assert all(b > a for a, b in zip(end_of_step, end_of_step[1:])), end_of_step
    assert all(b > a for a, b in zip(low, low[1:])), low
    # the peak falls in one of the last steps
    assert tl.peak_time_ns >= steps[-3].t0_ns


def test_peak_allocations_have_user_frames(snap):
    tl = active_timeline(snap, 0)
    top = peak_allocations(snap, tl, 10)
    assert len(top) == 10
    sizes = [a.size for a in top]
    assert sizes == sorted(sizes, reverse=True)
    live = live_at(snap.trace(0), tl.peak_event)
    assert sizes[0] == int(snap.trace(0).size[live].max())
    # what is live at the peak plus the pre-trace baseline is the peak
    assert int(snap.trace(0).size[live].sum()) + tl.baseline_bytes == tl.peak_bytes
    for a in top:
        assert len(snap.stacks.stack(a.stack)) > 5
        if a.user_frame:  # forward allocations name user code, never torch internals
            assert a.user_frame.endswith((" in forward", " in w_memory")), a.user_frame
            assert "site-packages" not in a.user_frame and "/torch/" not in a.user_frame
        else:  # the autograd thread has no Python frames: the ATen op names it
            assert a.op.startswith("aten::") and a.where.endswith("(no Python frame)")
    # the growth comes from the retained logits: several 128 MiB forward outputs are live at the peak
    assert sum(a.user_frame.endswith(" in forward") for a in top) >= 5


def test_gzip_snapshot_loads_the_same(snap, tmp_path):
    gz = tmp_path / "snap.pickle.gz"
    gz.write_bytes(gzip.compress(shared_trace(NAME).read_bytes()))
    again = load_snapshot(gz)
    assert len(again.trace(0)) == len(snap.trace(0))
    assert active_timeline(again, 0).peak_bytes == active_timeline(snap, 0).peak_bytes


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("protocol", [0, 2, 4, 5])
def test_malicious_pickle_is_refused_and_nothing_runs(tmp_path, protocol):
    marker = tmp_path / "pwned"
    payload = {"segments": [], "device_traces": [[{"action": "alloc", "x": _Evil(marker)}]]}
    bad = tmp_path / "evil.pickle"
    bad.write_bytes(pickle.dumps(payload, protocol=protocol))
    # sanity: the ordinary unpickler *would* run it
    assert b"system" in bad.read_bytes()
    with pytest.raises(TraceParseError) as err:
        load_snapshot(bad)
    assert "refused" in err.value.reason and "system" in err.value.reason
    assert "\n" not in err.value.reason
    assert not marker.exists()


def test_other_globals_are_refused(tmp_path):
    for obj in (print, np.int64(3), {1, 2}.__class__, complex(1, 2)):
        with pytest.raises(TraceParseError, match="refused"):
            safe_loads(pickle.dumps({"segments": [obj]}), tmp_path / "x.pickle")
    # a hand-written protocol-0 pickle: GLOBAL builtins eval + REDUCE
    with pytest.raises(TraceParseError, match="builtins.eval"):
        safe_loads(b"cbuiltins\neval\n(S'1+1'\ntR.", "inline")


@pytest.mark.parametrize("content, why", [
    (b"not a pickle at all", "not a valid pickle"),
    (b"", "empty"),
    (pickle.dumps([1, 2, 3]), "not a CUDA memory snapshot"),
    (pickle.dumps({"device_traces": []}), "not a CUDA memory snapshot"),
    (pickle.dumps({"segments": [{"address": "x", "total_size": 1}]}), "malformed"),
    (gzip.compress(b"\x80\x04junk", mtime=0), "pickle"),
    (b"\x1f\x8b\x08\x00broken gzip", "gzip"),
])
def test_bad_input_one_line(tmp_path, content, why):
    p = tmp_path / "bad.pickle"
    p.write_bytes(content)
    with pytest.raises(TraceParseError) as err:
        load_snapshot(p)
    assert why in err.value.reason and "\n" not in err.value.reason


def test_truncated_snapshot(tmp_path):
    data = shared_trace(NAME).read_bytes()
    p = tmp_path / "cut.pickle"
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceParseError, match="truncated"):
        load_snapshot(p)


def test_detection(tmp_path):
    assert is_snapshot_path(shared_trace(NAME))
    assert not is_snapshot_path(REPO / "resources" / "sample.pt.trace.json.gz")
    raw = tmp_path / "noext"
    raw.write_bytes(pickle.dumps({"segments": []}, protocol=4))
    assert is_snapshot_path(raw)




def test_cli_info_snapshot(snap):
    path = str(shared_trace(NAME))
    r = run_cli("info", path, "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    dev = info["devices"][0]
    tl = active_timeline(snap, 0)
    assert info["kind"] == "cuda_memory_snapshot"
    assert info["reserved_bytes"] == snap.reserved_bytes() and info["trace_events"] == len(snap.trace(0))
    assert dev["peak_active_bytes"] == tl.peak_bytes
    assert len(dev["top_at_peak"]) == 5 and all(a["user_frame"] or a["op"] for a in dev["top_at_peak"])
    text = run_cli("info", path)
    assert text.returncode == 0 and "peak active" in text.stdout and "gpu_workloads.py" in text.stdout


def test_cli_info_refuses_malicious(tmp_path):
    marker = tmp_path / "pwned"
    bad = tmp_path / "evil.pickle"
    bad.write_bytes(pickle.dumps(_Evil(marker)))
    r = run_cli("info", str(bad))
    assert r.returncode == 2 and "refused" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not marker.exists()


def test_deeply_nested_pickle_is_rejected_without_crashing(tmp_path):
    n = 500_000  # a list nested half a million deep: the C unpickler is iterative, the depth bound refuses it
    p = tmp_path / "deep.pickle"
    p.write_bytes(b"\x80\x02" + b"]" * n + b"a" * (n - 1) + b".")
    with pytest.raises(TraceParseError, match="nests deeper than"):
        load_snapshot(p)


def test_two_devices_are_kept_apart(snap, tmp_path):
    """The real ring copied onto cuda:1 with cuda:0's ring halved: each device gets its own series."""
    obj = safe_loads(shared_trace(NAME).read_bytes())
    ring = obj["device_traces"][0]
    obj["device_traces"] = [ring[: len(ring) // 2], ring]
    obj["segments"] = obj["segments"] + [dict(s, device=1) for s in obj["segments"]]
    p = tmp_path / "two.pickle"
    p.write_bytes(pickle.dumps(obj, protocol=4))
    two = load_snapshot(p)
    assert two.devices == [0, 1]
    assert len(two.trace(0)) == len(ring) // 2 and len(two.trace(1)) == len(ring)
    assert two.reserved_bytes(1) == two.reserved_bytes(0) == snap.reserved_bytes()
    assert active_timeline(two, 1).peak_bytes == active_timeline(snap, 0).peak_bytes
    assert active_timeline(two, 0).peak_time_ns < active_timeline(two, 1).peak_time_ns


@pytest.mark.parametrize("line", [2**31, 2**70, -1, "12", float("inf"), float("nan"), 1.5, True, None, [3]])
def test_frame_line_numbers_that_are_not_int32_read_as_0(line):
    """Line 2**31 was an OverflowError traceback in the int32 column (found by the slow property run)."""
    from core.snapshot.load import from_dict
    frames = [{"filename": "/x/train.py", "line": line, "name": "f"}, {"filename": "/x/train.py", "line": 7, "name": "g"}]
    s = from_dict({"segments": [{"address": 0, "total_size": 512, "blocks": [{"size": 512, "state": "active_allocated",
                                                                             "frames": frames}]}]}, "x")
    assert s.stacks.frame_line.tolist() == [0, 7]


def test_info_escapes_frame_names_and_allocator_settings(tmp_path):
    """Issue 37: a snapshot's frame names and PYTORCH_CUDA_ALLOC_CONF reach the terminal with ESC / OSC /
    bidi characters escaped visibly."""
    evil = "\x1b]0;owned\x07\x1b[2J\u202e\x9b"
    with open(shared_trace(NAME), "rb") as fh:
        data = pickle.load(fh)  # our own test data: plain dicts
    data["allocator_settings"]["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True" + evil
    for trace in data["device_traces"]:
        for event in trace:
            for frame in event.get("frames") or ():
                frame["name"] = evil + frame["name"]
                frame["filename"] = evil + frame["filename"]
    path = tmp_path / "evil.snapshot.pickle"
    path.write_bytes(pickle.dumps(data))
    r = subprocess.run([sys.executable, "-m", "core.cli", "info", str(path)], cwd=REPO, capture_output=True,
                       timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    assert "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\\x1b]0;owned\\x07" in out
    assert "\\u202e" in out and "\x1b" not in out and "\u202e" not in out and "\x9b" not in out
    assert out.count("\\x1b]0;owned") >= 2, out  # the top allocations' frames too
