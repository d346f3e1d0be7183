"""A Kafka producer for one sink subtask: produces tables of encoded records
(``records.RECORDS``) and turns every client failure into an ExecutionError naming the
table, the topic and, when known, the partition -- never a raw client exception, never a
record dropped silently.

The client (confluent-kafka, librdkafka) sends asynchronously: ``produce`` queues records
and returns; a record that the broker refuses, or that cannot be delivered before
``delivery.timeout.ms``, is reported later, and ``flush``/``check`` raise the first such
failure. ``produce`` itself raises at once what the client refuses to queue (a record over
``message.max.bytes``, an unknown partition). When the local queue is full it waits for
deliveries to make room rather than failing.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError

#: how long one wait for queue room or outstanding deliveries lasts before looking again
_POLL_S = 0.1
#: how long close waits for records still queued (finish has flushed them already)
_CLOSE_FLUSH_S = 10.0
#: librdkafka's default for ``message.max.bytes``
DEFAULT_MAX_MESSAGE_BYTES = 1_000_000
#: bytes librdkafka counts per record beyond key, value and headers (record batch overhead)
_RECORD_OVERHEAD = 64


def client_failure(table: str, topic: str, error: Any, partition: int | None = None
                   ) -> ExecutionError:
    """The error a sink raises for a client failure (``error`` a KafkaError or exception)."""
    where = f"topic '{topic}'" if partition is None or partition < 0 else \
        f"topic '{topic}' partition {partition}"
    text = error.str() if hasattr(error, "str") else str(error)
    return ExecutionError(f"kafka table '{table}': writing {where} failed: {text}")


def kafka_error(exception: BaseException) -> Any:
    """The KafkaError a KafkaException carries (else the exception itself)."""
    return exception.args[0] if exception.args else exception


class RecordProducer:
    """One client producer writing ``topic`` for table ``table``."""

    def __init__(self, table: str, topic: str, config: dict[str, Any]) -> None:
        from confluent_kafka import KafkaException, Producer

        self.table = table
        self.topic = topic
        self.max_message_bytes = int(config.get("message.max.bytes",
                                                DEFAULT_MAX_MESSAGE_BYTES))
        self._failures: list[tuple[Any, int | None]] = []
        #: the confluent-kafka Producer; None once closed
        self.client: Any
        try:
            # an invalid properties.* setting fails here
            self.client = Producer({**config, "delivery.report.only.error": True,
                                    "on_delivery": self._delivered, "error_cb": self._error})
        except KafkaException as failure:
            raise client_failure(table, topic, kafka_error(failure)) from None

    def partition_count(self, timeout_s: float = 30.0) -> int:
        """The topic's number of partitions; an error when it does not exist (or the
        brokers cannot be reached)."""
        from confluent_kafka import KafkaException

        try:
            metadata = self.client.list_topics(self.topic, timeout=timeout_s)
        except KafkaException as failure:
            raise client_failure(self.table, self.topic, kafka_error(failure)) from None
        found = metadata.topics.get(self.topic)
        if found is None or found.error is not None or not found.partitions:
            reason = found.error if found is not None and found.error is not None else \
                "the topic does not exist"
            raise client_failure(self.table, self.topic, reason)
        return len(found.partitions)

    def check_sizes(self, records: pa.Table) -> None:
        """Raise now for a record the client would refuse as too large (what exactly-once
        checks before it keeps records for a later transaction)."""
        if not records.num_rows:
            return
        sizes = (_lengths(records.column("key")) + _lengths(records.column("value"))
                 + _header_lengths(records.column("headers")) + _RECORD_OVERHEAD)
        too_large = np.flatnonzero(sizes > self.max_message_bytes)
        if len(too_large):
            row = int(too_large[0])
            raise ExecutionError(
                f"kafka table '{self.table}': a record for topic '{self.topic}' has "
                f"{int(sizes[row])} bytes, more than the producer's limit of "
                f"{self.max_message_bytes} (properties.message.max.bytes)")

    def produce(self, records: pa.Table) -> None:
        """Queue every record of ``records`` (``records.RECORDS`` columns)."""
        from confluent_kafka import KafkaException

        produce = self.client.produce
        topic = self.topic
        columns = [records.column(name).to_pylist()
                   for name in ("partition", "key", "value", "timestamp", "headers")]
        for partition, key, value, timestamp, headers in zip(*columns):
            while True:
                try:
                    # partition -1 and timestamp 0 are the client's "unset": its
                    # partitioner chooses, the broker stamps (so does a record at exactly
                    # epoch 0)
                    produce(topic, value, key, -1 if partition is None else partition,
                            timestamp=timestamp or 0, headers=headers)
                    break
                except BufferError:  # the local queue is full: let it drain
                    self.client.poll(_POLL_S)
                    self.check()
                except KafkaException as failure:
                    raise client_failure(self.table, topic, kafka_error(failure),
                                         partition) from None
        self.check()

    def flush(self) -> None:
        """Wait until every queued record is acknowledged; raise the first failure."""
        while self.client.flush(_POLL_S * 10):
            self.check()
        self.check()

    def check(self) -> None:
        """Raise the first delivery failure reported so far."""
        self.client.poll(0)
        if self._failures:
            error, partition = self._failures[0]
            raise client_failure(self.table, self.topic, error, partition)

    def close(self, discard: bool) -> None:
        """Release the client (its threads and connections end now, not when garbage
        collection finds the client and its callbacks); ``discard`` drops what is still
        queued (after a failure: the rows will be written again after a restore)."""
        if self.client is None:
            return
        if discard:
            self.client.purge()
        self.client.flush(0 if discard else _CLOSE_FLUSH_S)
        self.client = None

    def _delivered(self, error: Any, message: Any) -> None:
        if error is not None:
            self._failures.append((error, message.partition()))

    def _error(self, error: Any) -> None:
        if error.fatal():
            self._failures.append((error, None))


def _lengths(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return pc.fill_null(pc.binary_length(column), 0).to_numpy().astype(np.int64)


def _header_lengths(column: pa.ChunkedArray) -> np.ndarray:
    """Bytes of every row's header names and values: entry sizes summed between each
    row's offsets into the map's entries (offsets are absolute, also in a slice)."""
    parts = [np.zeros(0, dtype=np.int64)]
    for chunk in column.chunks:
        entries = chunk.values
        sizes = (_lengths(entries.field("key")) + _lengths(entries.field("value")))
        running = np.concatenate([[0], np.cumsum(sizes)])
        offsets = chunk.offsets.to_numpy()
        parts.append(running[offsets[1:]] - running[offsets[:-1]])
    return np.concatenate(parts)
