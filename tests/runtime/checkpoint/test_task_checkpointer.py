"""The task side of checkpoints: what the checkpointer does with barriers, channel ends and
the coordinator's commands, seen through a recording run and gate."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pytest

from flowsql.runtime.checkpoint.alignment import CheckpointingMode
from flowsql.runtime.checkpoint.metadata import SubtaskState
from flowsql.runtime.checkpoint.task_checkpointer import (
    Acknowledgement,
    Decline,
    InputEnded,
    TaskCheckpointer,
)
from flowsql.runtime.events import CheckpointBarrier, EndOfInput

EXACTLY, AT_LEAST = CheckpointingMode.EXACTLY_ONCE, CheckpointingMode.AT_LEAST_ONCE


class RecordingRun:
    """Records the calls a checkpointer makes on its run, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def snapshot(self, checkpoint_id: int) -> dict[str, dict[str, pa.Table]]:
        self.calls.append(("snapshot", checkpoint_id))
        return {"stage-0/0": {"list/x": pa.table({"x": [checkpoint_id]})}}

    def emit_barrier(self, barrier: CheckpointBarrier) -> None:
        self.calls.append(("barrier", barrier.checkpoint_id))

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self.calls.append(("complete", checkpoint_id))

    def cancel(self) -> None:
        self.calls.append(("cancel", 0))


class RecordingGate:
    def __init__(self) -> None:
        self.blocked: set[int] = set()

    def block(self, channel: int) -> None:
        self.blocked.add(channel)

    def unblock(self, channel: int) -> None:
        self.blocked.discard(channel)


class Reports:
    def __init__(self) -> None:
        self.items: list[Acknowledgement | Decline | InputEnded] = []
        self.arrived = threading.Condition()

    def __call__(self, message: Acknowledgement | Decline | InputEnded) -> None:
        with self.arrived:
            self.items.append(message)
            self.arrived.notify_all()

    def wait_for(self, count: int) -> list[Any]:
        with self.arrived:
            assert self.arrived.wait_for(lambda: len(self.items) >= count, timeout=10)
            return list(self.items)


def _persist(checkpoint_id: int, operator_id: str,
             tables: Mapping[str, pa.Table]) -> SubtaskState:
    return SubtaskState(0, source_position={"checkpoint": checkpoint_id, "operator": operator_id,
                                            "tables": sorted(tables)})


def _checkpointer(mode: CheckpointingMode, channels: int, own_sources: bool,
                  reports: Reports, gate: RecordingGate | None = None) -> TaskCheckpointer:
    return TaskCheckpointer(mode, channels, own_sources, _persist, reports, gate=gate)


def _barrier(n: int) -> CheckpointBarrier:
    return CheckpointBarrier(n, 1_000 + n)


@pytest.mark.parametrize("channels", [2, 3])
def test_exactly_once_blocks_each_channel_until_every_barrier_arrived(channels: int) -> None:
    run, gate, reports = RecordingRun(), RecordingGate(), Reports()
    checkpointer = _checkpointer(EXACTLY, channels, False, reports, gate)
    for channel in range(channels - 1):
        checkpointer.gate_barrier_read(channel)  # the reader stops at the barrier at once
        checkpointer.on_channel_event(run, channel, _barrier(1))
        assert gate.blocked == set(range(channel + 1))
        assert run.calls == []  # no snapshot before the last channel's barrier
    checkpointer.gate_barrier_read(channels - 1)
    checkpointer.on_channel_event(run, channels - 1, _barrier(1))
    assert run.calls == [("snapshot", 1), ("barrier", 1)]  # snapshot, then forward
    assert gate.blocked == set()  # every channel is read again
    (ack,) = reports.wait_for(1)
    assert isinstance(ack, Acknowledgement) and ack.checkpoint_id == 1
    assert ack.states["stage-0/0"].source_position == {
        "checkpoint": 1, "operator": "stage-0/0", "tables": ["list/x"]}
    checkpointer.close()


def test_at_least_once_never_blocks_and_snapshots_on_the_last_barrier() -> None:
    run, gate, reports = RecordingRun(), RecordingGate(), Reports()
    checkpointer = _checkpointer(AT_LEAST, 3, False, reports, gate)
    for channel in range(3):
        checkpointer.gate_barrier_read(channel)
        assert gate.blocked == set()
        checkpointer.on_channel_event(run, channel, _barrier(4))
    assert run.calls == [("snapshot", 4), ("barrier", 4)]
    checkpointer.close()


def test_an_ended_channel_counts_as_aligned() -> None:
    run, gate, reports = RecordingRun(), RecordingGate(), Reports()
    checkpointer = _checkpointer(EXACTLY, 2, False, reports, gate)
    checkpointer.gate_barrier_read(0)
    checkpointer.on_channel_event(run, 0, _barrier(2))
    assert run.calls == [] and gate.blocked == {0}
    checkpointer.on_channel_event(run, 1, EndOfInput())
    assert run.calls == [("snapshot", 2), ("barrier", 2)]
    assert gate.blocked == set()
    checkpointer.gate_barrier_read(0)  # the next checkpoint needs channel 0 alone
    checkpointer.on_channel_event(run, 0, _barrier(3))
    assert run.calls[-2:] == [("snapshot", 3), ("barrier", 3)]
    checkpointer.close()


def test_own_sources_pause_while_an_exchange_input_is_missing_its_barrier() -> None:
    run, gate, reports = RecordingRun(), RecordingGate(), Reports()
    checkpointer = _checkpointer(EXACTLY, 1, True, reports, gate)
    checkpointer.commands.put({"type": "trigger", "checkpoint": 5, "timestamp": 0})
    checkpointer.on_turn(run)
    assert checkpointer.sources_paused and run.calls == []
    checkpointer.gate_barrier_read(0)
    checkpointer.on_channel_event(run, 0, _barrier(5))
    assert not checkpointer.sources_paused
    assert run.calls == [("snapshot", 5), ("barrier", 5)]
    checkpointer.close()


def test_a_task_with_only_its_own_sources_snapshots_on_the_trigger() -> None:
    run, reports = RecordingRun(), Reports()
    checkpointer = _checkpointer(EXACTLY, 0, True, reports)
    for command in ({"type": "trigger", "checkpoint": 1, "timestamp": 0},
                    {"type": "complete", "checkpoint": 1},
                    {"type": "stop"}):
        checkpointer.commands.put(command)
    checkpointer.on_turn(run)
    assert run.calls == [("snapshot", 1), ("barrier", 1), ("complete", 1), ("cancel", 0)]
    checkpointer.close()


def test_a_newer_barrier_aborts_the_pending_alignment_and_unblocks() -> None:
    run, gate, reports = RecordingRun(), RecordingGate(), Reports()
    checkpointer = _checkpointer(EXACTLY, 2, False, reports, gate)
    checkpointer.gate_barrier_read(0)
    checkpointer.on_channel_event(run, 0, _barrier(1))
    checkpointer.gate_barrier_read(1)
    checkpointer.on_channel_event(run, 1, _barrier(2))  # checkpoint 1 is given up here
    assert gate.blocked == {1} and run.calls == []
    checkpointer.gate_barrier_read(0)
    checkpointer.on_channel_event(run, 0, _barrier(2))
    assert run.calls == [("snapshot", 2), ("barrier", 2)] and gate.blocked == set()
    checkpointer.close()


def test_end_of_input_waits_for_the_final_checkpoint() -> None:
    run, reports = RecordingRun(), Reports()
    ended = []
    checkpointer = TaskCheckpointer(EXACTLY, 0, True, _persist, reports,
                                    before_final=lambda: ended.append(True))
    checkpointer.commands.put({"type": "complete", "checkpoint": 3})  # an earlier one
    checkpointer.commands.put({"type": "final", "checkpoint": 4})
    checkpointer.commands.put({"type": "complete", "checkpoint": 4})
    checkpointer.on_end_of_input(run)
    assert ended == [True]
    assert run.calls == [("complete", 3), ("snapshot", 4), ("complete", 4)]
    first, second = reports.wait_for(2)
    assert isinstance(first, InputEnded)
    assert isinstance(second, Acknowledgement) and second.checkpoint_id == 4
    checkpointer.close()


def test_a_failed_upload_declines_the_checkpoint() -> None:
    run, reports = RecordingRun(), Reports()

    def failing(checkpoint_id: int, operator_id: str, tables: Mapping[str, pa.Table]
                ) -> SubtaskState:
        raise OSError("disk full")

    checkpointer = TaskCheckpointer(EXACTLY, 0, True, failing, reports)
    checkpointer.commands.put({"type": "trigger", "checkpoint": 7, "timestamp": 0})
    checkpointer.on_turn(run)
    (decline,) = reports.wait_for(1)
    assert decline == Decline(7, "OSError: disk full")
    checkpointer.close()


def test_a_trigger_during_an_alignment_of_the_own_sources_waits_its_turn() -> None:
    run, gate, reports = RecordingRun(), RecordingGate(), Reports()
    checkpointer = _checkpointer(EXACTLY, 1, True, reports, gate)
    checkpointer.commands.put({"type": "trigger", "checkpoint": 1, "timestamp": 0})
    checkpointer.commands.put({"type": "trigger", "checkpoint": 2, "timestamp": 0})
    checkpointer.on_turn(run)
    assert checkpointer.sources_paused and run.calls == []
    checkpointer.gate_barrier_read(0)
    checkpointer.on_channel_event(run, 0, _barrier(1))
    assert run.calls == [("snapshot", 1), ("barrier", 1)]
    checkpointer.on_turn(run)  # now the sources' barrier 2 goes out
    checkpointer.gate_barrier_read(0)
    checkpointer.on_channel_event(run, 0, _barrier(2))
    assert run.calls[2:] == [("snapshot", 2), ("barrier", 2)]
    checkpointer.close()
