"""Cutting a connection's bytes into records: records across chunks, the tail's place in
the log (entry and bytes to skip), record numbers and byte offsets, the ends of a
connection (closed: the tail is a record; lost: it is dropped)."""

from __future__ import annotations

from flowsql.runtime.checkpoint.wal import LogPosition
from flowsql.runtime.connectors.socket.records import RecordSplitter, TailStart

A, B, C, D = (LogPosition(0, offset) for offset in (0, 20, 40, 60))


def test_records_across_chunks_and_the_tail_position() -> None:
    splitter = RecordSplitter(ord("\n"), TailStart(A, 0))
    first = splitter.feed(b"ab\ncd\nef", A)
    assert first.values.to_pylist() == [b"ab", b"cd"]
    assert [first.where(i) for i in range(2)] == ["record 1 (byte 0)", "record 2 (byte 3)"]
    assert splitter.tail_start == TailStart(A, 6) and splitter.tail == b"ef"
    # no delimiter: the tail grows and still starts in the first entry
    assert splitter.feed(b"gh", B).values.to_pylist() == []
    assert splitter.tail_start == TailStart(A, 6)
    third = splitter.feed(b"i\n\njk", C)
    assert third.values.to_pylist() == [b"efghi", b""]
    assert [third.where(i) for i in range(2)] == ["record 3 (byte 6)", "record 4 (byte 12)"]
    assert splitter.tail_start == TailStart(C, 3)
    assert (splitter.records_before, splitter.tail_byte) == (4, 13)
    # a chunk ending with a delimiter leaves an empty tail after it
    assert splitter.feed(b"l\n", D).values.to_pylist() == [b"jkl"]
    assert splitter.tail_start == TailStart(D, 2) and splitter.tail == b""


def test_a_restored_splitter_goes_on_counting() -> None:
    splitter = RecordSplitter(ord(";"), TailStart(B, 4), records_before=9, tail_byte=100)
    records = splitter.feed(b"x;yz;", B, skip=4)
    assert records.values.to_pylist() == [b"x", b"yz"]
    assert [records.where(i) for i in range(2)] == ["record 10 (byte 100)",
                                                    "record 11 (byte 102)"]
    assert splitter.tail_start == TailStart(B, 9)


def test_the_end_of_a_connection() -> None:
    splitter = RecordSplitter(ord("\n"), TailStart(A, 0))
    splitter.feed(b"a\nlast", A)
    records, dropped = splitter.end(clean=True, next_entry=B)
    assert records.values.to_pylist() == [b"last"] and not dropped
    assert records.where(0) == "record 2 (byte 2)"
    assert splitter.tail_start == TailStart(B, 0)
    assert (splitter.records_before, splitter.tail_byte) == (0, 0)
    splitter.feed(b"b\nhalf", C)
    records, dropped = splitter.end(clean=False, next_entry=D)
    assert records.values.to_pylist() == [] and dropped
    records, dropped = splitter.end(clean=False, next_entry=D)  # nothing held: nothing lost
    assert records.values.to_pylist() == [] and not dropped
