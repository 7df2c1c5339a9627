"""Trace times as exact int64 ns: a JSON number of µs ("ts": 1733600000123456.789) -> 1733600000123456789.

Kineto writes µs with ns decimals; as float64 an epoch-µs time (~1.7e15) holds only quarter-µs steps, so a
0.112 µs launch delay read through a float came out as 0 or 250 ns. Both decode paths read the number's
decimal text instead: the C scanner (`_scan.c` parse_ns) and, on the Python path, this module (the events keep
`ts` / `dur` as raw JSON text, `msgspec.Raw`, converted a column at a time). The value is the text's digits with
the point moved three places right, rounded half to even past the ns digit; |ns| >= 2^62 (1e300 µs, Infinity)
becomes NS_HIGH / NS_LOW, which core.trace.sanitize drops as impossible times; a missing value is NS_MISSING.
"""
from __future__ import annotations

import decimal
import warnings
from itertools import compress

import msgspec
import numpy as np

NS_MISSING = -(1 << 63)  # no ts / dur (JSON null, absent, NaN, not a number)
NS_LOW = -(1 << 63) + 1  # <= -2^62 ns
NS_HIGH = (1 << 63) - 1  # >= 2^62 ns
NS_LIMIT = 1 << 62

MISSING_RAW = msgspec.Raw(b"")
_SEP = 1  # \x01 cannot occur in JSON text: it separates the values of a column
_CTX = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN,
                       rounding=decimal.ROUND_HALF_EVEN, traps=[])
_POW10 = np.array([10 ** k for k in range(20)], dtype=np.uint64)
_NUMBER_BYTES = b"0123456789.-\x01"


def ns_of_decimal(d: decimal.Decimal) -> int:
    """int ns of a number of µs (exact, half to even), or a sentinel."""
    if d.is_nan():
        return NS_MISSING
    if d.is_infinite():
        return NS_LOW if d < 0 else NS_HIGH
    v = _CTX.to_integral_value(_CTX.scaleb(d, 3))
    if v.is_infinite() or v.copy_abs() >= NS_LIMIT:  # copy_abs: no context (abs() may trap Overflow)
        return NS_LOW if v < 0 else NS_HIGH
    return int(v)


def ns_of_text(text) -> int:
    """int ns of one raw JSON value (bytes / Raw): a number of µs, exactly; anything else (null, a string,
    an object) is missing - as the tolerant path reads it (`ns_of_value`)."""
    t = bytes(text).strip()
    if not t:
        return NS_MISSING
    if t[:1] in b"-0123456789":
        return ns_of_decimal(_CTX.create_decimal(t.decode("ascii", "replace")))
    try:
        return ns_of_value(msgspec.json.decode(t))
    except (msgspec.DecodeError, RecursionError):
        return NS_MISSING


def ns_of_value(v) -> int:
    """int ns of a decoded JSON value: a number (int, a float - `ExactFloat` keeps its text), or a string
    holding one ("123", "1.5e3", "Infinity"); anything else (None, a bool, "N/A", NaN) is missing."""
    if v is None or isinstance(v, bool):
        return NS_MISSING
    if isinstance(v, int):
        return ns_of_decimal(decimal.Decimal(v))
    if isinstance(v, ExactFloat):
        return ns_of_decimal(_CTX.create_decimal(v.text))
    if isinstance(v, float):
        return ns_of_decimal(_CTX.create_decimal(repr(v)) if v == v and abs(v) != float("inf")
                             else decimal.Decimal(v))
    if isinstance(v, str):
        s = v.strip().replace("_", "")
        try:
            return ns_of_decimal(_CTX.create_decimal(s))  # traps off: bad text is NaN (missing)
        except (decimal.InvalidOperation, ValueError):
            return NS_MISSING
    return NS_MISSING


class ExactFloat(float):
    """A float parsed by the stdlib json module that keeps its text (tolerant path: `json.loads(parse_float=)`),
    so times read exactly there too; everything else sees an ordinary float."""

    text: str

    def __new__(cls, text: str):
        f = super().__new__(cls, text)
        f.text = text
        return f


def raw_of_value(v) -> msgspec.Raw:
    """The raw JSON text an event's ts / dur holds for a decoded value (tolerant path), read back by ns_col."""
    ns = ns_of_value(v)
    if ns == NS_MISSING:
        return MISSING_RAW
    if ns in (NS_LOW, NS_HIGH):
        return msgspec.Raw(b"-1e999" if ns == NS_LOW else b"1e999")
    return msgspec.Raw(f"{ns // 1000}.{ns % 1000:03d}".encode() if ns >= 0 else
                       f"-{-ns // 1000}.{-ns % 1000:03d}".encode())


def ns_col(raws) -> np.ndarray:
    """int64 ns column of raw JSON values (msgspec.Raw / bytes; empty = missing). The usual shapes
    ([-]digits[.up to 3 digits], at most 19 digits once scaled to ns) are converted with numpy over the
    joined text; any other value (an exponent, more decimals, null, a string) one at a time (ns_of_text)."""
    n = len(raws)
    blob = b"\x01".join(raws)
    if n and blob[:1] != b"\x01" and blob[-1:] != b"\x01" and b"\x01\x01" not in blob and (n > 1 or blob):
        return _numbers(raws, blob)  # none missing (nearly always)
    out = np.full(n, NS_MISSING, dtype=np.int64)
    lens = np.fromiter(map(len, raws), dtype=np.int64, count=n)
    present = np.flatnonzero(lens)
    if len(present):
        out[present] = _numbers(list(compress(raws, lens.tolist())))
    return out


def _numbers(held: list, blob: bytes | None = None) -> np.ndarray:
    """ns of non-empty raw values (`blob`: them joined by \\x01, when the caller has it)."""
    m = len(held)
    vals = np.empty(m, dtype=np.int64)
    blob = b"\x01".join(held) if blob is None else blob
    if not blob.translate(None, _NUMBER_BYTES):  # numbers without an exponent, every one
        if _kineto_numbers(blob, m, vals):
            return vals
        odd = _simple_numbers(blob, m, vals)
    else:  # an exponent, a string, null somewhere (rare): the plain ones still together
        plain = np.fromiter((not t.translate(None, _NUMBER_BYTES) for t in blob.split(b"\x01")), dtype=bool,
                            count=m)
        rows = np.flatnonzero(plain)
        odd = np.flatnonzero(~plain)
        if len(rows):
            sub = [held[i] for i in rows.tolist()]
            vals[rows] = _numbers(sub)
    for i in odd.tolist():
        vals[i] = ns_of_text(held[i])
    return vals


def _kineto_numbers(blob: bytes, n: int, out: np.ndarray) -> bool:
    """Kineto's one shape, all n values of the blob ([-]digits.ddd: exactly three decimals, at most 19 digits,
    a 19-digit one below 5e18): `out` = the digits without the point, parsed by numpy in C; False (out
    untouched) when any value has another shape."""
    u = np.frombuffer(blob, dtype=np.uint8)
    dots = np.flatnonzero(u == ord("."))
    if len(dots) != n:
        return False
    ends = np.empty(n, dtype=np.int64)
    ends[:-1] = np.flatnonzero(u == _SEP)
    ends[-1] = len(u)
    if not np.array_equal(dots, ends - 4):  # one point per value, three digits after it
        return False
    starts = np.empty(n, dtype=np.int64)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    first = starts + (u[starts] == ord("-"))
    n_digits = ends - first - 1
    if int(n_digits.max()) > 19 or ((n_digits == 19) & (u[first] > ord("4"))).any():
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:  # strtoll per value (the text mode numpy keeps): exact
            vals = np.fromstring(blob.replace(b".", b""), dtype=np.int64, sep="\x01")
        except (ValueError, DeprecationWarning, AttributeError):  # pragma: no cover - a numpy without it
            return False
    if len(vals) != n:  # pragma: no cover
        return False
    out[:] = vals
    out[vals >= NS_LIMIT] = NS_HIGH
    out[vals <= -NS_LIMIT] = NS_LOW
    return True


def _simple_numbers(blob: bytes, n: int, out: np.ndarray) -> np.ndarray:
    """`out` = ns of the n values in blob (\\x01-separated, each non-empty of [0-9.-] only: valid JSON numbers
    without an exponent); returns the indices the caller must convert one at a time (more than 3 decimals,
    past 19 scaled digits or 2^62 ns)."""
    u = np.frombuffer(blob, dtype=np.uint8)
    seps = np.flatnonzero(u == _SEP)
    starts = np.empty(n, dtype=np.int64)
    starts[0] = 0
    starts[1:] = seps + 1
    ends = np.empty(n, dtype=np.int64)
    ends[:-1] = seps
    ends[-1] = len(u)
    neg = u[starts] == ord("-")
    dots = np.flatnonzero(u == ord("."))
    dot_at = np.full(n, -1, dtype=np.int64)
    if len(dots):
        dot_at[np.searchsorted(starts, dots, side="right") - 1] = dots  # (few: values, not digits)
    has_dot = dot_at >= 0
    frac = np.where(has_dot, ends - dot_at - 1, 0)
    n_digits = ends - starts - neg - has_dot
    if len(dots) != int(has_dot.sum()) or blob.count(b"-") != int(neg.sum()) or int(n_digits.min()) < 1:
        return np.arange(n)  # not numbers after all ("1.2.3", "-"): one at a time
    scale = 3 - frac  # zeros appended to reach ns
    odd = (frac > 3) | (n_digits + np.maximum(scale, 0) > 19)
    # every digit's weight: 10^(digits after it in its value + scale); odd values weigh 0 (set apart)
    digit_pos = np.flatnonzero((u >= ord("0")) & (u <= ord("9")))
    owner = np.cumsum(u == _SEP)[digit_pos]  # the value each digit belongs to
    after = ends[owner] - 1 - digit_pos - (dot_at[owner] > digit_pos)
    power = after + scale[owner]
    bad = odd[owner]
    power[bad] = 0
    weights = (u[digit_pos] - ord("0")).astype(np.uint64) * _POW10[power]
    weights[bad] = 0
    first = np.flatnonzero(np.diff(owner, prepend=-1))  # each value's first digit (each has >= 1)
    v = np.add.reduceat(weights, first) if len(weights) else np.zeros(n, np.uint64)  # < 10^19 < 2^64
    big = v >= np.uint64(NS_LIMIT)
    odd |= big
    vals = v.astype(np.int64)  # odd / big rows are overwritten by the caller
    out[:] = np.where(neg, -vals, vals)
    return np.flatnonzero(odd)
