"""Exactly-once delivery of the Kafka sink against a real broker: the write-ahead
transactions of ``flowsql.runtime.connectors.kafka.transactions``.

Each test plays the task's calls on ``KafkaSink`` (restore_state, write, snapshot_state,
notify_checkpoint_complete, finish, close) and reads the topic back. Reads use
``read_uncommitted``: the sink produces a checkpoint's records only inside the transaction
that commits them, so even an uncommitted-isolation reader must see exactly the committed
rows (this also avoids the test broker's gap of showing aborted records to read_committed
readers). Every expectation is the list of ids, duplicates kept."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pyarrow as pa
import pytest

from flowsql.errors import CatalogError, ExecutionError
from flowsql.planner.catalog import TableEntry
from flowsql.runtime.connectors.kafka.transactions import STATE
from flowsql.runtime.state.store import merge_snapshots
from tests.runtime.connectors.kafka.test_sink import (
    ids_batch,
    kafka_table,
    new_topic,
    open_sink,
)


def exactly_once_table(broker: Any, topic: str, prefix: str | None = None,
                       **options: str) -> TableEntry:
    return kafka_table(broker, topic, **{
        "sink.delivery-guarantee": "exactly-once",
        "sink.transactional-id-prefix": prefix or f"txn-{uuid.uuid4().hex[:8]}", **options})


def visible_ids(broker: Any, topic: str) -> list[int]:
    """Every id in the topic, sorted, duplicates kept."""
    values = [m.value() for m in broker.read_all(topic, isolation="read_uncommitted")]
    return sorted(json.loads(v)["id"] for v in values)


def test_rows_become_visible_when_their_checkpoint_completes(kafka_broker: Any) -> None:
    topic = new_topic(kafka_broker, partitions=2)
    sink = open_sink(exactly_once_table(kafka_broker, topic))
    sink.write(ids_batch([1, 2]), None)
    first = sink.snapshot_state(1)
    sink.write(ids_batch([3]), None)
    second = sink.snapshot_state(2)
    sink.write(ids_batch([4]), None)  # after the last snapshot: in no checkpoint yet
    assert visible_ids(kafka_broker, topic) == []
    assert first[STATE].column("checkpoint").to_pylist() == [1, 1]
    assert second[STATE].column("checkpoint").to_pylist() == [1, 1, 2]
    sink.notify_checkpoint_complete(1)
    assert visible_ids(kafka_broker, topic) == [1, 2]
    assert sink.snapshot_state(3)[STATE].column("checkpoint").to_pylist() == [2, 3]
    sink.notify_checkpoint_complete(3)  # subsumes checkpoint 2, whose notification never came
    assert visible_ids(kafka_broker, topic) == [1, 2, 3, 4]
    assert sink.snapshot_state(4)[STATE].num_rows == 0
    sink.close()
    assert visible_ids(kafka_broker, topic) == [1, 2, 3, 4]


def test_the_state_holds_the_encoded_records(kafka_broker: Any) -> None:
    topic = new_topic(kafka_broker)
    table = exactly_once_table(kafka_broker, topic, **{"key.format": "raw",
                                                        "key.fields": "name"})
    sink = open_sink(table, subtask=0, parallelism=1)
    sink.write(ids_batch([5], ["five"]), None)
    state = sink.snapshot_state(7)[STATE]
    sink.close()
    row = state.to_pylist()[0]
    assert {k: row[k] for k in ("writer", "checkpoint", "topic", "key", "value",
                                "timestamp", "headers")} == {
        "writer": 0, "checkpoint": 7, "topic": topic, "key": b"five",
        "value": b'{"id":5,"name":"five"}', "timestamp": None, "headers": None}


def test_restoring_a_committed_checkpoint_commits_nothing_again(kafka_broker: Any) -> None:
    topic = new_topic(kafka_broker)
    table = exactly_once_table(kafka_broker, topic)
    sink = open_sink(table)
    sink.write(ids_batch([1, 2]), None)
    state = sink.snapshot_state(1)
    sink.notify_checkpoint_complete(1)
    sink.close()   # a failure right after the commit
    restored = open_sink(table, attempt=1)
    restored.restore_state(state)
    restored.write(ids_batch([3]), None)
    restored.notify_checkpoint_complete(2)  # nothing was snapshotted for 2: nothing to do
    restored.snapshot_state(2)
    restored.notify_checkpoint_complete(2)
    restored.close()
    assert visible_ids(kafka_broker, topic) == [1, 2, 3]


def test_restoring_an_uncommitted_checkpoint_commits_it_once(kafka_broker: Any) -> None:
    topic = new_topic(kafka_broker)
    table = exactly_once_table(kafka_broker, topic)
    sink = open_sink(table)
    sink.write(ids_batch([1]), None)
    sink.snapshot_state(1)
    sink.write(ids_batch([2]), None)
    state = sink.snapshot_state(2)
    sink.notify_checkpoint_complete(1)
    sink.write(ids_batch([99]), None)  # after checkpoint 2: replayed by the sources
    sink.close()   # checkpoint 2 completed, its notification never arrived
    assert visible_ids(kafka_broker, topic) == [1]
    for attempt in (1, 2):   # the second restore finds everything committed
        restored = open_sink(table, attempt=attempt)
        restored.restore_state(state)
        restored.close()
        assert visible_ids(kafka_broker, topic) == [1, 2]


def test_a_later_checkpoint_after_a_restore_commits_its_own_rows(kafka_broker: Any) -> None:
    topic = new_topic(kafka_broker)
    table = exactly_once_table(kafka_broker, topic)
    sink = open_sink(table)
    sink.write(ids_batch([1]), None)
    state = sink.snapshot_state(5)
    sink.close()
    restored = open_sink(table, attempt=1)
    restored.restore_state(state)
    restored.write(ids_batch([2]), None)
    later = restored.snapshot_state(6)
    restored.close()   # fails before checkpoint 6 is notified
    again = open_sink(table, attempt=2)
    again.restore_state(later)
    again.close()
    assert visible_ids(kafka_broker, topic) == [1, 2]


def test_checkpoint_ids_starting_again_in_a_new_job_still_commit(kafka_broker: Any) -> None:
    """A new job restored from a savepoint numbers its checkpoints from 1 again; the
    markers compare commit sequences, not checkpoint ids."""
    topic = new_topic(kafka_broker)
    table = exactly_once_table(kafka_broker, topic)
    old = open_sink(table)
    old.write(ids_batch([1]), None)
    savepoint = old.snapshot_state(40)
    old.notify_checkpoint_complete(40)
    old.close()
    new_job = open_sink(table)
    new_job.restore_state(savepoint)
    new_job.write(ids_batch([2]), None)
    state = new_job.snapshot_state(1)
    new_job.close()   # checkpoint 1 of the new job completed, not notified
    restarted = open_sink(table, attempt=1)
    restarted.restore_state(state)
    restarted.close()
    assert visible_ids(kafka_broker, topic) == [1, 2]


def test_rescaled_restore_commits_each_writers_rows_once(kafka_broker: Any) -> None:
    topic = new_topic(kafka_broker, partitions=2)
    table = exactly_once_table(kafka_broker, topic)
    states = []
    for subtask, ids in ((0, [1, 2]), (1, [3, 4])):
        sink = open_sink(table, subtask=subtask, parallelism=2)
        sink.write(ids_batch(ids), None)
        states.append(sink.snapshot_state(1))
        if subtask == 0:
            sink.notify_checkpoint_complete(1)  # writer 1 fails before its notification
        sink.close()
    assert visible_ids(kafka_broker, topic) == [1, 2]
    merged = merge_snapshots(states)
    for attempt in (1, 2):
        single = open_sink(table, subtask=0, parallelism=1, attempt=attempt)
        single.restore_state(merged)
        single.close()
        assert visible_ids(kafka_broker, topic) == [1, 2, 3, 4]


def test_scaled_up_restore_lets_one_subtask_commit_each_writer(kafka_broker: Any) -> None:
    topic = new_topic(kafka_broker)
    table = exactly_once_table(kafka_broker, topic)
    sink = open_sink(table, subtask=0, parallelism=1)
    sink.write(ids_batch([1, 2]), None)
    state = sink.snapshot_state(1)
    sink.close()
    for subtask in (1, 2, 0):   # every new subtask receives the whole state
        scaled = open_sink(table, subtask=subtask, parallelism=3, attempt=1)
        scaled.restore_state(state)
        scaled.close()
        assert visible_ids(kafka_broker, topic) == ([] if subtask else [1, 2])


def test_close_without_finish_discards_what_no_snapshot_claimed(kafka_broker: Any) -> None:
    topic = new_topic(kafka_broker)
    table = exactly_once_table(kafka_broker, topic)
    sink = open_sink(table)
    sink.write(ids_batch([1]), None)
    state = sink.snapshot_state(1)
    sink.write(ids_batch([2]), None)
    sink.close()
    restored = open_sink(table, attempt=1)
    restored.restore_state(state)
    restored.close()
    assert visible_ids(kafka_broker, topic) == [1]


def test_finish_with_a_final_checkpoint_leaves_the_commit_to_it(kafka_broker: Any) -> None:
    topic = new_topic(kafka_broker)
    sink = open_sink(exactly_once_table(kafka_broker, topic), checkpointing=True)
    sink.write(ids_batch([1]), None)
    sink.finish()
    assert visible_ids(kafka_broker, topic) == []
    sink.snapshot_state(1)
    sink.notify_checkpoint_complete(1)
    sink.close()
    assert visible_ids(kafka_broker, topic) == [1]


def test_finish_without_checkpoints_commits_everything(kafka_broker: Any) -> None:
    topic = new_topic(kafka_broker)
    sink = open_sink(exactly_once_table(kafka_broker, topic), checkpointing=False)
    sink.write(ids_batch([1]), None)
    sink.snapshot_state(1)
    sink.write(ids_batch([2, 3]), None)
    sink.finish()
    sink.close()
    assert visible_ids(kafka_broker, topic) == [1, 2, 3]


def test_exactly_once_needs_a_transactional_id_prefix(kafka_broker: Any) -> None:
    table = kafka_table(kafka_broker, "unused", **{"sink.delivery-guarantee": "exactly-once"})
    with pytest.raises(CatalogError, match="'exactly-once' needs "
                                           "'sink.transactional-id-prefix'"):
        open_sink(table)


def test_exactly_once_needs_checkpointing(kafka_broker: Any) -> None:
    table = exactly_once_table(kafka_broker, "unused")
    with pytest.raises(CatalogError, match="checkpointing is off: set "
                                           "'execution.checkpointing.interval'"):
        open_sink(table, settings={})


def test_a_record_over_the_size_limit_fails_when_written(kafka_broker: Any) -> None:
    topic = new_topic(kafka_broker)
    table = exactly_once_table(kafka_broker, topic, **{"properties.message.max.bytes": "10000"})
    sink = open_sink(table)
    with pytest.raises(ExecutionError, match=f"a record for topic '{topic}' has .* bytes, "
                                             "more than the producer's limit of 10000"):
        sink.write(ids_batch([1], ["x" * 20_000]), None)
    sink.close()


def test_restored_state_is_immutable_arrow(kafka_broker: Any) -> None:
    topic = new_topic(kafka_broker)
    sink = open_sink(exactly_once_table(kafka_broker, topic))
    sink.write(ids_batch([1]), None)
    state = sink.snapshot_state(1)
    sink.write(ids_batch([2]), None)
    sink.snapshot_state(2)
    sink.close()
    assert isinstance(state[STATE], pa.Table) and state[STATE].num_rows == 1


def test_restoring_records_of_another_topic_is_an_error(kafka_broker: Any) -> None:
    topic, other = new_topic(kafka_broker), new_topic(kafka_broker)
    sink = open_sink(exactly_once_table(kafka_broker, topic, prefix="moved"))
    sink.write(ids_batch([1]), None)
    state = sink.snapshot_state(1)
    sink.close()
    moved = open_sink(exactly_once_table(kafka_broker, other, prefix="moved"), attempt=1)
    with pytest.raises(ExecutionError, match=f"holds records for topic '{topic}' that are "
                                             f"not committed yet, and the table now writes "
                                             f"topic '{other}'"):
        moved.restore_state(state)
    moved.close()
    assert visible_ids(kafka_broker, other) == []


def test_pending_records_restored_without_exactly_once_are_written_at_least_once(
        kafka_broker: Any) -> None:
    topic = new_topic(kafka_broker)
    sink = open_sink(exactly_once_table(kafka_broker, topic))
    sink.write(ids_batch([1, 2]), None)
    state = sink.snapshot_state(1)
    sink.close()
    weaker = open_sink(kafka_table(kafka_broker, topic), attempt=1)
    weaker.restore_state(state)
    weaker.close()
    assert visible_ids(kafka_broker, topic) == [1, 2]
