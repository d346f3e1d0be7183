"""Where a Kafka source starts and stops reading each partition (``scan.startup.*``,
``scan.bounded.*``), and which source subtask reads which partition.

Positions are resolved against the broker once, when a partition is first assigned, into
plain offsets (or a timestamp to skip to); from then on the source's own checkpointed
offsets are the truth and the group's committed offsets are never read again.

Two rules keep this correct on brokers whose ListOffsets answers are unreliable (the test
broker reports wrong end offsets after multi-record batches and answers offset-for-time
with the earliest offset):

* the *end* of a partition is found by consuming from the broker's reported end to the
  partition's EOF (a fetch answers with the true high watermark); on a conforming broker
  that is a single empty fetch;
* a *timestamp* start uses the broker's offset for the time only as a lower bound: the
  source skips records before the first one at or after the timestamp, which is what the
  answer of a conforming broker points at (Kafka's semantics).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from flowsql.errors import CatalogError, ExecutionError
from flowsql.runtime.partitioning import hash_array

#: librdkafka's logical offsets
OFFSET_BEGINNING, OFFSET_END, OFFSET_INVALID = -2, -1, -1001
#: longest wait for a broker's answer while resolving positions
_BROKER_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class StartPosition:
    """``offset`` to seek to (may be OFFSET_BEGINNING); records before the first one at or
    after ``skip_before_ms`` are dropped (None: none are)."""

    offset: int
    skip_before_ms: int | None = None


@dataclass(frozen=True)
class StopPosition:
    """Reading ends before ``offset`` (None: no offset bound) and at the first record at or
    after ``at_time_ms`` (None: no time bound)."""

    offset: int | None
    at_time_ms: int | None = None


def owner(topic: str, partition: int, parallelism: int) -> int:
    """The subtask reading ``topic``'s ``partition``: the partitions of a topic go round
    robin over the subtasks from a start that depends on the topic (Flink's
    ``KafkaSourceEnumerator`` does the same with Java's string hash), so one topic's
    partitions spread over all subtasks and several topics do not all start at subtask 0.
    A stable hash: the same owner in every process and run, so discovery needs no
    coordination."""
    start = int(hash_array(_strings([topic]))[0] % parallelism)
    return (start + partition) % parallelism


def parse_specific_offsets(text: str, key: str) -> dict[int, int]:
    """``partition:0,offset:42;partition:1,offset:300`` -> {0: 42, 1: 300}."""
    offsets: dict[int, int] = {}
    for part in (p.strip() for p in text.split(";")):
        if not part:
            continue
        fields = dict(item.split(":", 1) for item in part.split(",") if ":" in item)
        try:
            offsets[int(fields["partition"])] = int(fields["offset"])
        except (KeyError, ValueError):
            raise CatalogError(f"'{key}': expected 'partition:<n>,offset:<n>;...', got "
                               f"'{part}'") from None
    return offsets


def start_positions(consumer: Any, mode: str, options: dict[str, str],
                    partitions: Sequence[tuple[str, int]], config: dict[str, Any],
                    reset: str | None = None) -> dict[tuple[str, int], StartPosition]:
    """The start of each of ``partitions`` under ``scan.startup.mode`` = ``mode``;
    ``reset`` is the client's ``auto.offset.reset`` for partitions the group has no
    offset of (None: fail, as Flink does)."""
    from confluent_kafka import TopicPartition

    if not partitions:
        return {}
    if mode == "earliest-offset":
        return {tp: StartPosition(OFFSET_BEGINNING) for tp in partitions}
    if mode == "latest-offset":
        ends = end_offsets(config, partitions)
        return {tp: StartPosition(ends[tp]) for tp in partitions}
    if mode == "timestamp":
        millis = int(options["scan.startup.timestamp-millis"])
        return {tp: StartPosition(offset, millis)
                for tp, offset in _offsets_for_time(consumer, partitions, millis).items()}
    if mode == "specific-offsets":
        given = parse_specific_offsets(options["scan.startup.specific-offsets"],
                                       "scan.startup.specific-offsets")
        # partitions not listed start at the group's offsets (Flink's rule)
        rest = [tp for tp in partitions if tp[1] not in given]
        found = {tp: StartPosition(given[tp[1]]) for tp in partitions if tp[1] in given}
        found.update(start_positions(consumer, "group-offsets", options, rest, config, reset))
        return found
    committed = consumer.committed([TopicPartition(t, p) for t, p in partitions],
                                   timeout=_BROKER_TIMEOUT_S)
    reset = (reset or "none").lower()
    found = {}
    missing = []
    for tp in committed:
        key = (tp.topic, tp.partition)
        if tp.offset >= 0:
            found[key] = StartPosition(tp.offset)
        else:
            missing.append(key)
    if missing:
        if reset in ("earliest", "smallest", "beginning"):
            found.update({tp: StartPosition(OFFSET_BEGINNING) for tp in missing})
        elif reset in ("latest", "largest", "end"):
            ends = end_offsets(config, missing)
            found.update({tp: StartPosition(ends[tp]) for tp in missing})
        else:
            topic, partition = missing[0]
            raise ExecutionError(
                f"kafka: group '{config.get('group.id')}' has no committed offset for topic "
                f"'{topic}' partition {partition} (scan.startup.mode 'group-offsets'); set "
                "'properties.auto.offset.reset' to 'earliest' or 'latest', or choose "
                "another 'scan.startup.mode'")
    return found


def stop_positions(consumer: Any, mode: str, options: dict[str, str],
                   partitions: Sequence[tuple[str, int]], config: dict[str, Any]
                   ) -> dict[tuple[str, int], StopPosition]:
    """The end of each of ``partitions`` under ``scan.bounded.mode`` = ``mode``; empty for
    an unbounded source."""
    from confluent_kafka import TopicPartition

    if mode == "unbounded" or not partitions:
        return {}
    if mode == "latest-offset":
        return {tp: StopPosition(end) for tp, end in end_offsets(config, partitions).items()}
    if mode == "timestamp":
        millis = int(options["scan.bounded.timestamp-millis"])
        ends = end_offsets(config, partitions)
        return {tp: StopPosition(ends[tp], millis) for tp in partitions}
    if mode == "specific-offsets":
        given = parse_specific_offsets(options["scan.bounded.specific-offsets"],
                                       "scan.bounded.specific-offsets")
        ends = end_offsets(config, [tp for tp in partitions if tp[1] not in given])
        return {tp: StopPosition(given.get(tp[1], ends.get(tp))) for tp in partitions}
    committed = consumer.committed([TopicPartition(t, p) for t, p in partitions],
                                   timeout=_BROKER_TIMEOUT_S)
    ends = end_offsets(config, partitions)
    return {(tp.topic, tp.partition): StopPosition(tp.offset if tp.offset >= 0
                                                   else ends[(tp.topic, tp.partition)])
            for tp in committed}


def end_offsets(config: dict[str, Any], partitions: Iterable[tuple[str, int]]
                ) -> dict[tuple[str, int], int]:
    """The offset after the last record of each partition now, found by consuming from
    the broker's reported end to the partition's EOF (see the module docstring)."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    partitions = list(partitions)
    if not partitions:
        return {}
    probe = Consumer({**config, "enable.partition.eof": True, "enable.auto.commit": False,
                      "group.id": config.get("group.id") or "flowsql-end-probe"})
    try:
        starts = []
        for topic, partition in partitions:
            low, high = probe.get_watermark_offsets(TopicPartition(topic, partition),
                                                    timeout=_BROKER_TIMEOUT_S)
            starts.append(TopicPartition(topic, partition, max(low, high, 0)))
        probe.assign(starts)
        ends: dict[tuple[str, int], int] = {}
        deadline = time.monotonic() + _BROKER_TIMEOUT_S * 3
        while len(ends) < len(partitions):
            if time.monotonic() > deadline:
                raise ExecutionError("kafka: could not find the end of topic "
                                     f"'{partitions[0][0]}' (no answer from the broker)")
            # a short timeout: a batch consume waits it out unless the batch fills
            messages: list[Any] = probe.consume(10_000, 0.01)
            for message in messages:
                error = message.error()
                if error is not None and error.code() == KafkaError._PARTITION_EOF:
                    ends[(message.topic(), message.partition())] = message.offset()
                elif error is not None:
                    raise ExecutionError(f"kafka: topic '{message.topic()}': {error.str()}")
        return ends
    finally:
        probe.close()


def _offsets_for_time(consumer: Any, partitions: Sequence[tuple[str, int]], millis: int
                      ) -> dict[tuple[str, int], int]:
    """A lower bound of the first offset at or after ``millis`` per partition (the
    broker's answer; OFFSET_BEGINNING where it has none)."""
    from confluent_kafka import TopicPartition

    answer = consumer.offsets_for_times([TopicPartition(t, p, millis) for t, p in partitions],
                                        timeout=_BROKER_TIMEOUT_S)
    return {(tp.topic, tp.partition): tp.offset if tp.offset >= 0 else OFFSET_BEGINNING
            for tp in answer}


def _strings(values: list[str]) -> Any:
    import pyarrow as pa

    return pa.array(values, pa.string())
