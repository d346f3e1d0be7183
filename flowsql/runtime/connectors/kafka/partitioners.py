"""``sink.partitioner``: which partition of the topic each record goes to, as Flink's Kafka
sink chooses it.

* ``default``: the Kafka client's own partitioner, configured as the Java client's default
  (``murmur2_random``: the murmur2 hash of the key, so a key lands in the partition a Java
  producer would choose; a record without key goes to a random partition). The sink leaves
  the partition unset (NULL) and the client decides when the record is produced;
* ``fixed``: every record of sink subtask ``i`` goes to partition ``i mod n`` (Flink's
  ``FlinkFixedPartitioner``);
* ``round-robin``: records in turn over the partitions, continuing across batches
  (Kafka's ``RoundRobinPartitioner``).

A partitioner works on whole batches: ``assign(rows)`` returns an int32 array of one
partition per row (NULL: the client chooses).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from flowsql.errors import CatalogError

#: the librdkafka partitioner matching the Java client's default for keyed records
CLIENT_DEFAULT = "murmur2_random"


class Partitioner:
    def assign(self, rows: int) -> pa.Array:
        raise NotImplementedError


class ClientPartitioner(Partitioner):
    """Leaves the choice to the client's ``murmur2_random``."""

    def assign(self, rows: int) -> pa.Array:
        return pa.nulls(rows, pa.int32())


class FixedPartitioner(Partitioner):
    def __init__(self, subtask_index: int, partitions: int) -> None:
        self.partition = subtask_index % partitions

    def assign(self, rows: int) -> pa.Array:
        return pa.array(np.full(rows, self.partition, dtype=np.int32))


class RoundRobinPartitioner(Partitioner):
    def __init__(self, partitions: int, start: int = 0) -> None:
        self.partitions = partitions
        self.next = start % partitions

    def assign(self, rows: int) -> pa.Array:
        assigned = (np.arange(rows, dtype=np.int64) + self.next) % self.partitions
        self.next = (self.next + rows) % self.partitions
        return pa.array(assigned.astype(np.int32))


def partitioner(name: str, subtask_index: int, partitions: int) -> Partitioner:
    """The partitioner ``sink.partitioner`` names, for a topic of ``partitions`` partitions.
    Round-robin starts at the subtask's index, so parallel subtasks do not all begin with
    partition 0."""
    if name == "default":
        return ClientPartitioner()
    if name == "fixed":
        return FixedPartitioner(subtask_index, partitions)
    if name == "round-robin":
        return RoundRobinPartitioner(partitions, subtask_index)
    raise CatalogError(f"unknown sink.partitioner '{name}' (default, fixed, round-robin)")
