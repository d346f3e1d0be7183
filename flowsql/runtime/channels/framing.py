"""The wire format of a remote channel: length-prefixed frames on one TCP connection.

Each frame is a 5-byte header (payload length as little-endian uint32, then a type byte)
followed by the payload. Sender to receiver, in channel order:

* HELLO   the channel id (UTF-8), once, first: routes the connection to its input channel
* SCHEMA  ``Schema.serialize()``: the schema of the BATCH frames that follow
* BATCH   ``RecordBatch.serialize()``: an Arrow IPC record batch message (no schema)
* STREAM  a complete Arrow IPC stream of one batch, used for batches with dictionary
          columns, whose dictionaries a bare batch message cannot carry
* EVENT   ``encode_event`` bytes

Receiver to sender: CREDIT (uint32 count of newly freed slots). Data and events share one
byte stream, so FIFO order across them holds by construction. The format is plain Arrow
IPC plus a few fixed-layout bytes — any process, any machine, never Python object serialization.
"""

from __future__ import annotations

import enum
import io
import socket
import struct
import threading

import pyarrow as pa

from flowsql.runtime.channels.base import ChannelError, Element
from flowsql.runtime.events import decode_event, encode_event

_HEADER = struct.Struct("<IB")
_CREDIT = struct.Struct("<I")


class Frame(enum.IntEnum):
    HELLO = 1
    SCHEMA = 2
    BATCH = 3
    STREAM = 4
    EVENT = 5
    CREDIT = 6


class FrameWriter:
    """Writes whole frames to a socket; a lock keeps frames from two threads apart."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._lock = threading.Lock()

    def write(self, kind: Frame, payload: bytes | memoryview | pa.Buffer = b"") -> None:
        view = memoryview(payload)
        with self._lock:
            self._sock.sendall(_HEADER.pack(view.nbytes, kind))
            if view.nbytes:
                self._sock.sendall(view)

    def write_credit(self, count: int) -> None:
        self.write(Frame.CREDIT, _CREDIT.pack(count))


def read_frame(stream: io.BufferedIOBase) -> tuple[Frame, memoryview] | None:
    """The next frame, or None at a clean end of stream (between frames)."""
    header = stream.read(_HEADER.size)
    if not header:
        return None
    if len(header) < _HEADER.size:
        raise ChannelError("connection closed in the middle of a frame header")
    size, kind = _HEADER.unpack(header)
    payload = bytearray(size)
    if size and stream.readinto(payload) != size:
        raise ChannelError("connection closed in the middle of a frame")
    try:
        return Frame(kind), memoryview(payload)
    except ValueError:
        raise ChannelError(f"unknown frame type {kind} on a channel") from None


def read_credit(payload: memoryview) -> int:
    return int(_CREDIT.unpack(payload)[0])


class ElementEncoder:
    """Turns elements into frames, sending a SCHEMA frame whenever the batch schema changes."""

    def __init__(self, writer: FrameWriter) -> None:
        self._writer = writer
        self._schema: pa.Schema | None = None

    def write(self, element: Element) -> None:
        if not isinstance(element, pa.RecordBatch):
            self._writer.write(Frame.EVENT, encode_event(element))
        elif any(pa.types.is_dictionary(f.type) for f in element.schema):
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, element.schema) as stream:
                stream.write_batch(element)
            self._writer.write(Frame.STREAM, sink.getvalue())
        else:
            if self._schema is None or not self._schema.equals(element.schema,
                                                               check_metadata=True):
                self._schema = element.schema
                self._writer.write(Frame.SCHEMA, element.schema.serialize())
            self._writer.write(Frame.BATCH, element.serialize())


class ElementDecoder:
    """Inverse of ElementEncoder: frames in, elements out (None for a SCHEMA frame)."""

    def __init__(self, channel: str) -> None:
        self._channel = channel
        self._schema: pa.Schema | None = None

    def decode(self, kind: Frame, payload: memoryview) -> Element | None:
        if kind is Frame.EVENT:
            return decode_event(payload)
        if kind is Frame.SCHEMA:
            self._schema = pa.ipc.read_schema(pa.py_buffer(payload))
            return None
        if kind is Frame.BATCH:
            if self._schema is None:
                raise ChannelError(f"channel {self._channel}: batch before its schema")
            return pa.ipc.read_record_batch(pa.py_buffer(payload), self._schema)
        if kind is Frame.STREAM:
            return pa.ipc.open_stream(pa.py_buffer(payload)).read_next_batch()
        raise ChannelError(f"channel {self._channel}: unexpected {kind.name} frame")
