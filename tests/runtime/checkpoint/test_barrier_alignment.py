"""Barrier alignment over 2 and 3 input channels, driven by scripted arrivals of records,
watermarks, idle status, barriers and ends, read as a task reads them: every element as
soon as it arrives, unless its channel is blocked, then as soon as the channel is
unblocked (unread elements wait in their channel, in order)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowsql.errors import ExecutionError
from flowsql.runtime.checkpoint.alignment import (
    AbortAlignment,
    BarrierAligner,
    CheckpointingMode,
    Deliver,
    Snapshot,
    Unblock,
)
from flowsql.runtime.events import CheckpointBarrier, EndOfInput, SenderIdle, Watermark

EXACTLY_ONCE = CheckpointingMode.EXACTLY_ONCE
AT_LEAST_ONCE = CheckpointingMode.AT_LEAST_ONCE
IDLE = SenderIdle()
END = EndOfInput()


def B(n: int) -> CheckpointBarrier:  # noqa: N802 - reads like the papers' notation
    return CheckpointBarrier(n, timestamp=n * 1_000)


def _describe(action) -> tuple:
    if isinstance(action, Deliver):
        element = action.element
        if isinstance(element, Watermark):
            return ("wm", action.channel, element.timestamp)
        if isinstance(element, SenderIdle):
            return ("idle", action.channel)
        if isinstance(element, EndOfInput):
            return ("end", action.channel)
        return ("data", action.channel, element)
    if isinstance(action, Snapshot):
        return ("snapshot", action.barrier.checkpoint_id, action.alignment_ms)
    if isinstance(action, Unblock):
        return ("unblock", action.channels)
    assert isinstance(action, AbortAlignment)
    return ("abort", action.checkpoint_id)


def drive(aligner: BarrierAligner, arrivals: list[tuple[int, object]]
          ) -> tuple[list[tuple], list[tuple[int, object]]]:
    """The log of actions, and the elements left unread in blocked channels. Element ``i``
    arrives at ``10 * i`` ms and is read at once unless its channel is blocked."""
    waiting: list[tuple[int, object]] = []
    log: list[tuple] = []
    for index, arrival in enumerate(arrivals):
        waiting.append(arrival)
        while True:
            readable = next((i for i, (channel, _) in enumerate(waiting)
                             if not aligner.is_blocked(channel)), None)
            if readable is None:
                break
            channel, element = waiting.pop(readable)
            log += [_describe(a) for a in aligner.on_element(channel, element, 10 * index)]
    return log, waiting


# -- two inputs ----------------------------------------------------------------------------

TWO_INPUTS = [(0, "a1"), (0, B(1)), (0, "a2"), (1, "b1"), (1, Watermark(5)), (1, "b2"),
              (1, B(1)), (1, "b3"), (0, Watermark(7))]


def test_exactly_once_blocks_the_aligned_channel_until_the_last_barrier():
    log, left = drive(BarrierAligner(2, EXACTLY_ONCE), TWO_INPUTS)
    assert log == [("data", 0, "a1"), ("data", 1, "b1"), ("wm", 1, 5), ("data", 1, "b2"),
                   # first barrier read at 10 ms, the last at 60 ms
                   ("snapshot", 1, 50), ("unblock", (0,)),
                   ("data", 0, "a2"), ("data", 1, "b3"), ("wm", 0, 7)]
    assert left == []


def test_at_least_once_never_blocks_and_snapshots_at_the_last_barrier():
    log, left = drive(BarrierAligner(2, AT_LEAST_ONCE), TWO_INPUTS)
    assert log == [("data", 0, "a1"), ("data", 0, "a2"), ("data", 1, "b1"), ("wm", 1, 5),
                   ("data", 1, "b2"), ("snapshot", 1, 50), ("data", 1, "b3"), ("wm", 0, 7)]
    assert left == []


def test_records_pass_through_as_they_are():
    batch = pa.record_batch({"x": [1, 2]})
    aligner = BarrierAligner(2, EXACTLY_ONCE)
    (action,) = aligner.on_element(1, batch, 0)
    assert action == Deliver(1, batch) and action.element is batch


def test_a_newer_barrier_aborts_the_pending_alignment():
    aligner = BarrierAligner(2, EXACTLY_ONCE)
    # checkpoint 1 never reaches channel 1 (it was aborted upstream), checkpoint 2 does
    log, left = drive(aligner, [(0, B(1)), (0, "a1"), (1, "b1"), (1, B(2)), (1, "b2"),
                                (0, B(2)), (0, "a2")])
    assert log == [("data", 1, "b1"),
                   ("abort", 1), ("unblock", (0,)),
                   ("data", 0, "a1"),
                   ("snapshot", 2, 20), ("unblock", (1,)),
                   ("data", 1, "b2"), ("data", 0, "a2")]
    assert left == []
    # a late barrier of the aborted checkpoint is dropped, and blocks nothing
    assert aligner.on_element(1, B(1), 100) == ()
    assert not aligner.is_blocked(1)


def test_at_least_once_tracks_several_checkpoints_and_a_completion_aborts_older_ones():
    log, _ = drive(BarrierAligner(2, AT_LEAST_ONCE),
                   [(0, B(1)), (0, B(2)), (1, B(1)), (1, B(2)), (0, B(3)), (0, B(4)),
                    (1, B(4))])
    assert log == [("snapshot", 1, 20), ("snapshot", 2, 20), ("abort", 3), ("snapshot", 4, 10)]


def test_a_single_channel_snapshots_at_once():
    aligner = BarrierAligner(1, EXACTLY_ONCE)
    assert [_describe(a) for a in aligner.on_element(0, B(1), 5)] == [("snapshot", 1, 0)]
    assert aligner.readable_channels == (0,)


def test_coordinator_cancel_releases_the_alignment():
    aligner = BarrierAligner(2, EXACTLY_ONCE)
    aligner.on_element(0, B(1), 0)
    assert aligner.is_blocked(0) and aligner.readable_channels == (1,)
    assert [_describe(a) for a in aligner.cancel(1, "declined")] == [("abort", 1),
                                                                     ("unblock", (0,))]
    assert aligner.on_element(1, B(1), 10) == ()      # late barrier of the cancelled one
    assert aligner.cancel(7, "never seen") == ()
    assert aligner.on_element(0, B(7), 20) == ()      # ... which is dropped when it comes


def test_protocol_violations_are_errors():
    aligner = BarrierAligner(2, EXACTLY_ONCE)
    aligner.on_element(0, B(1), 0)
    with pytest.raises(ExecutionError, match="blocked"):
        aligner.on_element(0, "x", 1)
    aligner = BarrierAligner(2, AT_LEAST_ONCE)
    aligner.on_element(0, B(1), 0)
    with pytest.raises(ExecutionError, match="twice"):
        aligner.on_element(0, B(1), 1)
    aligner.on_element(1, END, 2)
    with pytest.raises(ExecutionError, match="after its end"):
        aligner.on_element(1, "x", 3)
    with pytest.raises(ExecutionError, match="no input channel"):
        aligner.on_element(2, "x", 3)


# -- three inputs, idle and ended channels --------------------------------------------------

def test_an_idle_channel_is_waited_for_and_an_ended_one_counts_as_aligned():
    arrivals = [(2, IDLE), (0, B(1)), (0, "a1"), (1, "b1"), (1, Watermark(3)), (1, B(1)),
                (1, "b2"), (2, "c1"), (2, END), (0, B(2)), (1, B(2))]
    for mode in (EXACTLY_ONCE, AT_LEAST_ONCE):
        log, left = drive(BarrierAligner(3, mode), arrivals)
        before = log[:log.index(("snapshot", 1, 70))]
        # the idle channel 2 held the alignment until it ended; its record came before
        assert ("data", 2, "c1") in before and ("end", 2) in before
        assert ("snapshot", 2, 10) in log
        assert left == []
        if mode is EXACTLY_ONCE:
            assert log == [("idle", 2), ("data", 1, "b1"), ("wm", 1, 3), ("data", 2, "c1"),
                           ("end", 2), ("snapshot", 1, 70), ("unblock", (0, 1)),
                           ("data", 0, "a1"), ("data", 1, "b2"),
                           ("snapshot", 2, 10), ("unblock", (0,))]
        else:
            assert ("data", 0, "a1") in before and ("data", 1, "b2") in before


def test_idle_status_alone_does_not_complete_an_alignment():
    log, left = drive(BarrierAligner(3, EXACTLY_ONCE),
                      [(0, B(1)), (1, B(1)), (2, IDLE), (0, "a1"), (2, B(1))])
    assert log == [("idle", 2), ("snapshot", 1, 40), ("unblock", (0, 1)), ("data", 0, "a1")]
    assert left == []


def test_every_channel_ending_completes_the_pending_alignment():
    log, _ = drive(BarrierAligner(3, EXACTLY_ONCE),
                   [(0, B(1)), (1, "b1"), (1, END), (2, END), (0, END)])
    assert log == [("data", 1, "b1"), ("end", 1), ("end", 2), ("snapshot", 1, 30),
                   ("unblock", (0,)), ("end", 0)]


# -- randomized: exactly the records before barrier n are in snapshot n --------------------

@st.composite
def channel_scripts(draw):
    channels = draw(st.integers(2, 3))
    checkpoints = draw(st.integers(1, 3))
    scripts = []
    for channel in range(channels):
        tokens: list[object] = []
        record = 0
        ends_after = draw(st.integers(0, checkpoints))     # barriers this channel carries
        for n in range(1, checkpoints + 2):
            for _ in range(draw(st.integers(0, 3))):
                kind = draw(st.sampled_from(["data", "data", "wm", "idle"]))
                if kind == "data":
                    tokens.append(f"{channel}:{record}")
                    record += 1
                else:
                    tokens.append(Watermark(record) if kind == "wm" else IDLE)
            if n > ends_after:
                if ends_after < checkpoints:
                    tokens.append(END)
                break
            tokens.append(B(n))
        scripts.append(tokens)
    order = draw(st.permutations([c for c, tokens in enumerate(scripts) for _ in tokens]))
    positions = [0] * channels
    arrivals = []
    for channel in order:
        arrivals.append((channel, scripts[channel][positions[channel]]))
        positions[channel] += 1
    return scripts, arrivals


def _records_before(scripts, checkpoint_id: int) -> set[str]:
    before = set()
    for tokens in scripts:
        for token in tokens:
            if token == B(checkpoint_id):
                break
            if isinstance(token, str):
                before.add(token)
    return before


@settings(max_examples=300, deadline=None)
@given(channel_scripts(), st.sampled_from([EXACTLY_ONCE, AT_LEAST_ONCE]))
def test_snapshots_see_the_records_before_their_barrier(case, mode):
    scripts, arrivals = case
    log, left = drive(BarrierAligner(len(scripts), mode), arrivals)
    assert left == []
    carried = sorted({t.checkpoint_id for tokens in scripts for t in tokens
                      if isinstance(t, CheckpointBarrier)})
    assert [entry[1] for entry in log if entry[0] == "snapshot"] == carried
    assert not any(entry[0] == "abort" for entry in log)
    delivered: list[str] = []
    for entry in log:
        if entry[0] == "data":
            delivered.append(entry[2])
        elif entry[0] == "snapshot":
            expected = _records_before(scripts, entry[1])
            if mode is EXACTLY_ONCE:
                assert set(delivered) == expected
            else:
                assert set(delivered) >= expected
    # every record is delivered exactly once, in its channel's order
    for channel, tokens in enumerate(scripts):
        records = [t for t in tokens if isinstance(t, str)]
        assert [r for r in delivered if r.startswith(f"{channel}:")] == records
