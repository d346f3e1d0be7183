"""Control events: immutable values with a compact, stable binary form."""

from __future__ import annotations

import dataclasses

import pytest

from flowsql.errors import ExecutionError
from flowsql.runtime.events import (
    MAX_WATERMARK,
    BarrierKind,
    CheckpointBarrier,
    EndOfInput,
    Watermark,
    decode_event,
    encode_event,
)

EVENTS = [Watermark(0), Watermark(-5), Watermark(MAX_WATERMARK),
          CheckpointBarrier(1, 1_700_000_000_000),
          CheckpointBarrier(2**40, 7, BarrierKind.SAVEPOINT), EndOfInput()]


@pytest.mark.parametrize("event", EVENTS)
def test_encoding_round_trips(event: object) -> None:
    encoded = encode_event(event)  # type: ignore[arg-type]
    assert len(encoded) <= 18
    assert decode_event(encoded) == event


def test_encoding_is_fixed() -> None:
    # The wire form is a format: a change breaks mixed-version clusters.
    assert encode_event(Watermark(1)).hex() == "010100000000000000"
    assert encode_event(EndOfInput()).hex() == "03"
    assert encode_event(CheckpointBarrier(3, 4, BarrierKind.SAVEPOINT)).hex() == (
        "02" + "0300000000000000" + "0400000000000000" + "01")


def test_events_are_immutable_values() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        Watermark(1).timestamp = 2  # type: ignore[misc]
    assert CheckpointBarrier(1, 2) == CheckpointBarrier(1, 2, BarrierKind.CHECKPOINT)
    assert len({Watermark(1), Watermark(1), EndOfInput(), EndOfInput()}) == 2


@pytest.mark.parametrize("data", [b"", b"\x09", b"\x01\x00", b"\x02" + b"\x00" * 16 + b"\x05",
                                  b"\x03\x00"])
def test_corrupt_frames_raise_execution_error(data: bytes) -> None:
    with pytest.raises(ExecutionError, match="corrupt control event"):
        decode_event(data)
