"""Received bytes -> records: the stream of one connection cut at a delimiter byte.

A record is the bytes between two delimiters (the delimiter belongs to neither). Bytes
after the last delimiter received so far are the *tail*, kept until the rest of their
record arrives. When the connection ends, the tail is a record if the server closed the
connection (Flink's socket source emits what it holds at the end of the stream) and is
dropped if the connection failed: the rest of that record can never arrive.

Positions, for the write-ahead log: every chunk fed comes with the log position of the
entry it was written to (None without a log). :attr:`RecordSplitter.tail_start` is the
entry where the tail starts and how many of that entry's bytes come before it: replaying
the log from there (skipping those bytes) gives exactly the bytes not yet emitted as
records. Counters say, for error messages, how many records of the connection came before
the tail and at which byte of the connection the tail starts.

Splitting is vectorized: one numpy search for the delimiters of a chunk, one Arrow slice
for all its records.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.runtime.checkpoint.wal.segments import LogPosition


@dataclass(frozen=True)
class TailStart:
    """Where the tail starts: the first ``skip`` bytes of the log entry at ``entry`` are
    before it (``entry`` None without a log)."""

    entry: LogPosition | None
    skip: int


@dataclass(frozen=True)
class Records:
    """Records cut from a connection's stream, in order."""

    #: the records' bytes, without delimiters
    values: pa.LargeBinaryArray
    #: the 1-based number of the first record in its connection
    first_number: int
    #: per record, the offset of its first byte in its connection
    byte_offsets: np.ndarray

    def where(self, index: int) -> str:
        return (f"record {self.first_number + index} (byte "
                f"{int(self.byte_offsets[index])})")


_NO_RECORDS = Records(pa.array([], pa.large_binary()), 1, np.zeros(0, np.int64))


class RecordSplitter:
    """Cuts one connection after another into records (see the module docstring)."""

    def __init__(self, delimiter: int, tail_start: TailStart, records_before: int = 0,
                 tail_byte: int = 0) -> None:
        self.delimiter = delimiter
        self.tail = b""
        self.tail_start = tail_start
        #: records of the current connection before the tail
        self.records_before = records_before
        #: offset of the tail's first byte in the current connection
        self.tail_byte = tail_byte

    def feed(self, chunk: bytes, entry: LogPosition | None, skip: int = 0) -> Records:
        """The records that ``chunk`` (bytes ``skip:`` of the log entry at ``entry``)
        completes."""
        if not self.tail:
            self.tail_start = TailStart(entry, skip)
        found = np.flatnonzero(np.frombuffer(chunk, dtype=np.uint8) == self.delimiter)
        if not len(found):
            self.tail += chunk
            return _NO_RECORDS
        data = self.tail + chunk if self.tail else chunk
        ends = found + len(self.tail)  # delimiter offsets in ``data``
        offsets = np.concatenate(([0], ends + 1)).astype(np.int64)
        with_delimiters = pa.LargeBinaryArray.from_buffers(
            pa.large_binary(), len(ends), [None, pa.py_buffer(offsets), pa.py_buffer(data)])
        values = pc.binary_slice(with_delimiters, 0, -1)
        records = Records(values, self.records_before + 1, self.tail_byte + offsets[:-1])
        consumed = int(found[-1]) + 1
        self.tail = chunk[consumed:]
        self.tail_start = TailStart(entry, skip + consumed)
        self.records_before += len(values)
        self.tail_byte += int(offsets[-1])
        return records

    def end(self, clean: bool, next_entry: LogPosition | None) -> tuple[Records, bool]:
        """The connection ended; ``next_entry`` is where the log goes on. Returns the
        tail as a record when the end is ``clean`` (and the tail not empty), and whether
        a tail was dropped. The next connection starts at record 1, byte 0."""
        records, dropped = _NO_RECORDS, False
        if self.tail and clean:
            records = Records(pa.array([self.tail], pa.large_binary()), self.records_before + 1,
                              np.array([self.tail_byte], np.int64))
        elif self.tail:
            dropped = True
        self.tail = b""
        self.tail_start = TailStart(next_entry, 0)
        self.records_before = 0
        self.tail_byte = 0
        return records, dropped
