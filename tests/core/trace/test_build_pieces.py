"""build.py's long per-row steps run in row pieces (bounded temporaries, the GIL released between
numpy calls): the results must equal the one-shot computation they replaced, at every piece size."""
from __future__ import annotations

import numpy as np
import pytest

from core.trace import build, depth


def _depth_one_shot(ts, dur, offsets):
    """compute_depth as it was before the pieces (np.repeat, one searchsorted, np.unique)."""
    n = len(ts)
    counts = np.diff(offsets)
    nonempty = counts > 0
    first = offsets[:-1][nonempty]
    tmin = np.zeros(len(counts), dtype=np.int64)
    tmax = np.zeros(len(counts), dtype=np.int64)
    end = ts + dur
    tmin[nonempty] = np.minimum.reduceat(ts, first)
    tmax[nonempty] = np.maximum.reduceat(end, first)
    width = np.where(nonempty, tmax - tmin + 1, 0)
    shift = np.repeat(np.concatenate([[0], np.cumsum(width)[:-1]]) - tmin, counts)
    end += shift
    end.sort(kind="stable")
    key = shift + ts
    depth = np.arange(n, dtype=np.int64) - np.searchsorted(end, key, side="right")
    zero = np.flatnonzero(dur == 0)
    if len(zero):
        gstart = np.searchsorted(key, key[zero], side="left")
        gend = np.searchsorted(key, key[zero], side="right")
        depth[zero] += gend - zero
        gs, first_z = np.unique(gstart, return_index=True)
        ge, fz = gend[first_z], zero[first_z]
        lengths = fz - gs
        if lengths.any():
            rows = np.repeat(gs - np.cumsum(np.concatenate([[0], lengths[:-1]])), lengths) + np.arange(lengths.sum())
            depth[rows] += np.repeat(ge - fz, lengths)
    return np.clip(depth, 0, 32767).astype(np.int16)


def _random_rows(seed: int, n: int, n_tracks: int):
    rng = np.random.default_rng(seed)
    track = np.sort(rng.integers(0, n_tracks, n)).astype(np.int32)
    ts = rng.integers(0, n // 3 + 2, n).astype(np.int64)  # many ties
    dur = np.where(rng.random(n) < 0.3, 0, rng.integers(0, 50, n)).astype(np.int64)  # many zero durations
    order = np.lexsort((-dur, ts, track))
    track, ts, dur = track[order], ts[order], dur[order]
    offsets = np.searchsorted(track, np.arange(n_tracks + 1)).astype(np.int64)
    return track, ts, dur, offsets


@pytest.mark.parametrize("piece", [1, 7, 64, 1 << 22])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_depth_in_pieces_equals_one_shot(monkeypatch, piece, seed):
    monkeypatch.setattr(depth, "PIECE_ROWS", piece)
    track, ts, dur, offsets = _random_rows(seed, 3000, 5 + seed)  # some tracks empty
    ref = _depth_one_shot(ts, dur, offsets)
    assert np.array_equal(depth.compute_depth(ts, dur, offsets, track), ref)
    assert np.array_equal(depth.compute_depth(ts, dur, offsets), ref)  # shift built from offsets


@pytest.mark.parametrize("merge", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_depth_by_the_scanners_merge_equals_searchsorted(monkeypatch, merge, seed):
    """compute_depth's count of ended rows: the scanner's linear merge (_scan.depth_merge) or numpy's
    searchsorted pieces give the same depths (ties, zero durations, empty tracks)."""
    from core.trace import columns
    if merge and columns._scan is None:  # noqa: SLF001
        pytest.skip("the C scanner is not built")
    calls = []
    real = depth._depth_merge  # noqa: SLF001
    monkeypatch.setattr(depth, "_depth_merge", lambda *a: calls.append(1) and False or (merge and real(*a)))
    track, ts, dur, offsets = _random_rows(seed, 5000, 3 + seed)
    assert np.array_equal(depth.compute_depth(ts, dur, offsets, track), _depth_one_shot(ts, dur, offsets))
    assert calls


def test_depth_merge_refuses_bad_input():
    from core.trace import columns
    scan = columns._scan  # noqa: SLF001
    if scan is None:
        pytest.skip("the C scanner is not built")
    end = np.array([1, 3, 5], np.int64)
    key = np.array([0, 3, 4, 9], np.int64)
    for dt in (np.int32, np.int64):
        out = np.empty(4, dt)
        assert scan.depth_merge(end, key, out) is True
        assert out.tolist() == (np.arange(4) - np.searchsorted(end, key, side="right")).tolist()
    assert scan.depth_merge(end, key[::-1].copy(), np.empty(4, np.int32)) is False  # key decreases
    with pytest.raises(ValueError):
        scan.depth_merge(end, key, np.empty(3, np.int32))
    with pytest.raises(ValueError):
        scan.depth_merge(end, key, np.empty(4, np.int16))
    with pytest.raises(TypeError):
        scan.depth_merge(end, key, np.empty(4, np.int32)[::2].copy().data.toreadonly())
    empty = np.zeros(0, np.int64)
    assert scan.depth_merge(empty, empty, np.empty(0, np.int32)) is True


@pytest.mark.parametrize("piece", [1, 5, 1 << 22])
def test_repeat_and_identity_in_pieces(monkeypatch, piece):
    monkeypatch.setattr(depth, "PIECE_ROWS", piece)
    rng = np.random.default_rng(3)
    values = rng.integers(-5, 5, 40)
    counts = rng.integers(0, 4, 40)
    counts[[0, -1]] = 0  # empty groups at both ends
    assert np.array_equal(depth.repeat(values, counts), np.repeat(values, counts))
    assert depth._is_identity(np.arange(23))
    swapped = np.arange(23)
    swapped[[10, 11]] = swapped[[11, 10]]
    assert not depth._is_identity(swapped)


def test_sort_order_matches_lexsort():
    track, ts, dur, _ = _random_rows(4, 2000, 6)
    rng = np.random.default_rng(4)
    shuffle = rng.permutation(len(ts))
    track, ts, dur = track[shuffle], ts[shuffle], dur[shuffle]
    order = build._sort_order(track, ts, dur)
    ref = np.lexsort((-dur, ts, track))
    def key(o):  # ties may order either way: compare the keys
        return np.stack([track[o], ts[o], -dur[o]])

    assert np.array_equal(key(order), key(ref))


@pytest.mark.parametrize("seed", range(6))
def test_run_changes_from_gpu_side_pairs_equal_the_dense_columns(seed):
    """_assign_tracks cuts runs where device or stream change; they are held only at the GPU-side rows
    (NONE elsewhere): the changes found from those pairs are the ones the dense columns give."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    held = np.flatnonzero(rng.random(n) < rng.choice([0.0, 0.05, 0.5, 1.0]))
    device = np.full(n, build.NONE, np.int16)
    stream = np.full(n, build.NONE, np.int32)
    device[held] = rng.integers(-1, 3, len(held))  # -1 (NONE) may be held too
    stream[held] = rng.integers(-1, 4, len(held))
    want = np.zeros(n, bool)
    want[1:] = (device[1:] != device[:-1]) | (stream[1:] != stream[:-1])
    got = np.zeros(n, bool)
    build._pair_changes(got, held.astype(np.int64), device[held], stream[held])  # noqa: SLF001
    got[0] = want[0] = False
    assert np.array_equal(got, want)
