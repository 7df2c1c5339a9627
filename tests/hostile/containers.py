"""The containers a hostile trace comes in (issue 14; split from gen_trace.py): plain JSON, gzip / xz, truncated
or corrupt gzip, multi-member gzip, gzip / xz bombs, gzip members with oversized header fields. `pack(rng,
container, text)` -> (file suffix, bytes); deterministic for a seeded rng."""
from __future__ import annotations

import functools
import gzip
import lzma
import random
import zlib

CONTAINERS = ("json", "gz", "xz", "gz_truncated", "gz_corrupt", "gz_multi", "gz_bomb", "xz_bomb", "gz_header")
def gzip_repeated(head: bytes, block: bytes, n: int, tail: bytes = b"") -> bytes:
    """A valid gzip member of head + block * n + tail (CRC and size right), deflated without deflating
    it all: after a full flush deflate starts afresh, so every copy of the block compresses to the same
    bytes - compressed once and repeated (the CRC is what costs: ~0.3 s per GiB; deflating a GiB of
    one repeated byte at level 9 took ~3.5 s)."""
    import struct
    co = zlib.compressobj(9, zlib.DEFLATED, -15)  # raw deflate: the gzip header and trailer are ours
    first = co.compress(head) + co.flush(zlib.Z_FULL_FLUSH)
    packed = co.compress(block) + co.flush(zlib.Z_FULL_FLUSH) if n else b""
    last = co.compress(tail) + co.flush()
    crc = zlib.crc32(head)
    for _ in range(n):
        crc = zlib.crc32(block, crc)
    crc = zlib.crc32(tail, crc)
    size = len(head) + n * len(block) + len(tail)
    return b"".join([b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff", first, packed * n, last,
                     struct.pack("<II", crc, size & 0xFFFFFFFF)])


@functools.lru_cache(maxsize=8)  # the same bytes every time: an xz bomb of 300 MB is ~1 s of CPU
def _bomb(fmt: str, inflated_bytes: int) -> bytes:
    """`{"traceEvents": [` + spaces: a trace-looking stream that inflates ~1000x."""
    head = b'{"traceEvents": [' + b" " * (1 << 20)
    block = b" " * (1 << 20)
    if fmt == "gz":
        return gzip_repeated(head, block, inflated_bytes >> 20)
    c = lzma.LZMACompressor(preset=0)
    parts = [c.compress(head)] + [c.compress(block) for _ in range(inflated_bytes >> 20)] + [c.flush()]
    return b"".join(parts)


def pack(rng: random.Random, container: str, text: bytes) -> tuple[str, bytes]:
    if container == "json":
        return ".json", text
    if container == "xz":
        return ".json.xz", lzma.compress(text)
    if container == "gz_bomb":
        return ".json.gz", _bomb("gz", rng.choice([300, 600]) << 20)
    if container == "xz_bomb":
        return ".json.xz", _bomb("xz", 300 << 20)
    packed = gzip.compress(text, compresslevel=1, mtime=0)
    if container == "gz_truncated":
        return ".json.gz", packed[: rng.randint(1, max(1, len(packed) - 1))]
    if container == "gz_corrupt":
        out = bytearray(packed)
        out[rng.randrange(10, max(11, len(out)))] ^= 0xFF
        return ".json.gz", bytes(out)
    if container == "gz_multi":
        return ".json.gz", packed + gzip.compress(b"   ", mtime=0)
    if container == "gz_header":
        return ".json.gz", gzip_with_header(rng, text)
    return ".json.gz", packed


def gzip_member(data: bytes, fname: bytes | None = None, comment: bytes | None = None, extra: bytes | None = None,
                hcrc: bool = False) -> bytes:
    """One gzip member with the optional header fields (RFC 1952) set: FEXTRA, FNAME, FCOMMENT, FHCRC."""
    import struct
    flags, fields = 0, b""
    if extra is not None:
        flags |= 4
        fields += struct.pack("<H", len(extra)) + extra
    if fname is not None:
        flags |= 8
        fields += fname + b"\0"
    if comment is not None:
        flags |= 16
        fields += comment + b"\0"
    head = b"\x1f\x8b\x08" + bytes([flags | (2 if hcrc else 0)]) + b"\0\0\0\0\0\xff" + fields
    if hcrc:
        head += struct.pack("<H", zlib.crc32(head) & 0xFFFF)
    co = zlib.compressobj(1, zlib.DEFLATED, -15)
    return head + co.compress(data) + co.flush() + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)


def gzip_with_header(rng: random.Random, text: bytes) -> bytes:
    """Members whose FNAME / FCOMMENT / FEXTRA run past a reader's header buffer (igzip's: 512 KiB), in the
    first member or a later one, with zero padding between members or after the last."""
    big = rng.choice([600 << 10, 2 << 20, 10 << 20])
    fields = rng.choice([{"fname": b"n" * big}, {"comment": b"c" * big}, {"fname": b"n" * big, "comment": b"c" * big},
                         {"extra": b"e" * 65535, "fname": b"n" * big, "hcrc": True}])
    cut = rng.randrange(len(text))
    pad = b"\0" * rng.choice([0, 0, 7, 4096])
    if rng.random() < 0.5:
        return gzip_member(text, **fields) + pad
    return gzip_member(text[:cut]) + pad + gzip_member(text[cut:], **fields) + pad

