"""The bytes of one log entry (a *frame*) and how a segment's bytes split into frames.

A frame is a 12-byte header and the entry's payload::

    magic  b"WL"  2 bytes   tells a frame start from garbage
    tag    u8     1 byte    what the entry is, chosen by the writer (data, a marker, ...)
    flags  u8     1 byte    0; reserved
    length u32    4 bytes   payload bytes, big-endian
    crc    u32    4 bytes   CRC-32 of the tag byte and the payload, big-endian
    payload       length bytes

Contract of :func:`parse_frames`: a segment is a sequence of whole frames, except that a
writer that crashed may have left its last frame *torn* -- short, or (after a machine crash
that zero-filled a page) with a checksum that does not match. A torn frame can only be
the last thing in a segment, and its entry was never acknowledged (the writer passes an
entry on only after its frame was written whole), so it is dropped and reported. A frame
that does not check out but is followed by more bytes is corruption, never a crash: that
is an error, because entries after it would be replayed out of context.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from flowsql.errors import ExecutionError

MAGIC = b"WL"
_HEADER = struct.Struct(">2sBBII")
HEADER_BYTES = _HEADER.size


@dataclass(frozen=True)
class Frame:
    """One entry read back: where its frame starts in the segment, its tag and payload."""

    offset: int
    tag: int
    payload: bytes

    @property
    def end(self) -> int:
        """The offset of the next frame."""
        return self.offset + HEADER_BYTES + len(self.payload)


def encode_frame(tag: int, payload: bytes) -> bytes:
    """The frame of one entry (``tag`` in [0, 255])."""
    if not 0 <= tag <= 255:
        raise ValueError(f"a log entry's tag is one byte, not {tag}")
    crc = zlib.crc32(payload, zlib.crc32(bytes((tag,))))
    return _HEADER.pack(MAGIC, tag, 0, len(payload), crc) + payload


def parse_frames(data: bytes, start: int = 0, where: str = "log segment"
                 ) -> tuple[list[Frame], bool]:
    """The frames of a segment's bytes from offset ``start`` (a frame start), and whether
    a torn last frame was dropped. Corruption before the end is an ExecutionError naming
    ``where`` and the offset."""
    frames: list[Frame] = []
    view = memoryview(data)
    offset = start
    size = len(data)
    while offset < size:
        if size - offset < HEADER_BYTES:
            return frames, True
        magic, tag, _flags, length, crc = _HEADER.unpack_from(data, offset)
        end = offset + HEADER_BYTES + length
        if magic != MAGIC:
            if _only_zeros(view[offset:]):
                return frames, True
            raise ExecutionError(f"{where}: no log entry starts at byte {offset}; the "
                                 "segment is corrupt")
        if end > size:
            return frames, True
        payload = bytes(view[offset + HEADER_BYTES:end])
        if zlib.crc32(payload, zlib.crc32(bytes((tag,)))) != crc:
            if end == size:
                return frames, True
            raise ExecutionError(f"{where}: the entry at byte {offset} does not match its "
                                 "checksum; the segment is corrupt")
        frames.append(Frame(offset, tag, payload))
        offset = end
    return frames, False


def _only_zeros(rest: memoryview) -> bool:
    return not any(rest.tobytes())
