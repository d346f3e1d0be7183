"""Scan of a ``socket`` table: records read from a TCP server, decoded by the table's
format, with a write-ahead log when the job checkpoints.

Contract: a :class:`PolledSource` that never ends (an unbounded source; batch mode refuses
it). Like Flink's socket source it is not parallel: at parallelism > 1 only subtask 0
connects and reads, the others produce nothing (with event-time windows downstream, set
``table.exec.source.idle-timeout`` so their silence does not hold back the watermark).
Records are the bytes between two ``byte-delimiter`` bytes (``records``); each poll's
records are decoded together by the format (json, csv, raw: the Kafka connector's
formats), narrowed to the scanned columns and filtered by the pushed filters. An empty
record (two delimiters in a row) is skipped unless the format is raw. A record the format
cannot decode fails the job with the server's ``host:port``, the record's number in its
connection and its byte offset, unless the format's ``*.ignore-parse-errors`` is set.
Connections are kept up by ``connection`` (retried for ``reconnect-timeout``).

Guarantees:

* with checkpointing on and ``execution.source.wal.enabled`` (the default), every chunk
  received is appended to the subtask's write-ahead log *before* its records go
  downstream; the operator list state ``wal-position`` records where in the log the
  bytes not yet emitted start. A restored source first replays the log from there to its
  end -- what it received after the checkpoint and before the failure -- then connects
  again (a restarted job that restores nothing, because it failed before its first
  checkpoint completed, replays the whole log). With an exactly-once sink, everything
  the source received is in the output exactly once. What the server sent but this source never received (in the buffers of a
  killed process, in flight) is lost: no receiver can recover it;
* without checkpointing, or with the log turned off, records go downstream as they
  arrive and nothing is guaranteed across a failure: what was received since the last
  checkpoint is lost, and the restored source reads what the server sends next.

The log records the ends of connections too (``CLOSED``: the server closed it, the
unterminated last record is emitted, as Flink does; ``LOST``: it failed, and the
incomplete last record is dropped and counted). The end of a replayed log is a lost
connection: the failure ended it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.planner.catalog import TableEntry
from flowsql.planner.config.settings import SettingValues
from flowsql.planner.config.socket import SOCKET
from flowsql.planner.expressions import conjoin
from flowsql.planner.physical import TableScanExec
from flowsql.runtime.checkpoint.wal import LogEntry, LogPosition, WriteAheadLog
from flowsql.runtime.checkpoint.wal.location import LogLocation, log_location
from flowsql.runtime.checkpoint.wal.retained_positions import RetainedPositions
from flowsql.runtime.connectors.filesystem import PARSE_ERRORS_IGNORED
from flowsql.runtime.connectors.kafka.formats import PayloadFormat, payload_format
from flowsql.runtime.connectors.socket.connection import ConnectionEnded, SocketConnection
from flowsql.runtime.connectors.socket.records import Records, RecordSplitter, TailStart
from flowsql.runtime.expressions import compile_predicate
from flowsql.runtime.kernels.batches import batch_size, make_batch
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.contract import PolledSource
from flowsql.runtime.state.store import StateStore

#: log entry tags: received bytes; the server closed the connection; the connection failed
DATA, CLOSED, LOST = 0, 1, 2
#: incomplete last records of failed connections, dropped
INCOMPLETE_RECORDS_DROPPED = "incomplete_records_dropped"
#: most bytes read from the socket, or replayed from the log, in one poll
_POLL_BYTES = 4 * 2**20

_POSITION = pa.schema([pa.field("log", pa.string(), nullable=False),
                       pa.field("segment", pa.int64(), nullable=False),
                       pa.field("offset", pa.int64(), nullable=False),
                       pa.field("skip", pa.int64(), nullable=False),
                       pa.field("checkpoint_id", pa.int64(), nullable=False),
                       pa.field("records_before", pa.int64(), nullable=False),
                       pa.field("tail_byte", pa.int64(), nullable=False)])


@dataclass(frozen=True)
class _Recorded:
    """A ``wal-position`` row: the tail's start in log ``log`` (relative to the checkpoint
    directory), and the counters of its connection."""

    log: str
    start: LogPosition
    skip: int
    checkpoint_id: int
    records_before: int
    tail_byte: int

    @classmethod
    def of(cls, row: dict[str, Any]) -> _Recorded:
        return cls(str(row["log"]), LogPosition(int(row["segment"]), int(row["offset"])),
                   int(row["skip"]), int(row["checkpoint_id"]), int(row["records_before"]),
                   int(row["tail_byte"]))


def check_socket_table(table: TableEntry) -> None:
    """CREATE TABLE: the format must be able to carry the table's columns."""
    payload_format(str(SOCKET.value(table.options, "format")), table.schema, table.options)


class SocketScanOperator(PolledSource):
    """See the module docstring."""

    def __init__(self, node: TableScanExec) -> None:
        self.node = node
        self.table = node.table
        options = self.table.options
        self.host = str(SOCKET.value(options, "hostname"))
        self.port = int(SOCKET.value(options, "port"))
        self.address = f"{self.host}:{self.port}"
        self.delimiter = int(SOCKET.value(options, "byte-delimiter"))
        self.format_name = str(SOCKET.value(options, "format"))
        self._reconnect_s = int(SOCKET.value(options, "reconnect-timeout")) / 1000
        predicate = conjoin(node.filters)
        self._keep = compile_predicate(predicate, node.fields) if predicate is not None else None

    # -- life cycle -------------------------------------------------------------------------

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        if SettingValues(context.settings).string("execution.runtime-mode") != "streaming":
            raise ExecutionError(f"socket table '{self.table.name}' is unbounded (it reads "
                                 f"{self.address} until the job is stopped); query it with "
                                 "SET 'execution.runtime-mode' = 'streaming'")
        self._reads = context.subtask_index == 0
        self._format: PayloadFormat = payload_format(self.format_name, self.table.schema,
                                                     self.table.options)
        self._skip_empty = self.format_name != "raw"
        self._columns = [self.table.schema.get_field_index(f.name) for f in self.node.fields]
        self._batch_size = batch_size(context.settings)
        self._store = StateStore.for_context(context)
        self._position_state = self._store.list_state("wal-position", _POSITION, "union")
        self._connection = SocketConnection(self.host, self.port, self._reconnect_s)
        location = log_location(context.settings, context.checkpointing) if self._reads \
            else None
        self._location: LogLocation | None = location
        self._log: WriteAheadLog | None = None
        self._log_dir = ""
        self._retained: RetainedPositions[tuple[str, LogPosition]] | None = None
        if location is not None:
            self._log_dir = location.relative(context.job_id,
                                              context.operator_id or context.name,
                                              context.subtask_index)
            self._log = location.open(self._log_dir)
            self._retained = RetainedPositions(location.num_retained)
        self._splitter = RecordSplitter(
            self.delimiter, TailStart(self._log.end if self._log else None, 0))
        #: the log the splitter's positions refer to (another one while replaying a
        #: restored job's log)
        self._position_log = self._log_dir
        self._restored: _Recorded | None = None
        self._replay: Iterator[LogEntry] | None = None
        self._started = False

    def restore_state(self, state: dict[str, pa.Table]) -> None:
        """Subtask 0 takes the recorded position (there is at most one: only subtask 0
        records one); the others keep nothing."""
        self._store.restore(state)
        rows = self._position_state.rows.to_pylist()
        if not self._reads:
            self._position_state.update(self._position_state.rows.slice(0, 0))
            return
        if rows and self._retained is not None:
            recorded = self._restored = _Recorded.of(rows[-1])
            self._retained.restored(recorded.checkpoint_id, (recorded.log, recorded.start))

    def close(self) -> None:
        connection = getattr(self, "_connection", None)
        if connection is not None:
            connection.close()
        log = getattr(self, "_log", None)
        if log is not None:
            log.close()

    # -- polling ----------------------------------------------------------------------------

    def poll(self, max_wait_s: float) -> list[pa.RecordBatch]:  # type: ignore[override]
        if not self._reads:
            time.sleep(max(max_wait_s, 0.0))
            return []
        if not self._started:
            self._start()
        if self._replay is not None:
            return self._replayed()
        received = self._connection.receive(max_wait_s, _POLL_BYTES)
        if isinstance(received, ConnectionEnded):
            return self._ended(received.clean)
        if not received:
            return []
        entry = None
        if self._log is not None:
            entry = self._log.end
            self._log.append(DATA, received)  # ahead of everything downstream
        return self._batches(self._splitter.feed(received, entry))

    def _start(self) -> None:
        """Replay a restored position's log first (only with the log on). A restarted
        attempt that restores nothing (the job failed before its first checkpoint
        completed, so no output was committed) replays the whole log its earlier attempts
        wrote."""
        self._started = True
        if self._location is None:
            return
        if self._restored is None and self.context.attempt > 0 and self._log is not None:
            written = self._log.segments()
            if written:
                self._restored = _Recorded(self._log_dir, LogPosition(written[0], 0), 0, -1,
                                           0, 0)
        recorded = self._restored
        if recorded is None:
            return
        self._position_log = recorded.log
        self._splitter = RecordSplitter(self.delimiter,
                                        TailStart(recorded.start, recorded.skip),
                                        recorded.records_before, recorded.tail_byte)
        log = (self._log if recorded.log == self._log_dir and self._log is not None
               else self._location.open(recorded.log))
        self._replay = log.replay(recorded.start)

    def _replayed(self) -> list[pa.RecordBatch]:
        """The records of the next replayed entries (about ``_POLL_BYTES`` of them); at
        the end of the log, the connection the failure ended is lost."""
        assert self._replay is not None
        out: list[pa.RecordBatch] = []
        size = 0
        for entry in self._replay:
            if entry.tag == DATA:
                assert self._restored is not None
                skip = self._restored.skip if entry.position == self._restored.start else 0
                out += self._batches(self._splitter.feed(entry.payload[skip:],
                                                         entry.position, skip))
                size += len(entry.payload)
            else:
                out += self._end_connection(entry.tag == CLOSED, entry.next)
            if size >= _POLL_BYTES:
                return out
        self._replay = None
        self._position_log = self._log_dir
        return out + self._ended(clean=False)

    def _ended(self, clean: bool) -> list[pa.RecordBatch]:
        """The current connection ended (logged first, as data is)."""
        next_entry = None
        if self._log is not None:
            next_entry = self._log.append(CLOSED if clean else LOST, b"")
        return self._end_connection(clean, next_entry)

    def _end_connection(self, clean: bool, next_entry: LogPosition | None
                        ) -> list[pa.RecordBatch]:
        records, dropped = self._splitter.end(clean, next_entry)
        if dropped:
            metrics = self.context.metrics
            metrics[INCOMPLETE_RECORDS_DROPPED] = metrics.get(INCOMPLETE_RECORDS_DROPPED,
                                                              0) + 1
        return self._batches(records)

    # -- decoding ---------------------------------------------------------------------------

    def _batches(self, records: Records) -> list[pa.RecordBatch]:
        values = records.values
        if not len(values):
            return []
        index = np.arange(len(values))
        if self._skip_empty:
            present = pc.greater(pc.binary_length(values), 0)
            if not pc.all(present).as_py():
                index = np.flatnonzero(np.asarray(present))
                values = values.filter(present)
                if not len(values):
                    return []
        decoded = self._format.decode(values.to_pylist(), lambda i: (
            f"socket source {self.address}: {records.where(int(index[i]))}"))
        if decoded.skipped:
            metrics = self.context.metrics
            metrics[PARSE_ERRORS_IGNORED] = metrics.get(PARSE_ERRORS_IGNORED, 0) + \
                decoded.skipped
        rows = decoded.batch
        batch = make_batch([rows.column(i) for i in self._columns], self.node.fields,
                           rows.num_rows)
        if self._keep is not None and batch.num_rows:
            batch = batch.filter(self._keep(batch))
        if not batch.num_rows:
            return []
        return [batch.slice(start, self._batch_size)
                for start in range(0, batch.num_rows, self._batch_size)]

    # -- checkpoints ------------------------------------------------------------------------

    def snapshot_state(self, checkpoint_id: int) -> dict[str, pa.Table]:
        """Record where the bytes not yet emitted start; roll the log, so that whatever
        lies before becomes deletable as whole segments."""
        if self._log is None or self._retained is None or not self._started:
            return self._store.snapshot()  # no log, or the restored state untouched
        tail = self._splitter.tail_start
        assert tail.entry is not None
        row = {"log": self._position_log, "segment": tail.entry.segment,
               "offset": tail.entry.offset, "skip": tail.skip, "checkpoint_id": checkpoint_id,
               "records_before": self._splitter.records_before,
               "tail_byte": self._splitter.tail_byte}
        self._position_state.update(pa.Table.from_pylist([row], schema=_POSITION))
        self._retained.taken(checkpoint_id, (self._position_log, tail.entry))
        self._log.roll()
        return self._store.snapshot()

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Delete the segments of this subtask's own log that no retained checkpoint
        needs (never another job's log a restore read from)."""
        if self._log is None or self._retained is None:
            return
        keep = self._retained.completed(checkpoint_id)
        if keep is not None and keep[0] == self._log_dir:
            self._log.delete_before(keep[1])
