"""Generate a big, realistic Kineto trace by replicating a real one's steps shifted in time.

    python bench/gen_big_trace.py --out /tmp/big_synth.pt.trace.json --target-mb 1100
    python bench/gen_big_trace.py --source /tmp/gpu_big_stack.pt.trace.json --target-mb 1200

The source's events are copied N times (the last copy partially, to hit the target size); copy k
has every `ts` shifted by k x the source's span, and its ids (`correlation`, `External id`,
`Python id`, `Python parent id`, flow `id`, `Sequence number`) offset so that launches, flows and
python stacks stay consistent within each copy. Text is rewritten with regexes copy by copy, or with
`--fast` (the way to make a 10 GB trace: ~2 s per copy instead of ~30) by numpy on the bytes: the number
tokens are found once, each copy's shift is the source's span rounded up to two significant digits, so a
timestamp changes only in its leading digits (written in place), and an id k x 10^E + id is the id with
k and zeros put before it (one vectorised insert). Default source: gpu_gpt_big (a real H200 GPT trace: kernels, cpu ops, python
frames, [memory] events). Writes Kineto's own layout (header, `"traceEvents": [`, events, tail).
"""
from __future__ import annotations

import argparse
import gzip
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "traces"
DEFAULT_SOURCE = Path("/work/shared/traces/gpu_gpt_big.pt.trace.json.gz")

_TS = re.compile(rb'("ts": )(\d+(?:\.\d+)?)')
_IDS = re.compile(rb'("(?:correlation|External id|Python id|Python parent id|Sequence number|id)": ?)(\d+)')
_SEP = re.compile(rb"\},\s*\{")


def read_source(path: Path) -> bytes:
    if path.suffix == ".gz":
        try:
            from isal import igzip
            return igzip.open(path).read()
        except ImportError:
            return gzip.open(path).read()
    return path.read_bytes()


def split(doc: bytes) -> tuple[bytes, bytes, bytes]:
    """(header up to and including '[', events text, tail from ']')."""
    m = re.search(rb'"traceEvents"\s*:\s*\[', doc)
    start = m.end()
    end = doc.rindex(b"]")
    return doc[:start], doc[start:end].rstrip().rstrip(b","), doc[end:]


def span_us(events: bytes) -> float:
    values = [float(v) for _, v in _TS.findall(events)]
    return max(values) - min(values)


def shifted(events: bytes, k: int, shift_us: float, id_offset: int) -> bytes:
    if k == 0:
        return events
    d = shift_us * k

    def ts(m):
        return m.group(1) + (b"%.3f" % (float(m.group(2)) + d))

    def ident(m):
        return m.group(1) + str(int(m.group(2)) + id_offset * k).encode()

    return _IDS.sub(ident, _TS.sub(ts, events))


class FastCopies:
    """Copies of `events` with ts + k * 10^m and ids + k * 10^E, made with numpy on the bytes."""

    def __init__(self, events: bytes):
        import numpy as np
        self.np = np
        self.buf = np.frombuffer(events, np.uint8)
        ts = [(m.start(2), m.end(2)) for m in _TS.finditer(events)]
        ids = [(m.start(2), m.end(2)) for m in _IDS.finditer(events)]
        self.ts = np.asarray(ts, np.int64).reshape(-1, 2)
        self.ids = np.asarray(ids, np.int64).reshape(-1, 2)
        # the integer part of each timestamp: from its start to the '.' (or its end)
        ints = np.asarray([events.find(b".", a, b) if events.find(b".", a, b) >= 0 else b for a, b in ts], np.int64)
        self.int_end = ints.reshape(-1)
        values = [float(events[a:b]) for a, b in ts]
        span = max(values) - min(values) + 1000
        # copy k is shifted by k * step * 10^m: the low m digits of every ts stay as they are, and
        # step * 10^m is the span rounded up to 2 significant digits (copies never overlap, gaps < 10 %)
        self.m = max(0, len(str(int(span))) - 2)
        self.step = -(-int(span) // 10 ** self.m)
        self.e = len(str(max((int(events[a:b]) for a, b in ids), default=1))) + 1
        self.width = self.int_end - self.ts[:, 0]  # digits of each integer part
        if (self.width <= self.m).any():
            raise SystemExit("--fast: a timestamp is shorter than the shift's digits (relative ts?); use the default")

    def shift_us(self) -> float:
        return float(self.step * 10 ** self.m)

    def copy(self, k: int) -> bytes:
        np = self.np
        if k == 0:
            return self.buf.tobytes()
        out = self.buf.copy()
        # timestamps: the leading (width - m) digits hold ts // 10^m; add k to that number in place
        for w in np.unique(self.width).tolist():
            sel = self.width == w
            start = self.ts[sel, 0]
            n_lead = w - self.m
            digits = out[start[:, None] + np.arange(n_lead)] - 48
            lead = (digits.astype(np.int64) * (10 ** np.arange(n_lead - 1, -1, -1))).sum(axis=1) + k * self.step
            if (lead >= 10 ** n_lead).any():
                raise SystemExit("--fast: a shifted timestamp would grow a digit; use fewer copies")
            new = (lead[:, None] // (10 ** np.arange(n_lead - 1, -1, -1))) % 10 + 48
            out[start[:, None] + np.arange(n_lead)] = new.astype(np.uint8)
        # ids: k * 10^e + id = str(k) + the id zero-padded to e digits, inserted before each id's digits
        prefix = np.frombuffer(str(k).encode(), np.uint8)
        width = self.ids[:, 1] - self.ids[:, 0]
        pad = self.e - width
        per = len(prefix) + pad
        pos = np.repeat(self.ids[:, 0], per)
        first = np.repeat(np.cumsum(per) - per, per)
        j = np.arange(len(pos)) - first  # index inside each token's inserted run
        vals = np.where(j < len(prefix), prefix[np.minimum(j, len(prefix) - 1)], 48).astype(np.uint8)
        return np.insert(out, pos, vals).tobytes()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    ap.add_argument("--out", type=Path, default=Path("/tmp/big_synth.pt.trace.json"))
    ap.add_argument("--target-mb", type=float, default=1100)
    ap.add_argument("--fast", action="store_true", help="numpy copies (a 10 GB trace in minutes); shifts by "
                    "a power of ten above the span")
    args = ap.parse_args(argv)
    doc = read_source(args.source)
    header, events, tail = split(doc)
    del doc
    fast = FastCopies(events) if args.fast else None
    shift = span_us(events) * 1.001 + 1000.0
    id_offset = 10 ** (len(str(max(int(v) for _, v in _IDS.findall(events[: 50 << 20])) or [1])) + 1)
    target = int(args.target_mb * 1e6)
    tmp = args.out.with_suffix(".part")
    written = 0
    with open(tmp, "wb") as out:
        out.write(header + b"\n  ")
        k = 0
        while written < target:
            part = fast.copy(k) if fast is not None else shifted(events, k, shift, id_offset)
            room = target - written
            if len(part) > room:  # partial last copy: cut at an event boundary
                m = _SEP.search(part, room)
                if m is not None:
                    part = part[: m.start() + 1]
            if k:
                out.write(b",\n  ")
            out.write(part)
            written += len(part)
            k += 1
            print(f"copy {k}: {written / 1e6:.0f} MB", file=sys.stderr)
        out.write(b"\n" + tail)
    tmp.replace(args.out)
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
