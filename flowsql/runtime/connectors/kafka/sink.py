"""The ``kafka`` and ``upsert-kafka`` sinks: rows become records of the table's topic, as
Flink SQL's Kafka connectors write them.

What a record holds (key, value, timestamp, headers) and which row kinds a table accepts is
``records``; which partition it goes to is ``partitioners`` (``sink.partitioner``, kafka
only; upsert-kafka always hashes the key); upsert-kafka's ``sink.buffer-flush.*`` keep the
last change per key for a while first (``upsert_buffer``). The sink writes the one topic
the table's ``topic`` option names (a table with only ``topic-pattern`` cannot be written).

``sink.delivery-guarantee`` decides when records are sent and what a checkpoint means:

* ``none``: records are produced as rows arrive; nothing waits for the broker (delivery
  failures reported meanwhile still fail the job). Rows may be lost or duplicated by a
  failure;
* ``at-least-once`` (the default): records are produced as rows arrive; a snapshot waits
  until every record sent so far is acknowledged, so a completed checkpoint has all of
  its rows in the topic (a restore may write some again);
* ``exactly-once``: records are kept in the checkpoint state and produced in one Kafka
  transaction per checkpoint when it completes (``transactions`` states the protocol).
  Needs ``sink.transactional-id-prefix`` and checkpointing; readers see the rows only
  with ``isolation.level`` = ``read_committed``, once the checkpoint completes.

At the end of the input everything is flushed; with exactly-once and a final checkpoint
to come, that checkpoint commits the last rows, else they are committed at once.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from flowsql.errors import CatalogError
from flowsql.planner.catalog import TableEntry
from flowsql.planner.config.connectors import find_connector
from flowsql.runtime.checkpoint.config import CheckpointSettings
from flowsql.runtime.connectors.kafka.client_config import client_config
from flowsql.runtime.connectors.kafka.partitioners import CLIENT_DEFAULT, partitioner
from flowsql.runtime.connectors.kafka.producer import RecordProducer
from flowsql.runtime.connectors.kafka.records import RECORDS, RecordEncoder
from flowsql.runtime.connectors.kafka.transactions import (
    STATE,
    TransactionalWriter,
    check_restored_topic,
)
from flowsql.runtime.connectors.kafka.upsert_buffer import (
    INTERVAL,
    MAX_ROWS,
    UpsertBuffer,
    check_buffer_options,
)
from flowsql.runtime.connectors.sinks import TableSink
from flowsql.runtime.operator import OperatorContext

GUARANTEE = "sink.delivery-guarantee"
TRANSACTIONAL_ID_PREFIX = "sink.transactional-id-prefix"
PARTITIONER = "sink.partitioner"


class KafkaSink(TableSink):
    def __init__(self, table: TableEntry, context: OperatorContext) -> None:
        options = table.options
        connector = find_connector(table.connector)
        self.table = table
        self.topic = sink_topic(table)
        self.guarantee = str(connector.value(options, GUARANTEE))
        self.final_checkpoint = context.checkpointing
        prefix = options.get(TRANSACTIONAL_ID_PREFIX)
        if self.guarantee == "exactly-once":
            if not prefix:
                raise CatalogError(f"kafka table '{table.name}': 'sink.delivery-guarantee' = "
                                   f"'exactly-once' needs '{TRANSACTIONAL_ID_PREFIX}' (a "
                                   "prefix of the transactional ids, unique per job)")
            if CheckpointSettings.of(context.settings) is None:
                raise CatalogError(
                    f"kafka table '{table.name}': 'sink.delivery-guarantee' = 'exactly-once' "
                    "commits on checkpoints, and checkpointing is off: set "
                    "'execution.checkpointing.interval'")
        #: upsert-kafka with sink.buffer-flush.*: the last change per key waits here
        self.upsert_buffer: UpsertBuffer | None = None
        if table.connector.lower() == "upsert-kafka":
            max_rows = int(connector.value(options, MAX_ROWS))
            interval_ms = int(connector.value(options, INTERVAL))
            if check_buffer_options(table.name, max_rows, interval_ms):
                self.upsert_buffer = UpsertBuffer(max_rows, interval_ms, self._send)
        config = client_config(options, partitioner=CLIENT_DEFAULT)
        self._closed = False
        #: exactly-once only: the write-ahead transactions, which own the producer
        self.transactions: TransactionalWriter | None = None
        if self.guarantee == "exactly-once":
            assert prefix is not None
            self.transactions = TransactionalWriter(
                table.name, self.topic, config, prefix, context.subtask_index,
                context.parallelism)
            self.producer = self.transactions.producer
        else:
            self.producer = RecordProducer(table.name, self.topic, config)
        try:
            partitions = self.producer.partition_count()
            name = (str(connector.value(options, PARTITIONER))
                    if table.connector.lower() == "kafka" else "default")
            self.encoder = RecordEncoder(table, partitioner(name, context.subtask_index,
                                                            partitions))
        except BaseException:
            self._release(discard=True)
            raise
        self._finished = False

    def write(self, batch: pa.RecordBatch, kinds: np.ndarray | None) -> None:
        records = self.encoder.encode(batch, kinds)
        if self.upsert_buffer is not None:
            self.upsert_buffer.add(records)
        else:
            self._send(records)

    def _send(self, records: pa.Table) -> None:
        """Records leave the sink: kept for the next transaction, or produced now."""
        if self.transactions is not None:
            self.transactions.buffer(records)
        elif records.num_rows:
            self.producer.produce(records)

    def snapshot_state(self, checkpoint_id: int) -> dict[str, pa.Table]:
        if self.upsert_buffer is not None:
            self.upsert_buffer.flush()
        if self.transactions is not None:
            return {STATE: self.transactions.snapshot(checkpoint_id)}
        if self.guarantee == "at-least-once":
            self.producer.flush()
        else:
            self.producer.check()
        return {}

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        if self.transactions is not None:
            self.transactions.commit_through(checkpoint_id)

    def restore_state(self, state: dict[str, pa.Table]) -> None:
        pending = state.get(STATE)
        if pending is None or not pending.num_rows:
            return
        if self.transactions is not None:
            self.transactions.restore(pending)
        else:
            # state of an exactly-once run restored with a weaker guarantee: the records
            # belong to a completed checkpoint, written at least once
            check_restored_topic(self.table.name, self.topic, pending)
            self.producer.produce(pending.select(RECORDS.names))
            self.producer.flush()

    def finish(self) -> None:
        if self.upsert_buffer is not None:
            self.upsert_buffer.flush()
        if self.transactions is not None:
            if not self.final_checkpoint:
                self.transactions.commit_everything()
        else:
            self.producer.flush()
        self._finished = True

    def close(self) -> None:
        self._release(discard=not self._finished)

    def _release(self, discard: bool) -> None:
        if self._closed:
            return
        self._closed = True
        if self.transactions is not None:
            self.transactions.close()
        else:
            self.producer.close(discard)


def sink_topic(table: TableEntry) -> str:
    """The one topic a sink writes: the table's 'topic' option."""
    topic = (table.options.get("topic") or "").strip()
    if not topic:
        raise CatalogError(f"kafka table '{table.name}' has no 'topic': a sink writes the "
                           "topic that option names ('topic-pattern' is for reading)")
    if ";" in topic:
        raise CatalogError(f"kafka table '{table.name}': a sink writes one topic, 'topic' "
                           f"names several ('{topic}')")
    return topic
