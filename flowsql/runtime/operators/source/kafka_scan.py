"""Scan of a ``kafka`` or ``upsert-kafka`` table: a polled source over the partitions this
subtask owns, with their offsets in checkpointed state.

Contract: a :class:`PolledSource`. ``poll`` returns the batches (and watermarks) available
now, waiting at most ``max_wait_s`` in the client; it returns None once a bounded read
(``scan.bounded.mode``) reached the end of every owned partition. An unbounded scan never
ends. Each poll's records become one batch of the scanned columns (``RecordDecoder``),
filtered by the pushed filters exactly.

Partitions: subtask i owns the partitions ``offsets.owner`` gives it, of the topics named by
``topic`` (a ';' list) or matching ``topic-pattern``. The topics are listed again every
``scan.topic-partition-discovery.interval`` (0: never; a bounded read lists them once, as
Flink's bounded mode does); a new partition (of a new matching topic, or a topic that grew)
starts at its earliest offset, as in Flink. A subtask that owns no partition of a bounded
read ends at once.

State (operator list state, union: after a rescale every subtask sees every old entry and
keeps the partitions it now owns, so partitions are redistributed with their positions):

* ``partitions``: per owned partition the next offset to read, the highest event time seen
  (for per-partition watermarks), the start's skip-before time (a timestamp start whose
  first record was not read yet) and a bounded read's end (resolved once, so a restarted
  job ends where the failed one would have); a restore resumes exactly after the last
  emitted record;
* ``upsert`` (upsert-kafka): the last value per key of every owned partition.

Where reading starts is decided once per partition when it is first assigned
(``offsets.start_positions``); a restore never asks the broker or the group again.
Offsets are committed to ``properties.group.id`` when a checkpoint completes, for monitoring
(Flink's behaviour); they are never read back for recovery.

Watermarks: when the planner pushed the table's WATERMARK into the scan
(``TableScanExec.watermark``), they are generated per partition and combined
(``SplitWatermarks``) and returned by ``poll`` after the batch.

Bad records: a record a format cannot decode fails the query with topic, partition and
offset, unless the format's ``*.ignore-parse-errors`` is set: then it is skipped and counted
in ``metrics[PARSE_ERRORS_IGNORED]``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.planner.config import SettingValues
from flowsql.planner.config.connectors import connector_of
from flowsql.planner.config.kafka import KAFKA
from flowsql.planner.expressions import conjoin
from flowsql.planner.physical import TableScanExec
from flowsql.runtime.changelog import ROW_KIND
from flowsql.runtime.connectors.filesystem import PARSE_ERRORS_IGNORED
from flowsql.runtime.connectors.kafka.client_config import client_config
from flowsql.runtime.connectors.kafka.offsets import (
    OFFSET_BEGINNING,
    StartPosition,
    StopPosition,
    owner,
    start_positions,
    stop_positions,
)
from flowsql.runtime.connectors.kafka.record_decoding import RecordDecoder
from flowsql.runtime.connectors.kafka.split_watermarks import SplitWatermarks
from flowsql.runtime.connectors.kafka.upsert_changelog import STATE_SCHEMA as UPSERT_SCHEMA
from flowsql.runtime.events import Watermark
from flowsql.runtime.expressions import compile_expr, compile_predicate
from flowsql.runtime.kernels.batches import batch_size
from flowsql.runtime.kernels.epoch_millis import epoch_millis
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.contract import PolledSource
from flowsql.runtime.state.store import StateStore
from flowsql.runtime.time.watermarks import MIN_WATERMARK

_POSITIONS = pa.schema([pa.field("topic", pa.string(), nullable=False),
                        pa.field("partition", pa.int32(), nullable=False),
                        pa.field("offset", pa.int64(), nullable=False),
                        pa.field("max_time", pa.int64(), nullable=False),
                        pa.field("skip_before", pa.int64()),
                        pa.field("stop", pa.int64()),
                        pa.field("stop_time", pa.int64())])
_BROKER_TIMEOUT_S = 10.0
_NO_STOP = np.iinfo(np.int64).max
#: fetch sizes for throughput (librdkafka's defaults fetch 1 MiB per partition and keep
#: 100k records queued, which measured 4x slower here); any properties.* key overrides them
#: records per consume call, and the longest wait for them: measured on this machine, the
#: client delivers 1.7 M records/s in consumes of 10k with a 5 ms wait, against 1.0 M/s in
#: consumes of 64k or without waiting (an empty queue then spins against the fetcher thread)
_CONSUME_BATCH = 10_000
_FILL_WAIT_S = 0.005
_FETCH_DEFAULTS = {"fetch.max.bytes": 50 * 2**20, "max.partition.fetch.bytes": 10 * 2**20,
                   "queued.min.messages": 1_000_000}


class KafkaScanOperator(PolledSource):
    def __init__(self, node: TableScanExec) -> None:
        self.node = node
        self.table = node.table
        options = self.table.options
        self.connector = connector_of(options)
        predicate = conjoin(node.filters)
        self._keep = compile_predicate(predicate, node.fields) if predicate is not None else None
        self._changelog = self.connector.reads_changelog(options)
        topics = options.get("topic")
        self._topics = [t.strip() for t in topics.split(";") if t.strip()] if topics else []
        pattern = options.get("topic-pattern")
        self._pattern = re.compile(pattern) if pattern else None
        # upsert-kafka declares no scan options: it reads everything, discovering as kafka
        # does by default
        scan_options = self.connector if self.table.connector == "kafka" else KAFKA
        self._discovery_ms: int = scan_options.value(
            options, "scan.topic-partition-discovery.interval")

    # -- life cycle -------------------------------------------------------------------------
    def open(self, context: OperatorContext) -> None:
        super().open(context)
        from confluent_kafka import Consumer

        options = self.table.options
        columns = pa.schema([pa.field(f.name, f.dtype) for f in self.node.fields])
        self._decoder = RecordDecoder(self.table, columns, self._changelog)
        self._group = options.get("properties.group.id")
        self._config = {**_FETCH_DEFAULTS, **client_config(
            options, **{"group.id": self._group or f"flowsql-{context.job_id}",
                        "enable.auto.commit": False, "enable.partition.eof": True,
                        "auto.offset.reset": "error"})}
        self._client_reset = client_config(options).get("auto.offset.reset")
        self._consumer: Any = Consumer(self._config)
        self._batch_size = batch_size(context.settings)
        self._store = StateStore.for_context(context)
        self._positions = self._store.list_state("partitions", _POSITIONS, "union")
        self._upsert_state = (self._store.list_state("upsert", UPSERT_SCHEMA, "union")
                              if self._decoder.upsert is not None else None)
        #: owned partitions in assignment order; their index is the split number
        self._splits: list[tuple[str, int]] = []
        self._index: dict[tuple[str, int], int] = {}
        self._next: list[int] = []  # next offset to read (OFFSET_BEGINNING until known)
        self._skip_before: list[int | None] = []
        self._stop: list[StopPosition | None] = []
        self._done: list[bool] = []
        #: per split: the offset reading ends before (int64 max: none), and whether its
        #: records' timestamps matter (a timestamp start or end)
        self._stop_offsets = np.zeros(0, dtype=np.int64)
        self._timed = np.zeros(0, dtype=bool)
        #: topic -> split number by partition (-1: not owned), for the one-topic fast path
        self._lookup: dict[str, np.ndarray] = {}
        self._restored: pa.Table | None = None
        self._next_discovery = 0.0
        self._committable: dict[int, list[tuple[str, int, int]]] = {}
        watermark = self.node.watermark
        self._time = (compile_expr(watermark.time, self.node.fields)
                      if watermark is not None else None)
        self._watermarks = SplitWatermarks(
            watermark.delay_ms if watermark else 0, watermark.interval_ms if watermark else 0,
            SettingValues(context.settings).duration_ms("table.exec.source.idle-timeout")
            or None)
        self._started = False

    def restore_state(self, state: dict[str, pa.Table]) -> None:
        """Keep this subtask's share of the union of every old subtask's state: the
        partitions it owns now (a snapshot taken before the first poll then holds just
        those, never another subtask's partitions a second time)."""
        self._store.restore(state)
        positions = self._positions.rows
        mine = [owner(t, p, self.context.parallelism) == self.context.subtask_index
                for t, p in zip(positions["topic"].to_pylist(),
                                positions["partition"].to_pylist())]
        self._positions.update(positions.filter(pa.array(mine, pa.bool_())))
        if self._upsert_state is not None:
            rows = self._upsert_state.rows
            keep = [owner(t, p, self.context.parallelism) == self.context.subtask_index
                    for t, p in zip(rows["topic"].to_pylist(), rows["partition"].to_pylist())]
            self._upsert_state.update(rows.filter(pa.array(keep, pa.bool_())))
        self._restored = self._positions.rows

    def close(self) -> None:
        consumer = getattr(self, "_consumer", None)
        if consumer is not None:
            self._consumer = None
            consumer.close()

    # -- partitions -------------------------------------------------------------------------
    def _start(self) -> None:
        """First poll: take over restored partitions, then discover the rest."""
        self._started = True
        restored = self._restored
        if restored is not None and restored.num_rows:
            mine = restored.to_pylist()  # this subtask's partitions (see restore_state)
            upsert = self._upsert_rows()
            keys = [(r["topic"], r["partition"]) for r in mine]
            self._assign(keys,
                         {k: StartPosition(r["offset"], r["skip_before"])
                          for k, r in zip(keys, mine)},
                         {k: r["max_time"] for k, r in zip(keys, mine)}, upsert,
                         {k: StopPosition(r["stop"], r["stop_time"])
                          for k, r in zip(keys, mine) if self._bounded and (
                              r["stop"] is not None or r["stop_time"] is not None)})
        self._discover()

    def _upsert_rows(self) -> dict[tuple[str, int], tuple[list[bytes], list[bytes]]]:
        if self._upsert_state is None:
            return {}
        rows = self._upsert_state.rows
        found: dict[tuple[str, int], tuple[list[bytes], list[bytes]]] = {}
        for topic, partition, key, value in zip(*(rows.column(n).to_pylist()
                                                  for n in UPSERT_SCHEMA.names)):
            keys, values = found.setdefault((topic, partition), ([], []))
            keys.append(key)
            values.append(value)
        return found

    def _discover(self) -> None:
        """List the topics and assign the owned partitions not assigned yet."""
        self._next_discovery = time.monotonic() + self._discovery_ms / 1000
        metadata = self._consumer.list_topics(timeout=_BROKER_TIMEOUT_S)
        names = (self._topics if self._pattern is None else
                 sorted(t for t in metadata.topics if self._pattern.fullmatch(t)
                        and not t.startswith("__")))
        found: list[tuple[str, int]] = []
        for name in names:
            topic = metadata.topics.get(name)
            if topic is None or topic.error is not None:
                if self._pattern is None:
                    raise ExecutionError(f"kafka table '{self.table.name}': topic '{name}' "
                                         "does not exist")
                continue
            found += [(name, p) for p in sorted(topic.partitions)
                      if owner(name, p, self.context.parallelism)
                      == self.context.subtask_index]
        new = [tp for tp in found if tp not in self._index]
        if not new:
            return
        options = self.table.options
        restored = self._restored is not None and self._restored.num_rows > 0
        # the startup mode is for the first assignment of a fresh kafka job; partitions
        # found later (and every upsert-kafka partition) start at their earliest offset
        mode = "earliest-offset"
        if not (self._splits or restored) and self.table.connector == "kafka":
            mode = str(self.connector.value(options, "scan.startup.mode"))
        starts = start_positions(self._consumer, mode, options, new, self._config,
                                 self._client_reset)
        self._assign(new, starts, {}, {})

    def _assign(self, partitions: list[tuple[str, int]],
                starts: dict[tuple[str, int], StartPosition], max_times: dict[Any, int],
                upsert: dict[tuple[str, int], tuple[list[bytes], list[bytes]]],
                restored_stops: dict[tuple[str, int], StopPosition] | None = None) -> None:
        """Start reading ``partitions``; a bounded read's ends are resolved now, once
        (``restored_stops``: the ends a checkpoint recorded, so a restarted bounded job
        ends where the failed one would have)."""
        from confluent_kafka import TopicPartition

        if not partitions:
            return
        mode = (str(self.connector.value(self.table.options, "scan.bounded.mode"))
                if self.table.connector == "kafka" else "unbounded")
        stops: dict[tuple[str, int], StopPosition] = dict(restored_stops or {})
        unresolved = [tp for tp in partitions if tp not in stops]
        stops.update(stop_positions(self._consumer, mode, self.table.options, unresolved,
                                    self._config))
        assignment = []
        for tp in partitions:
            start = starts[tp]
            self._index[tp] = len(self._splits)
            self._splits.append(tp)
            self._next.append(start.offset)
            self._skip_before.append(start.skip_before_ms)
            stop = stops.get(tp)
            self._stop.append(stop)
            self._done.append(stop is not None and stop.offset is not None
                              and start.offset >= 0 and start.offset >= stop.offset)
            self._watermarks.add_split(max_times.get(tp, MIN_WATERMARK))
            if self._decoder.upsert is not None:
                self._decoder.upsert.add_split()
                if tp in upsert:
                    self._decoder.upsert.restore(len(self._splits) - 1, *upsert[tp])
            if not self._done[-1]:
                assignment.append(TopicPartition(tp[0], tp[1], start.offset))
        self._stop_offsets = np.array(
            [_NO_STOP if stop is None or stop.offset is None else stop.offset
             for stop in self._stop], dtype=np.int64)
        self._timed = np.array([skip is not None or self._stop_time(i)
                                for i, skip in enumerate(self._skip_before)], dtype=bool)
        self._lookup = {}
        for (topic, partition), split in self._index.items():
            lookup = self._lookup.get(topic, np.zeros(0, dtype=np.int64))
            if partition >= len(lookup):
                lookup = np.concatenate([lookup, np.full(partition + 1 - len(lookup), -1)])
            lookup[partition] = split
            self._lookup[topic] = lookup
        if assignment:
            self._consumer.incremental_assign(assignment)

    # -- polling ----------------------------------------------------------------------------
    def poll(self, max_wait_s: float) -> list[pa.RecordBatch | Watermark] | None:  # type: ignore[override]
        if not self._started:
            self._start()
        if self._bounded and all(self._done):
            return None  # also a subtask that owns no partition of a bounded read
        if self._discovery_ms and not self._bounded and time.monotonic() >= self._next_discovery:
            self._discover()
        messages = self._fetch(max_wait_s)
        out: list[pa.RecordBatch | Watermark] = []
        records = self._records(messages)
        if records is not None:
            batch = self._batch(*records)
            if batch.num_rows:
                out.append(batch)
        watermark = self._watermarks.emit() if self._time is not None else None
        if watermark is not None:
            out.append(Watermark(watermark))
        if not out and self._bounded and all(self._done):
            return None
        return out

    def _fetch(self, max_wait_s: float) -> list[Any]:
        """Up to ``_CONSUME_BATCH`` records: the client's batch consume waits at most
        ``_FILL_WAIT_S`` for the batch to fill (so a busy topic gives full batches without
        spinning on an empty queue while the client's fetcher refills it); when nothing came,
        the first record to arrive within the rest of ``max_wait_s`` is returned at once
        with whatever arrived with it (a batch consume would wait out its whole timeout)."""
        count = min(self._batch_size, _CONSUME_BATCH)
        fill = min(_FILL_WAIT_S, max(max_wait_s, 0.0)) if max_wait_s > 0 else _FILL_WAIT_S
        messages: list[Any] = self._consumer.consume(count, fill)
        if messages or max_wait_s <= fill:
            return messages
        first = self._consumer.poll(max_wait_s - fill)
        if first is None:
            return []
        return [first, *self._consumer.consume(count - 1, 0)]

    @property
    def _bounded(self) -> bool:
        return self.connector.is_bounded(self.table.options, None)

    def _records(self, messages: list[Any]) -> tuple[list[Any], np.ndarray] | None:
        """The data records of a poll that are to be emitted, with each one's split: no
        errors, end-of-partition events, records past a bounded end or before a timestamp
        start. Records a timestamp start skips still advance their partition's position.
        Per record only its fields are read; the decisions are vectorized."""
        failed = [m for m in messages if m.error() is not None]
        if failed:
            messages = [m for m in messages if m.error() is None]
        taken = self._take(messages) if messages else None
        if failed:  # after the records: an end-of-partition event follows its records
            self._events(failed)
        return taken

    def _take(self, messages: list[Any]) -> tuple[list[Any], np.ndarray] | None:
        """``_records`` for data records only."""
        n = len(messages)
        splits = self._split_numbers(messages)
        offsets = np.fromiter((m.offset() for m in messages), dtype=np.int64, count=n)
        keep = (splits >= 0) & ~np.asarray(self._done, dtype=bool)[np.maximum(splits, 0)]
        advance = keep.copy()
        stop_offsets = self._stop_offsets[np.maximum(splits, 0)]
        past = keep & (offsets >= stop_offsets)
        if self._timed.any() and keep.any():
            times = np.fromiter((m.timestamp()[1] for m in messages), dtype=np.int64, count=n)
            for split in np.unique(splits[keep & self._timed[np.maximum(splits, 0)]]).tolist():
                self._by_time(split, np.flatnonzero((splits == split) & keep), times, keep,
                              past)
        keep &= ~past
        advance &= ~past
        self._advance(splits[advance], offsets[advance])
        for split in np.unique(splits[past]).tolist():
            self._finish_split(split)
        if keep.all():
            return messages, splits
        chosen = np.flatnonzero(keep)
        return [messages[i] for i in chosen], splits[chosen]

    def _split_numbers(self, messages: list[Any]) -> np.ndarray:
        """Each record's split (-1: a partition this subtask does not own)."""
        n = len(messages)
        if len(self._lookup) == 1:
            (topic, lookup), = self._lookup.items()
            partitions = np.fromiter((m.partition() for m in messages), dtype=np.int64,
                                     count=n)
            inside = partitions < len(lookup)
            return np.where(inside, lookup[np.where(inside, partitions, 0)], -1)
        index = self._index
        return np.fromiter((index.get((m.topic(), m.partition()), -1) for m in messages),
                           dtype=np.int64, count=n)

    def _by_time(self, split: int, rows: np.ndarray, times: np.ndarray, keep: np.ndarray,
                 past: np.ndarray) -> None:
        """A split's records (``rows``, in partition order) against its timestamp start
        (drop those before the first record at or after it) and its timestamp end (the
        first record at or after it ends the split)."""
        skip = self._skip_before[split]
        if skip is not None:
            reached = np.flatnonzero(times[rows] >= skip)
            before = rows if not len(reached) else rows[:reached[0]]
            keep[before] = False  # still advances the position (the caller's ``advance``)
            if len(reached):
                self._skip_before[split] = None
                self._timed[split] = self._stop_time(split)
            rows = rows[len(before):]
        stop = self._stop[split]
        if stop is not None and stop.at_time_ms is not None and len(rows):
            at = np.flatnonzero(times[rows] >= stop.at_time_ms)
            if len(at):
                past[rows[at[0]:]] = True

    def _stop_time(self, split: int) -> bool:
        stop = self._stop[split]
        return stop is not None and stop.at_time_ms is not None

    def _events(self, failed: list[Any]) -> None:
        """End-of-partition events mark bounded partitions done; other errors fail."""
        from confluent_kafka import KafkaError

        for message in failed:
            error = message.error()
            if error.code() == KafkaError._PARTITION_EOF:
                self._at_end(message.topic(), message.partition(), message.offset())
                continue
            raise ExecutionError(f"kafka table '{self.table.name}': topic "
                                 f"'{message.topic()}' partition {message.partition()}: "
                                 f"{error.str()}")

    def _advance(self, splits: np.ndarray, offsets: np.ndarray) -> None:
        """Positions after the records read (``offsets`` of records of ``splits``)."""
        if not len(splits):
            return
        last = np.full(len(self._splits), -1, dtype=np.int64)
        np.maximum.at(last, splits, offsets)
        for split in np.flatnonzero(last >= 0).tolist():
            self._next[split] = max(self._next[split], int(last[split]) + 1)
            if self._next[split] >= self._stop_offsets[split]:
                self._finish_split(split)

    def _at_end(self, topic: str, partition: int, offset: int) -> None:
        split = self._index.get((topic, partition))
        if split is None:
            return
        if self._next[split] < 0:
            self._next[split] = offset  # an empty partition read from its beginning
        if offset >= self._stop_offsets[split]:
            self._finish_split(split)

    def _finish_split(self, split: int) -> None:
        from confluent_kafka import TopicPartition

        if not self._done[split]:
            self._done[split] = True
            topic, partition = self._splits[split]
            self._consumer.incremental_unassign([TopicPartition(topic, partition)])

    def _batch(self, messages: list[Any], splits: np.ndarray) -> pa.RecordBatch:
        decoded = self._decoder.decode(messages, splits.tolist(), lambda i: _where(
            messages[i]))
        if decoded.skipped:
            metrics = self.context.metrics
            metrics[PARSE_ERRORS_IGNORED] = metrics.get(PARSE_ERRORS_IGNORED, 0) + decoded.skipped
        batch = decoded.batch
        if self._time is not None and batch.num_rows:
            self._track_time(batch, splits[decoded.records])
        else:
            self._watermarks.touch(splits)
        if self._keep is not None and batch.num_rows:
            data = batch.select(range(len(self.node.fields))) if self._changelog else batch
            batch = batch.filter(self._keep(data))
        return batch

    def _track_time(self, batch: pa.RecordBatch, splits: np.ndarray) -> None:
        data = batch.drop_columns([ROW_KIND]) if self._changelog else batch
        assert self._time is not None
        time_column = self._time(data)
        valid = np.asarray(pc.is_valid(time_column))
        self._watermarks.touch(splits)
        if valid.any():
            times = epoch_millis(time_column.filter(pa.array(valid)), "kafka source watermark")
            self._watermarks.on_records(splits[valid], times)

    def on_idle(self) -> Iterable[Watermark]:
        """A watermark may advance while no records come (an idle partition dropped out)."""
        if self._time is None or not self._started:
            return ()
        watermark = self._watermarks.emit()
        return () if watermark is None else (Watermark(watermark),)

    # -- checkpoints ------------------------------------------------------------------------
    def snapshot_state(self, checkpoint_id: int) -> dict[str, pa.Table]:
        if not self._started:
            return self._store.snapshot()  # nothing taken over yet: the restored state
        rows = {"topic": [t for t, _ in self._splits],
                "partition": [p for _, p in self._splits],
                "offset": list(self._next),
                "max_time": list(self._watermarks.max_time),
                "skip_before": list(self._skip_before),
                "stop": [None if stop is None else stop.offset for stop in self._stop],
                "stop_time": [None if stop is None else stop.at_time_ms
                              for stop in self._stop]}
        self._positions.update(pa.table(rows, schema=_POSITIONS))
        if self._upsert_state is not None and self._decoder.upsert is not None:
            self._upsert_state.update(self._decoder.upsert.snapshot(self._splits))
        if self._group:
            self._committable[checkpoint_id] = [(t, p, o) for (t, p), o
                                                in zip(self._splits, self._next) if o >= 0]
        return self._store.snapshot()

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Commit the offsets of checkpoint ``checkpoint_id`` to the group (monitoring)."""
        from confluent_kafka import TopicPartition

        done = [c for c in self._committable if c <= checkpoint_id]
        if not done or self._consumer is None:
            return
        offsets = self._committable[max(done)]
        for c in done:
            del self._committable[c]
        if offsets:
            self._consumer.commit(offsets=[TopicPartition(t, p, o) for t, p, o in offsets],
                                  asynchronous=True)


def _where(message: Any) -> str:
    return (f"topic '{message.topic()}' partition {message.partition()} offset "
            f"{message.offset()}")


__all__ = ["KafkaScanOperator", "OFFSET_BEGINNING"]
