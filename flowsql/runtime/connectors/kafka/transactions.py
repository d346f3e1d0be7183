"""Exactly-once delivery of the Kafka sink: a write-ahead two-phase commit.

Flink's Java sink writes each checkpoint's records into an open Kafka transaction and,
after a crash, resumes that very transaction from its producer id and epoch. librdkafka
cannot resume another producer's transaction, so this sink keeps the records themselves
in its checkpoint state instead and produces them only when they are committed:

* ``buffer(records)``: records written since the last snapshot wait in memory, encoded
  and partitioned (``records.RECORDS``); nothing reaches the broker yet;
* ``snapshot(n)``: the buffered records become *pending* for checkpoint ``n`` under the
  next *commit sequence* of this subtask (the writer); the returned state holds every
  pending record not yet committed (``PENDING``);
* ``commit_through(n)``: each pending checkpoint ``<= n``, in order, is produced in ONE
  Kafka transaction (``transactional.id`` = ``<prefix>-<subtask>``) that also commits the
  *marker*: offset ``sequence`` of partition 0 of the topic for consumer group
  ``<prefix>-<writer>``, through ``send_offsets_to_transaction`` -- on a Kafka broker
  atomic with the records. After the transaction the same offset is committed again
  plainly, for brokers that do not store transactional offset commits;
* ``restore(state)``: the restored checkpoint completed, so every pending record in its
  state belongs to the output. For each writer, the pending sequences above its marker
  are committed in order (those at or below were committed before the failure); a
  second restore of the same state finds the markers advanced and commits nothing;
* ``init_transactions`` at open fences an earlier attempt's producer with the same
  transactional id and aborts its open transaction (records produced for a commit that
  did not finish are never visible to read_committed consumers).

Commit sequences rather than checkpoint ids are the markers because checkpoint ids start
again at 1 in a new job restored from a savepoint; a writer's sequence goes on from its
marker (read after any restore), whatever job writes it.

Rescaling: a restored state holds the pending records of every old subtask (writer).
Writer ``w``'s records are committed by the one new subtask ``w mod parallelism`` (two
subtasks committing the same records would duplicate them); writers beyond the new
parallelism have their transactional ids fenced first, so a transaction they left open
does not hold back read_committed consumers until it times out.

Limits: a broker that ignores transactional offset commits would see the marker only
from the plain commit that follows the transaction; a crash between the two would leave
the marker behind, and the next restore would commit that checkpoint's records a second
time. Kafka (and the test broker, for an existing topic) stores the transactional commit,
so the marker is part of the transaction and there is no such window. Checkpoint state
grows with the records between two checkpoints.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.runtime.connectors.kafka.producer import RecordProducer, client_failure, kafka_error
from flowsql.runtime.connectors.kafka.records import RECORDS

PENDING = pa.schema([("writer", pa.int32()), ("checkpoint", pa.int64()),
                     ("sequence", pa.int64()), ("topic", pa.string()), *RECORDS])
#: the state name of the pending records
STATE = "pending-records"
#: seconds a transactional call may take before the commit fails
_TXN_TIMEOUT_S = 60.0
#: the checkpoint label of records committed at the end of the input without a checkpoint
_AFTER_EVERY_CHECKPOINT = (1 << 63) - 1
#: producer settings a consumer does not take (librdkafka warns of each)
_PRODUCER_ONLY = frozenset({"partitioner", "linger.ms", "acks", "enable.idempotence",
                            "compression.type", "batch.num.messages", "batch.size",
                            "queue.buffering.max.messages", "queue.buffering.max.ms",
                            "queue.buffering.max.kbytes", "delivery.timeout.ms"})
#: the client's committed offset when a group has committed none
_NO_OFFSET = -1001


def _commits(pending: pa.Table) -> Iterator[tuple[int, int, pa.Table]]:
    """(writer, sequence, records) of each transaction ``pending`` holds, in sequence
    order per writer (the sort is stable: records keep their order)."""
    if not pending.num_rows:
        return
    pending = pending.sort_by([("writer", "ascending"), ("sequence", "ascending")])
    writers = pending.column("writer").to_numpy()
    sequences = pending.column("sequence").to_numpy()
    starts = np.flatnonzero(np.r_[True, (writers[1:] != writers[:-1])
                                  | (sequences[1:] != sequences[:-1])])
    ends = np.r_[starts[1:], len(writers)]
    for start, end in zip(starts, ends):
        yield (int(writers[start]), int(sequences[start]),
               pending.slice(start, end - start).select(RECORDS.names))


def check_restored_topic(table: str, topic: str, state: pa.Table) -> None:
    """Restored pending records go to the topic they were written for, or nowhere: an
    error when the table now names another topic."""
    others = set(state.column("topic").unique().to_pylist()) - {topic}
    if others:
        raise ExecutionError(
            f"kafka table '{table}': the restored checkpoint holds records for topic "
            f"'{sorted(others)[0]}' that are not committed yet, and the table now writes "
            f"topic '{topic}'")


def transactional_id(prefix: str, subtask_index: int) -> str:
    return f"{prefix}-{subtask_index}"


def marker_group(prefix: str, writer: int) -> str:
    """The consumer group whose committed offset is ``writer``'s last committed sequence."""
    return f"{prefix}-{writer}"


class TransactionalWriter:
    """The exactly-once protocol of one sink subtask (see the module docstring)."""

    def __init__(self, table: str, topic: str, config: dict[str, Any], prefix: str,
                 subtask_index: int, parallelism: int) -> None:
        self.table = table
        self.topic = topic
        self.prefix = prefix
        self.index = subtask_index
        self.parallelism = parallelism
        self._config = config
        self.producer = RecordProducer(table, topic, {
            **config, "transactional.id": transactional_id(prefix, subtask_index)})
        try:
            self._call(self.producer.client.init_transactions, _TXN_TIMEOUT_S)
        except BaseException:
            self.producer.close(discard=True)
            raise
        self._buffer: list[pa.Table] = []
        self._pending = PENDING.empty_table()
        #: this writer's next commit sequence; read from its marker on first use
        self._next_sequence: int | None = None
        self._markers: dict[int, Any] = {}

    # -- the sink's calls ------------------------------------------------------------------
    def buffer(self, records: pa.Table) -> None:
        self.producer.check_sizes(records)
        if records.num_rows:
            self._buffer.append(records)

    def snapshot(self, checkpoint_id: int) -> pa.Table:
        """Make the buffered records pending for ``checkpoint_id``; the state: every
        pending record."""
        self._prepare(checkpoint_id)
        return self._pending

    def commit_through(self, checkpoint_id: int) -> None:
        """Commit the pending checkpoints ``<= checkpoint_id``, oldest first; each one
        leaves the pending records as soon as its transaction is committed."""
        due = self._pending.filter(pc.less_equal(self._pending.column("checkpoint"),
                                                 checkpoint_id))
        for writer, sequence, records in _commits(due):
            self._transaction(writer, sequence, records)
            self._pending = self._pending.filter(
                pc.not_equal(self._pending.column("sequence"), sequence))

    def commit_everything(self) -> None:
        """The input ended without a final checkpoint: commit what is pending, then what
        is buffered."""
        self._prepare(_AFTER_EVERY_CHECKPOINT)
        self.commit_through(_AFTER_EVERY_CHECKPOINT)

    def restore(self, state: pa.Table) -> None:
        """Commit the restored pending records of the writers this subtask takes over
        that their markers do not cover yet."""
        check_restored_topic(self.table, self.topic, state)
        writers = pc.cast(state.column("writer"), pa.int64()).to_numpy()
        mine = writers % self.parallelism == self.index
        for foreign in sorted({int(w) for w in writers[mine]} - {self.index}):
            self._fence(foreign)
        markers: dict[int, int] = {}
        for writer, sequence, records in _commits(state.filter(pa.array(mine))):
            if writer not in markers:
                markers[writer] = self._marker(writer)
            if sequence > markers[writer]:
                self._transaction(writer, sequence, records)
        self._next_sequence = None  # read again: the restore may have moved our marker

    def close(self) -> None:
        for consumer in self._markers.values():
            consumer.close()
        self._markers = {}
        self.producer.close(discard=True)

    # -- the protocol ------------------------------------------------------------------------
    def _prepare(self, checkpoint_id: int) -> None:
        if not self._buffer:
            return
        records = pa.concat_tables(self._buffer)
        self._buffer = []
        sequence = self._sequence()
        rows = records.num_rows
        labels = [pa.array(np.full(rows, self.index, dtype=np.int32)),
                  pa.array(np.full(rows, checkpoint_id, dtype=np.int64)),
                  pa.array(np.full(rows, sequence, dtype=np.int64)),
                  pa.array([self.topic] * rows, pa.string())]
        prepared = pa.table([*labels, *records.columns], schema=PENDING)
        self._pending = pa.concat_tables([self._pending, prepared])

    def _sequence(self) -> int:
        if self._next_sequence is None:
            self._next_sequence = max(self._marker(self.index), 0) + 1
        sequence = self._next_sequence
        self._next_sequence += 1
        return sequence

    def _transaction(self, writer: int, sequence: int, records: pa.Table) -> None:
        """Produce ``records`` and commit ``writer``'s marker ``sequence`` atomically."""
        from confluent_kafka import TopicPartition

        client = self.producer.client
        marker = self._marker_consumer(writer)
        offsets = [TopicPartition(self.topic, 0, sequence)]
        self._call(client.begin_transaction)
        try:
            self.producer.produce(records)
            self._call(client.send_offsets_to_transaction, offsets,
                       marker.consumer_group_metadata(), _TXN_TIMEOUT_S)
            self._call(client.commit_transaction, _TXN_TIMEOUT_S)
        except BaseException:
            self._abort()
            raise
        self.producer.check()
        self._call(marker.commit, offsets=offsets, asynchronous=False)

    def _abort(self) -> None:
        from confluent_kafka import KafkaException

        # the commit's own error is the one to report; a restart fences the id anyway
        with contextlib.suppress(KafkaException):
            self.producer.client.abort_transaction(_TXN_TIMEOUT_S)

    def _fence(self, writer: int) -> None:
        """Abort whatever transaction writer ``writer``'s producer left open (its
        transactional id is no longer used by any subtask)."""
        from confluent_kafka import Producer

        other = self._call(Producer, {**self._config,
                                      "transactional.id": transactional_id(self.prefix, writer)})
        try:
            self._call(other.init_transactions, _TXN_TIMEOUT_S)
        finally:
            other.flush(0)

    def _marker(self, writer: int) -> int:
        """``writer``'s last committed sequence (0 when none)."""
        from confluent_kafka import TopicPartition

        committed = self._call(self._marker_consumer(writer).committed,
                               [TopicPartition(self.topic, 0)], _TXN_TIMEOUT_S)
        offset = int(committed[0].offset)
        return 0 if offset == _NO_OFFSET or offset < 0 else offset

    def _marker_consumer(self, writer: int) -> Any:
        from confluent_kafka import Consumer

        consumer = self._markers.get(writer)
        if consumer is None:
            # the producer's settings minus the producer-only ones the consumer would warn of
            shared = {k: v for k, v in self._config.items()
                      if k not in _PRODUCER_ONLY and not k.startswith("transaction")}
            consumer = self._markers[writer] = self._call(Consumer, {
                **shared, "group.id": marker_group(self.prefix, writer),
                "enable.auto.commit": False, "isolation.level": "read_committed"})
        return consumer

    def _call(self, method: Any, *args: Any, **kwargs: Any) -> Any:
        """A client call; a failure becomes an ExecutionError naming the topic."""
        from confluent_kafka import KafkaException

        try:
            return method(*args, **kwargs)
        except KafkaException as failure:
            raise client_failure(self.table, self.topic, kafka_error(failure)) from None
