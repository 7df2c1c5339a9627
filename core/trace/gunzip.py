"""Gzip members read as a stream: headers parsed here, deflate data inflated by zlib objects (ISA-L's when
installed), each member's CRC-32 and size checked against its trailer.

Why not a library reader: igzip's file reader refused a header over 512 KiB (a 10 MB FNAME or FCOMMENT
was an `OverflowError: Gzip header exceeds input buffer size` traceback), and ISA-L's decompressobj, fed
such a header in pieces, inflated garbage. Here FEXTRA / FNAME / FCOMMENT are skipped as they stream in,
whatever their length, and only the raw deflate stream goes to the decompressor. Zero bytes after a
member are padding (as gzip allows); a stream that stops mid-member ends the iteration with `truncated`.
"""
from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator

try:
    from isal import isal_zlib as _zlib
    from isal.igzip_lib import IsalError as _IsalError
except ImportError:  # pragma: no cover - optional speedup
    _zlib = zlib
    _IsalError = zlib.error

IN_BLOCK = 4 << 20
_FHCRC, _FEXTRA, _FNAME, _FCOMMENT = 2, 4, 8, 16


class GzipError(ValueError):
    """Not gzip, or a member that does not inflate or whose trailer does not match."""


class _Input:
    """The file's bytes from the current position, with a pushed-back head (what a decompressor left)."""

    def __init__(self, fh, head: bytes = b""):
        self.fh = fh
        self.head = head

    def more(self) -> bytes:
        if self.head:
            data, self.head = self.head, b""
            return data
        return self.fh.read(IN_BLOCK)

    def take(self, n: int) -> bytes | None:
        """Exactly n bytes, or None at the end of the file."""
        buf = bytearray()
        while len(buf) < n:
            data = self.more()
            if not data:
                self.head = bytes(buf)  # what there was, for the caller to look at
                return None
            buf += data
        self.head = bytes(buf[n:]) + self.head
        return bytes(buf[:n])

    def skip_past_nul(self) -> bool:
        """Skip a zero-terminated header field of any length; False at the end of the file."""
        while True:
            data = self.more()
            if not data:
                return False
            k = data.find(b"\0")
            if k >= 0:
                self.head = data[k + 1:]
                return True

    def skip_zeros(self) -> bool:
        """Skip zero padding; False when the file ends (nothing but padding left)."""
        while True:
            data = self.more()
            if not data:
                return False
            data = data.lstrip(b"\0")
            if data:
                self.head = data
                return True


def _header(src: _Input) -> bool:
    """Consume one member header; False when the file ends inside it (truncated)."""
    fixed = src.take(10)
    if fixed is None:  # the file ends within 10 bytes: a cut-off header, or bytes that are no header at all
        if not b"\x1f\x8b\x08".startswith(src.head[:3]):
            raise GzipError("not a gzip member")
        return False
    if fixed[:2] != b"\x1f\x8b" or fixed[2] != 8:
        raise GzipError("not a gzip member")
    flags = fixed[3]
    if flags & _FEXTRA:
        size = src.take(2)
        if size is None or src.take(struct.unpack("<H", size)[0]) is None:
            return False
    for flag in (_FNAME, _FCOMMENT):
        if flags & flag and not src.skip_past_nul():
            return False
    return not (flags & _FHCRC and src.take(2) is None)


def short_header(fh, limit: int = 1 << 16) -> bool:
    """The first member's header ends within `limit` bytes (what a library's gzip reader handles well);
    reads from the current position."""
    import io
    try:
        return _header(_Input(io.BytesIO(fh.read(limit))))
    except GzipError:
        return False


class Members:
    """Iterate the inflated pieces of every member; `truncated` tells, at the end, whether the stream
    stopped mid-member. `first_block` / `block` bound each piece (the caller's memory checks go between)."""

    def __init__(self, fh, first_block: int = 16 << 20, block: int = 64 << 20):
        self.src = _Input(fh)
        self.first_block, self.block = first_block, block
        self.truncated = False

    def __iter__(self) -> Iterator[bytes]:
        src = self.src
        first = True
        while True:
            if not _header(src):
                self.truncated = True
                return
            d = _zlib.decompressobj(wbits=-15)
            crc = size = 0
            data = b""
            try:
                while not d.eof:
                    if not data:
                        data = src.more()
                        if not data:
                            self.truncated = True
                            return
                    piece = d.decompress(data, self.first_block if first else self.block)
                    data = d.unconsumed_tail
                    if piece:
                        first = False
                        crc = _zlib.crc32(piece, crc)
                        size += len(piece)
                        yield piece
                        del piece
            except (zlib.error, _IsalError, OverflowError) as exc:
                raise GzipError(f"does not inflate ({exc})") from None
            src.head = d.unused_data + src.head
            trailer = src.take(8)
            if trailer is None:
                self.truncated = True
                return
            want_crc, want_size = struct.unpack("<II", trailer)
            if want_crc != crc & 0xFFFFFFFF or want_size != size & 0xFFFFFFFF:
                raise GzipError("CRC or size does not match the member's trailer")
            if not src.skip_zeros():
                return
