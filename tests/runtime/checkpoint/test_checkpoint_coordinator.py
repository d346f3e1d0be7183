"""The coordinator of a running job over a real checkpoint directory: triggers, completion
(metadata first, then the notices), retention, the final checkpoint, failures."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from flowsql.runtime.checkpoint.config import CheckpointSettings
from flowsql.runtime.checkpoint.coordinator import CheckpointCoordinator
from flowsql.runtime.checkpoint.coordinator_state import JobVertex
from flowsql.runtime.checkpoint.metadata import SubtaskState
from flowsql.runtime.checkpoint.storage import CheckpointStorage

VERTICES = [JobVertex("stage-0/0", 2, 128), JobVertex("stage-1/0", 1, 128)]


class Calls:
    def __init__(self) -> None:
        self.triggered: list[int] = []
        self.completed: list[int] = []
        self.final: list[int] = []
        self.failed: list[str] = []
        self.changed = threading.Condition()

    def record(self, into: list, value: object) -> None:
        with self.changed:
            into.append(value)
            self.changed.notify_all()

    def wait(self, predicate: object, timeout: float = 10.0) -> None:
        with self.changed:
            assert self.changed.wait_for(predicate, timeout)  # type: ignore[arg-type]


def _coordinator(tmp_path: Path, calls: Calls, **settings: str) -> CheckpointCoordinator:
    values = {"execution.checkpointing.interval": "50 ms",
              "execution.checkpointing.dir": str(tmp_path), **settings}
    config = CheckpointSettings.of(values)
    assert config is not None
    storage = CheckpointStorage.from_uri(str(tmp_path), "job")
    return CheckpointCoordinator(
        config, storage, VERTICES,
        trigger=lambda n, ts: calls.record(calls.triggered, n),
        complete=lambda n: calls.record(calls.completed, n),
        fail_job=lambda reason: calls.record(calls.failed, reason),
        final=lambda n: calls.record(calls.final, n), tasks=3)


def _acknowledge_all(coordinator: CheckpointCoordinator, checkpoint_id: int) -> None:
    coordinator.acknowledge(checkpoint_id, {"stage-0/0": SubtaskState(0)})
    coordinator.acknowledge(checkpoint_id, {"stage-0/0": SubtaskState(1)})
    coordinator.acknowledge(checkpoint_id, {"stage-1/0": SubtaskState(0)}, alignment_ms=7)


def test_a_checkpoint_completes_after_every_subtask_acknowledged(tmp_path: Path) -> None:
    calls = Calls()
    coordinator = _coordinator(tmp_path, calls)
    coordinator.start()
    try:
        calls.wait(lambda: calls.triggered)
        first = calls.triggered[0]
        coordinator.acknowledge(first, {"stage-0/0": SubtaskState(0)})
        coordinator.acknowledge(first, {"stage-0/0": SubtaskState(1)})
        time.sleep(0.2)
        assert calls.completed == []  # one subtask is missing
        assert calls.triggered == [first]  # at most one checkpoint at a time
        coordinator.acknowledge(first, {"stage-1/0": SubtaskState(0)}, alignment_ms=7)
        assert calls.completed == [first]
        assert (tmp_path / "job" / f"chk-{first}" / "_metadata").exists()
        summary = coordinator.summary()
        assert summary["checkpoints_completed"] == 1
        assert summary["last_checkpoint"]["id"] == first
        assert summary["last_checkpoint"]["alignment_ms"] == 7
        calls.wait(lambda: len(calls.triggered) == 2)
        second = calls.triggered[1]
        _acknowledge_all(coordinator, second)
        # num-retained 1: the older checkpoint is gone once the newer completed
        assert not (tmp_path / "job" / f"chk-{first}").exists()
        assert (tmp_path / "job" / f"chk-{second}" / "_metadata").exists()
    finally:
        coordinator.stop()


def test_the_final_checkpoint_follows_the_end_of_every_task(tmp_path: Path) -> None:
    calls = Calls()
    coordinator = _coordinator(tmp_path, calls, **{"execution.checkpointing.interval": "1 h"})
    coordinator.start()
    try:
        coordinator.input_ended()
        coordinator.input_ended()
        assert calls.final == []
        coordinator.input_ended()
        assert calls.final == [1] and calls.triggered == []
        _acknowledge_all(coordinator, 1)
        assert calls.completed == [1]
    finally:
        coordinator.stop()


def test_a_declined_final_checkpoint_fails_the_job(tmp_path: Path) -> None:
    calls = Calls()
    coordinator = _coordinator(tmp_path, calls, **{"execution.checkpointing.interval": "1 h"})
    for _ in range(3):
        coordinator.input_ended()
    coordinator.decline(calls.final[0], "disk full")
    assert len(calls.failed) == 1 and "final checkpoint" in calls.failed[0]
    assert not (tmp_path / "job" / f"chk-{calls.final[0]}").exists()
    coordinator.stop()


def test_expired_checkpoints_beyond_the_tolerance_fail_the_job(tmp_path: Path) -> None:
    calls = Calls()
    coordinator = _coordinator(tmp_path, calls, **{"execution.checkpointing.timeout": "100 ms"})
    coordinator.start()
    try:
        calls.wait(lambda: calls.failed, timeout=10)
        assert "tolerable-failed-checkpoints" in calls.failed[0]
        assert coordinator.summary()["checkpoints_failed"] >= 1
    finally:
        coordinator.stop()


def test_a_forced_checkpoint_for_a_stop_can_be_awaited(tmp_path: Path) -> None:
    calls = Calls()
    coordinator = _coordinator(tmp_path, calls, **{"execution.checkpointing.interval": "1 h"})
    checkpoint_id = coordinator.trigger_now()
    assert checkpoint_id == 1 and calls.triggered == [1]
    threading.Timer(0.1, _acknowledge_all, (coordinator, 1)).start()
    assert coordinator.wait_completed(1, 10)
    assert calls.completed == [1]
    coordinator.stop()
