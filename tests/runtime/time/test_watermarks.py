"""Watermark generation (per record and periodic) and merging across inputs."""

from __future__ import annotations

import pytest

from flowsql.errors import ExecutionError
from flowsql.runtime.time.watermark_merger import WatermarkMerger
from flowsql.runtime.time.watermarks import MIN_WATERMARK, BoundedOutOfOrderness


class Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


def test_interval_zero_gives_each_record_the_watermark_at_its_arrival():
    generator = BoundedOutOfOrderness(delay_ms=5)
    first = generator.on_batch([10, 8, 20, 3])
    assert first.row_watermarks.tolist() == [MIN_WATERMARK, 5, 5, 15]
    assert first.emit == 15
    second = generator.on_batch([12, 30])
    assert second.row_watermarks.tolist() == [15, 15]
    assert second.emit == 25
    assert generator.on_batch([1]).emit is None  # never backwards, nothing new


def test_periodic_mode_emits_at_most_once_per_interval():
    clock = Clock()
    generator = BoundedOutOfOrderness(delay_ms=0, interval_ms=200, clock=clock)
    batch = generator.on_batch([10, 50])
    assert batch.row_watermarks.tolist() == [MIN_WATERMARK, MIN_WATERMARK]
    assert batch.emit is None
    clock.now = 200
    assert generator.on_batch([40]).emit == 50
    assert generator.on_batch([70]).row_watermarks.tolist() == [50]
    clock.now = 300
    assert generator.on_periodic() is None
    clock.now = 400
    assert generator.on_periodic() == 70


def test_negative_delay_is_rejected():
    with pytest.raises(ExecutionError, match="negative"):
        BoundedOutOfOrderness(delay_ms=-1)


def test_merging_takes_the_minimum_and_never_goes_back():
    merger = WatermarkMerger(2)
    assert merger.on_watermark(0, 10) is None  # input 1 has promised nothing yet
    assert merger.on_watermark(1, 5) == 5
    assert merger.on_watermark(1, 20) == 10
    assert merger.on_watermark(0, 8) is None
    assert merger.on_watermark(0, 30) == 20


def test_idle_inputs_are_excluded_until_they_speak_again():
    clock = Clock()
    merger = WatermarkMerger(3, idle_timeout_ms=1000, clock=clock)
    merger.on_watermark(0, 100)
    merger.on_watermark(1, 50)
    clock.now = 600
    merger.on_watermark(0, 120)
    merger.on_records(1)
    clock.now = 1200
    assert merger.check_idle() == 50  # input 2 (silent since 0) is idle now
    assert merger.is_idle(2) and not merger.is_idle(1)
    clock.now = 1500
    assert merger.on_watermark(0, 130) is None  # input 1 (at 50) still holds it back
    clock.now = 1700
    assert merger.check_idle() == 130  # input 1 silent since 600: only input 0 is left
    merger.on_records(1)  # active again, behind: the combined watermark stays
    assert merger.on_watermark(1, 60) is None
    assert merger.combined == 130
    clock.now = 5000
    assert merger.check_idle() is None  # all idle: the largest (130) is already out


def test_when_every_input_is_idle_the_largest_watermark_goes_out():
    """Input 0 reached 500 and went idle first; input 1 (at 100) holds time back until it
    goes idle too: then nothing can move time on, and input 0's 500 is released."""
    merger = WatermarkMerger(2)
    assert merger.on_watermark(0, 500) is None
    assert merger.on_watermark(1, 100) == 100
    assert merger.mark_idle(0) is None
    assert merger.mark_idle(1) == 500
    merger.on_records(1)  # active again: never backwards
    assert merger.on_watermark(1, 200) is None and merger.combined == 500
