"""Every slice can be read back from its file at its recorded offset (all args, for the Details panel)."""
from __future__ import annotations

import gzip
import lzma

import numpy as np
import pytest
from helpers import shared_trace

from core.trace import columns
from core.trace.loader import load
from core.trace.rawevent import read_event

pytestmark = pytest.mark.skipif(not columns.scan_available(), reason="offsets come from the C scanner")


@pytest.fixture(scope="module")
def plain_and_packed(tmp_path_factory):
    text = gzip.open(shared_trace("gpu_issues.pt.trace.json.gz")).read()
    d = tmp_path_factory.mktemp("raw")
    (d / "t.pt.trace.json").write_bytes(text)
    (d / "t.pt.trace.json.gz").write_bytes(gzip.compress(text, 1))
    (d / "t.pt.trace.json.xz").write_bytes(lzma.compress(text, preset=0))
    return d


@pytest.fixture(scope="module")
def multi_member(plain_and_packed):
    """gzip members / xz streams one after the other (`cat a.gz b.gz`): the loader reads them as one."""
    text = (plain_and_packed / "t.pt.trace.json").read_bytes()
    half = len(text) // 2
    (plain_and_packed / "m.pt.trace.json.gz").write_bytes(gzip.compress(text[:half], 1) + gzip.compress(text[half:], 1))
    (plain_and_packed / "m.pt.trace.json.xz").write_bytes(lzma.compress(text[:half], preset=0) +
                                                          lzma.compress(text[half:], preset=0))
    return plain_and_packed


@pytest.mark.parametrize("suffix", ["json", "json.gz", "json.xz"])
def test_every_sampled_slice_reads_back_with_all_args(plain_and_packed, suffix):
    path = plain_and_packed / f"t.pt.trace.{suffix}"
    m = load(path, use_cache=False).primary
    s = m.slices
    assert (s.src_offset >= 0).all()
    rng = np.random.default_rng(0)
    for row in rng.choice(len(s), 25, replace=False).tolist() + [0, len(s) - 1]:
        ev = read_event(path, int(s.src_offset[row]))
        assert ev is not None and ev["name"] == m.name(row), row
        assert abs(ev["dur"] * 1000 - s.dur_ns[row]) <= 1
    k = int(np.flatnonzero(s.kind == 1)[0]) if (s.kind == 1).any() else 0
    ev = read_event(path, int(s.src_offset[k]))
    assert "args" in ev  # kernels: shared memory, blocks per SM ... (kept only in the file)


def test_unreadable_offsets_give_none(plain_and_packed, tmp_path):
    path = plain_and_packed / "t.pt.trace.json"
    assert read_event(path, -1) is None
    assert read_event(path, 3) is None  # not at an event
    assert read_event(path, 10 ** 12) is None  # past the end
    assert read_event(tmp_path / "gone.json", 0) is None


def test_unquoted_na_in_the_event_still_reads(tmp_path):
    p = tmp_path / "na.json"
    p.write_bytes(b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2, "args": {"v": N/A}}]}')
    assert read_event(p, p.read_bytes().index(b'{"ph"')) == {"ph": "X", "name": "a", "ts": 1, "dur": 2,
                                                               "args": {"v": "N/A"}}


@pytest.mark.parametrize("suffix", ["json.gz", "json.xz"])
def test_events_past_the_first_member_read_back(multi_member, suffix):
    path = multi_member / f"m.pt.trace.{suffix}"
    m = load(path, use_cache=False).primary
    s = m.slices
    late = np.argsort(s.src_offset)[-5:].tolist() + np.argsort(s.src_offset)[len(s) // 2 - 2:len(s) // 2 + 3].tolist()
    for row in late:
        ev = read_event(path, int(s.src_offset[row]))
        assert ev is not None and ev["name"] == m.name(row), row
