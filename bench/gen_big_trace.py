"""Generate a big, realistic Kineto trace by replicating a real one's steps shifted in time.

    python bench/gen_big_trace.py --out /tmp/big_synth.pt.trace.json --target-mb 1100
    python bench/gen_big_trace.py --source /tmp/gpu_big_stack.pt.trace.json --target-mb 1200

The source's events are copied N times (the last copy partially, to hit the target size); copy k
has every `ts` shifted by k x the source's span, and its ids (`correlation`, `External id`,
`Python id`, `Python parent id`, flow `id`, `Sequence number`) offset so that launches, flows and
python stacks stay consistent within each copy. Text is rewritten with regexes chunk by chunk, so
memory stays flat. Default source: gpu_gpt_big (a real H200 GPT trace: kernels, cpu ops, python
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    ap.add_argument("--out", type=Path, default=Path("/tmp/big_synth.pt.trace.json"))
    ap.add_argument("--target-mb", type=float, default=1100)
    args = ap.parse_args(argv)
    doc = read_source(args.source)
    header, events, tail = split(doc)
    del doc
    shift = span_us(events) * 1.001 + 1000.0
    id_offset = 10 ** (len(str(max(int(v) for _, v in _IDS.findall(events[: 50 << 20])) or [1])) + 1)
    target = int(args.target_mb * 1e6)
    tmp = args.out.with_suffix(".part")
    written = 0
    with open(tmp, "wb") as out:
        out.write(header + b"\n  ")
        k = 0
        while written < target:
            part = shifted(events, k, shift, id_offset)
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
