"""Control events that travel in-band with the data on every channel.

A channel is FIFO over data buffers *and* these events, and that order is the protocol: a
watermark promises that no earlier event time follows on that channel, a barrier separates
the records that belong to checkpoint ``n`` from those after it, and ``EndOfInput`` is the
last element a channel ever carries. Events are immutable values (they are broadcast to every
output channel, so sharing one object must be safe) and encode to a few bytes with a fixed,
versionless binary layout (a tag byte, then little-endian fields) — data, never serialized Python objects.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass
from typing import TypeAlias

from flowsql.errors import ExecutionError

#: the watermark a bounded source emits at its end: every event-time timer fires
MAX_WATERMARK = 2**63 - 1


@dataclass(frozen=True, slots=True)
class Watermark:
    """No element with an event time <= ``timestamp`` (ms since the epoch) follows."""

    timestamp: int


class BarrierKind(enum.Enum):
    """A checkpoint is owned by the runtime (recovery); a savepoint by the user (upgrades)."""

    CHECKPOINT = "checkpoint"
    SAVEPOINT = "savepoint"


@dataclass(frozen=True, slots=True)
class CheckpointBarrier:
    """Marks the position of checkpoint ``checkpoint_id`` in the stream; ``timestamp`` is the
    wall-clock ms at which the coordinator triggered it."""

    checkpoint_id: int
    timestamp: int
    kind: BarrierKind = BarrierKind.CHECKPOINT


@dataclass(frozen=True, slots=True)
class SenderIdle:
    """The sender has had no input for ``table.exec.source.idle-timeout``: until it sends
    a record or a watermark again, its channel must not hold back the receiver's watermark
    (Flink's idle watermark status)."""


@dataclass(frozen=True, slots=True)
class EndOfInput:
    """The channel's sender is done; nothing follows."""


ControlEvent: TypeAlias = Watermark | CheckpointBarrier | SenderIdle | EndOfInput

_WATERMARK, _BARRIER, _END, _IDLE = 1, 2, 3, 4
_KIND_CODES = {BarrierKind.CHECKPOINT: 0, BarrierKind.SAVEPOINT: 1}
_KINDS = {code: kind for kind, code in _KIND_CODES.items()}
_WATERMARK_LAYOUT = struct.Struct("<Bq")
_BARRIER_LAYOUT = struct.Struct("<BqqB")


def encode_event(event: ControlEvent) -> bytes:
    """The event's wire form (9 to 18 bytes)."""
    if isinstance(event, Watermark):
        return _WATERMARK_LAYOUT.pack(_WATERMARK, event.timestamp)
    if isinstance(event, CheckpointBarrier):
        return _BARRIER_LAYOUT.pack(_BARRIER, event.checkpoint_id, event.timestamp,
                                    _KIND_CODES[event.kind])
    if isinstance(event, EndOfInput):
        return bytes((_END,))
    if isinstance(event, SenderIdle):
        return bytes((_IDLE,))
    raise TypeError(f"not a control event: {event!r}")


def decode_event(data: bytes | memoryview) -> ControlEvent:
    """Inverse of ``encode_event``; a malformed frame raises ExecutionError (corrupt channel)."""
    try:
        tag = data[0]
        if tag == _WATERMARK and len(data) == _WATERMARK_LAYOUT.size:
            return Watermark(_WATERMARK_LAYOUT.unpack(data)[1])
        if tag == _BARRIER and len(data) == _BARRIER_LAYOUT.size:
            _, checkpoint_id, timestamp, kind = _BARRIER_LAYOUT.unpack(data)
            return CheckpointBarrier(checkpoint_id, timestamp, _KINDS[kind])
        if tag == _END and len(data) == 1:
            return EndOfInput()
        if tag == _IDLE and len(data) == 1:
            return SenderIdle()
    except (IndexError, KeyError, struct.error):
        pass
    raise ExecutionError(f"corrupt control event on a channel: {bytes(data[:32]).hex()}")
