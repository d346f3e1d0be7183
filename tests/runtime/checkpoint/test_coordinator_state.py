"""The coordinator's checkpoint bookkeeping as a state machine, driven by scripted events."""

from __future__ import annotations

import pytest

from flowsql.errors import ExecutionError
from flowsql.runtime.checkpoint.coordinator_state import (
    Aborted,
    AllAcknowledged,
    CheckpointCoordinatorState,
    CheckpointingConfig,
    JobVertex,
    Late,
    NotTriggered,
    StillPending,
    Triggered,
)
from flowsql.runtime.checkpoint.metadata import StateFileHandle, SubtaskState

VERTICES = (JobVertex("source", 1, 128), JobVertex("agg", 2, 128))


def _coordinator(**config) -> CheckpointCoordinatorState:
    return CheckpointCoordinatorState("job", CheckpointingConfig(**{"interval_ms": 1_000,
                                                                     **config}),
                                      VERTICES, started_ms=0)


def _state(checkpoint_id: int, subtask: int, shared: tuple[str, ...] = ()) -> SubtaskState:
    handle = StateFileHandle("keyed/s", f"chk-{checkpoint_id}/x/{subtask}/s.arrow", 10, 1)
    return SubtaskState(subtask, (handle,), shared)


def _acknowledge_all(coordinator, checkpoint_id: int, now_ms: int) -> AllAcknowledged:
    outcomes = [coordinator.acknowledge(checkpoint_id, "source", _state(checkpoint_id, 0),
                                        now_ms),
                coordinator.acknowledge(checkpoint_id, "agg", _state(checkpoint_id, 1), now_ms),
                coordinator.acknowledge(checkpoint_id, "agg", _state(checkpoint_id, 0), now_ms)]
    assert outcomes[:2] == [StillPending(checkpoint_id, 2), StillPending(checkpoint_id, 1)]
    assert isinstance(outcomes[2], AllAcknowledged)
    return outcomes[2]


def test_a_checkpoint_completes_when_every_subtask_acknowledged_and_notifies_after_metadata():
    coordinator = _coordinator()
    assert coordinator.trigger(999) == NotTriggered("interval or minimum pause not elapsed",
                                                    1_000)
    assert coordinator.trigger(1_000) == Triggered(1, 1_000, "checkpoint")
    done = _acknowledge_all(coordinator, 1, now_ms=1_300)
    metadata = done.metadata
    assert (metadata.checkpoint_id, metadata.timestamp_ms, metadata.completed_ms) == \
        (1, 1_000, 1_300)
    assert [(op.operator_id, [s.subtask for s in op.subtasks]) for op in metadata.operators] \
        == [("source", [0]), ("agg", [0, 1])]
    # acknowledged but not yet durable: nothing is notified, the checkpoint is still pending
    assert coordinator.pending_ids == (1,) and coordinator.last_completed_id is None
    notice = coordinator.metadata_written(1, now_ms=1_400)
    assert notice.checkpoint_id == 1 and notice.subsumed == ()
    assert notice.notify == (("source", 0), ("agg", 0), ("agg", 1))
    assert coordinator.pending_ids == () and coordinator.last_completed_id == 1


def test_notification_requires_full_acknowledgement():
    coordinator = _coordinator()
    coordinator.trigger(1_000)
    coordinator.acknowledge(1, "source", _state(1, 0), 1_100)
    with pytest.raises(ExecutionError):
        coordinator.metadata_written(1, 1_200)


def test_max_concurrent_one_and_min_pause_after_completion():
    coordinator = _coordinator(min_pause_ms=500)
    assert isinstance(coordinator.trigger(1_000), Triggered)
    refused = coordinator.trigger(2_500)
    assert isinstance(refused, NotTriggered) and refused.retry_at_ms is None
    _acknowledge_all(coordinator, 1, 2_800)
    # still counts as in progress while its metadata is written
    assert isinstance(coordinator.trigger(2_900), NotTriggered)
    coordinator.metadata_written(1, 3_000)
    # interval since the trigger has passed, the pause since the completion has not
    assert coordinator.trigger(3_200) == NotTriggered("interval or minimum pause not elapsed",
                                                      3_500)
    assert coordinator.trigger(3_500) == Triggered(2, 3_500, "checkpoint")


def test_savepoints_are_forced_and_ids_are_never_reused():
    coordinator = _coordinator()
    assert isinstance(coordinator.trigger(10), NotTriggered)
    assert coordinator.trigger(10, kind="savepoint") == Triggered(1, 10, "savepoint")
    assert coordinator.trigger(20, kind="savepoint") == Triggered(2, 20, "savepoint")
    aborted = coordinator.abort_all("job failed")
    assert [a.checkpoint_id for a in aborted] == [1, 2]
    assert all(not a.fail_job for a in aborted)
    assert coordinator.trigger(5_000) == Triggered(3, 5_000, "checkpoint")
    with pytest.raises(ValueError):
        coordinator.trigger(9_000, kind="snapshot")


def test_expiry_decline_and_tolerable_failures():
    coordinator = _coordinator(timeout_ms=2_000, tolerable_failures=1)
    coordinator.trigger(1_000)
    coordinator.acknowledge(1, "agg", _state(1, 0), 1_500)
    assert coordinator.expire(2_999) == ()
    (expired,) = coordinator.expire(3_000)
    assert expired.checkpoint_id == 1 and "expired" in expired.reason
    assert expired.acknowledged == (_state(1, 0),)     # its uploads are to be deleted
    assert not expired.fail_job                        # one failure is tolerated
    coordinator.trigger(4_000)
    declined = coordinator.decline(2, "agg", 1, "disk full")
    assert isinstance(declined, Aborted) and declined.fail_job
    assert "subtask 1 of 'agg'" in declined.reason
    assert coordinator.decline(2, "agg", 0, "again") is None   # already gone
    # a late acknowledgement belongs to no checkpoint: its files are to be deleted
    assert coordinator.acknowledge(2, "source", _state(2, 0), 4_100) == Late(2, _state(2, 0))
    # a completion resets the count of consecutive failures
    coordinator.trigger(5_000)
    _acknowledge_all(coordinator, 3, 5_100)
    coordinator.metadata_written(3, 5_200)
    assert coordinator.consecutive_failures == 0


def test_expiry_spares_a_checkpoint_whose_metadata_is_being_written():
    coordinator = _coordinator(timeout_ms=100)
    coordinator.trigger(1_000)
    _acknowledge_all(coordinator, 1, 1_050)
    assert coordinator.expire(5_000) == ()
    failed = coordinator.metadata_failed(1, "storage unavailable")
    assert failed.fail_job and coordinator.pending_ids == ()


def test_completion_subsumes_older_pending_checkpoints():
    coordinator = _coordinator(max_concurrent=2)
    coordinator.trigger(1_000)
    coordinator.trigger(2_000)
    coordinator.acknowledge(1, "source", _state(1, 0, ("shared/a",)), 2_100)
    coordinator.acknowledge(2, "agg", _state(2, 1, ("shared/b",)), 2_100)
    assert coordinator.shared_files_in_use() == {1: ("shared/a",), 2: ("shared/b",)}
    assert isinstance(coordinator.trigger(3_000), NotTriggered)
    coordinator.acknowledge(2, "source", _state(2, 0), 2_200)
    assert isinstance(coordinator.acknowledge(2, "agg", _state(2, 0), 2_300), AllAcknowledged)
    notice = coordinator.metadata_written(2, 2_400)
    assert [(a.checkpoint_id, a.fail_job) for a in notice.subsumed] == [(1, False)]
    assert coordinator.pending_ids == () and coordinator.consecutive_failures == 0


def test_duplicate_and_unknown_acknowledgements_are_protocol_errors():
    coordinator = _coordinator()
    coordinator.trigger(1_000)
    coordinator.acknowledge(1, "agg", _state(1, 0), 1_100)
    with pytest.raises(ExecutionError, match="duplicate"):
        coordinator.acknowledge(1, "agg", _state(1, 0), 1_200)
    with pytest.raises(ExecutionError, match="unexpected"):
        coordinator.acknowledge(1, "agg", _state(1, 2), 1_200)
    with pytest.raises(ExecutionError, match="unexpected"):
        coordinator.acknowledge(1, "sink", _state(1, 0), 1_200)


def test_configuration_is_validated():
    for bad in ({"interval_ms": 0}, {"interval_ms": 1, "max_concurrent": 0},
                {"interval_ms": 1, "min_pause_ms": -1}):
        with pytest.raises(ValueError):
            CheckpointingConfig(**bad)


def test_a_failover_does_not_abort_a_checkpoint_whose_metadata_is_being_written():
    coordinator = _coordinator()
    assert coordinator.trigger(10, kind="savepoint") == Triggered(1, 10, "savepoint")
    for key in coordinator.subtasks():
        result = coordinator.acknowledge(1, key[0], SubtaskState(key[1]), 20)
    assert isinstance(result, AllAcknowledged)
    assert coordinator.trigger(30, kind="savepoint") == Triggered(2, 30, "savepoint")
    assert [a.checkpoint_id for a in coordinator.abort_all("job failed")] == [2]
    notice = coordinator.metadata_written(1, 40)  # still completes
    assert notice.checkpoint_id == 1
