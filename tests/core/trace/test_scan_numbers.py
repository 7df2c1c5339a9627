"""Numbers of every shape read by the C scanner (its fast path, its general parser) exactly as msgspec reads
them (split from test_scan.py)."""
from __future__ import annotations

import random

import pytest
from scan_helpers import _both, _canon

from core.trace import columns
from core.trace.columns import scan_columns

needs_scanner = pytest.mark.skipif(not columns.scan_available(), reason="C scanner not built (no compiler)")

NUMBERS = [b"0", b"-0", b"-0.0", b"7", b"01", b"1.", b"1.5", b"0.001", b"123456789012345678", b"1234567890123456789",
           b"-123456789012345678", b"-576460752303423488", b"-576460752303423487", b"9007199254740993",
           b"9007199254740992", b"900719925474099.3", b"5108453475800.683", b"1.23456789012345678",
           b"12345678901234567.8", b"3e2", b"3E-2", b"2.5e1", b"1.2.3", b"--1", b"-", b"9" * 30, b"0." + b"1" * 25]
KINETO_NUMBERS = {b"0", b"7", b"1.5", b"0.001", b"5108453475800.683", b"123456789012345678"}


def _random_numbers(seed: int, count: int) -> list[bytes]:
    """Numbers around the scanner's fast-path limits (8-digit SWAR steps, 18 digits, 2**53): every length
    of integer and fraction part, signs, leading zeros, digits next to ':' / '/' (the bytes around '0'-'9')."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        n_int = rng.choice([1, 2, 7, 8, 9, 13, 15, 16, 17, 18, 19, 20, rng.randint(1, 22)])
        digits = "".join(rng.choice("0123456789") for _ in range(n_int))
        if rng.random() < 0.8:
            digits = str(rng.randint(1, 9)) + digits[1:]
        text = ("-" if rng.random() < 0.2 else "") + digits
        if rng.random() < 0.6:
            n_frac = rng.choice([1, 3, 7, 8, 9, 16, rng.randint(1, 20)])
            text += "." + "".join(rng.choice("0123456789") for _ in range(n_frac))
        out.append(text.encode())
    return out


@needs_scanner
@pytest.mark.parametrize("seed", range(3))
def test_random_numbers_match_the_python_path(seed):
    """Many numbers in one chunk: ts, dur and int args read by the scanner's fast path (SWAR digits) or
    its general parser, as msgspec reads them."""
    nums = _random_numbers(seed, 400)
    ints = [n.split(b".")[0][:18] for n in nums]  # int64 args (a longer one sends a chunk to the Python path)
    events = [b'{"ph":"X","name":"k","pid":1,"tid":1,"ts":' + a + b',"dur":' + b + b',"args":{"External id":'
              + c + b',"Python id":' + c + b'}}' for a, b, c in zip(nums, nums[1:] + nums[:1], ints[2:] + ints[:2])]
    ok = []
    for ev in events:  # keep the events msgspec takes as plain typed JSON
        try:
            slow = _both(ev)[1]
        except Exception:  # noqa: BLE001
            continue
        if not slow.warnings:
            ok.append(ev)
    assert len(ok) > 100
    text = b"[" + b",".join(ok) + b"]"
    fast = scan_columns(text, 0, len(text))
    assert fast is not None
    assert _canon(fast) == _canon(_both(b",".join(ok))[1])


@needs_scanner
@pytest.mark.parametrize("num", NUMBERS)
def test_numbers_of_every_shape_match_the_python_path(num):
    """Short numbers take the scanner's fast path, the rest its general parser: both as msgspec reads them."""
    pad = b'"' + b"x" * 40 + b'"'  # far from the end of the range, and then right at it
    for text in (b'{"ph":"X","name":' + pad + b',"ts":' + num + b',"dur":' + num + b',"pid":' + num + b',"tid":'
                 + num + b',"args":{"Python id":' + num + b',"External id":' + num + b'}}',
                 b'{"ph":"X","name":"a","pid":1,"tid":1,"dur":1,"ts":' + num + b'}',
                 b'{"ph":"s","name":"a","pid":1,"tid":1,"ts":1,"id":' + num + b'}'):
        try:
            slow = _both(text)[1]
        except Exception:  # noqa: BLE001 - msgspec refuses it: the scanner must refuse it too
            slow = None
        fast = scan_columns(b"[" + text + b"]", 0, len(text) + 2)
        if slow is None or slow.warnings:  # not plain typed JSON: the scanner leaves it to the Python path
            assert fast is None
        elif fast is not None:  # (a huge int for an int64 arg is left to the Python path too)
            assert _canon(fast) == _canon(slow)
        else:
            assert num not in KINETO_NUMBERS
