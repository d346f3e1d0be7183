"""The write-ahead log of non-rewindable sources: append, positions, replay, deletion and a
torn last segment, on a local directory and on S3 (moto), where every entry is a segment
object of its own."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from flowsql.errors import ExecutionError
from flowsql.runtime.checkpoint.wal import LOG_START, LogPosition, LogTruncated, WriteAheadLog
from flowsql.runtime.checkpoint.wal.frames import HEADER_BYTES, encode_frame, parse_frames
from flowsql.runtime.checkpoint.wal.retained_positions import RetainedPositions
from flowsql.runtime.checkpoint.wal.segments import (
    parse_segments,
    segment_name,
    segments_to_delete,
)

OpenLog = Callable[[], WriteAheadLog]


@pytest.fixture(params=["local", "s3"])
def open_log(request: pytest.FixtureRequest, tmp_path: Path) -> OpenLog:
    """A function opening (again) the same log directory, as a restarted writer would."""
    if request.param == "local":
        return lambda: WriteAheadLog(pafs.LocalFileSystem(), str(tmp_path / "wal" / "0"))
    filesystem, bucket = request.getfixturevalue("s3_filesystem")
    return lambda: WriteAheadLog(filesystem, f"{bucket}/job/wal/op/0")


def _replayed(log: WriteAheadLog, start: LogPosition = LOG_START) -> list[tuple[int, bytes]]:
    return [(entry.tag, entry.payload) for entry in log.replay(start)]


# -- frames and segments (pure) -------------------------------------------------------------

def test_frames_round_trip_and_torn_tail_is_dropped():
    data = encode_frame(0, b"one") + encode_frame(7, b"") + encode_frame(1, b"three")
    frames, torn = parse_frames(data)
    assert [(f.tag, f.payload) for f in frames] == [(0, b"one"), (7, b""), (1, b"three")]
    assert not torn
    assert frames[1].offset == frames[0].end == HEADER_BYTES + 3
    for cut in range(1, len(encode_frame(1, b"three"))):
        frames, torn = parse_frames(data[:-cut])
        assert [f.payload for f in frames] == [b"one", b""] and torn
    # a page zero-filled by a machine crash is torn as well
    frames, torn = parse_frames(data + bytes(40))
    assert len(frames) == 3 and torn


def test_corruption_before_the_end_is_an_error():
    first, second = encode_frame(0, b"abcdef"), encode_frame(0, b"ghi")
    flipped = first[:-1] + b"X" + second
    with pytest.raises(ExecutionError, match="byte 0 does not match its checksum"):
        parse_frames(flipped)
    with pytest.raises(ExecutionError, match=f"no log entry starts at byte {len(first)}"):
        parse_frames(first + b"garbage" + second)
    # the same damage in the last frame is a torn tail
    frames, torn = parse_frames(second + first[:-1] + b"X")
    assert [f.payload for f in frames] == [b"ghi"] and torn


def test_segment_names_sort_as_numbers_and_deletion_keeps_the_position_segment():
    names = [segment_name(n) for n in (10, 2, 1)] + ["segment-3.wal", ".tmp", "x.wal"]
    assert parse_segments(names) == [1, 2, 10]
    assert segment_name(2) < segment_name(10)
    assert segments_to_delete([1, 2, 10], LogPosition(10, 0)) == [1, 2]
    assert segments_to_delete([1, 2, 10], LogPosition(2, 500)) == [1]
    assert LogPosition(1, 900) < LogPosition(2, 0)


def test_retained_positions_follow_num_retained_and_lost_notifications():
    kept = RetainedPositions(2)
    for checkpoint in (1, 2, 3, 4):
        kept.taken(checkpoint, LogPosition(checkpoint, 10))
    assert kept.completed(1) is None  # one known, two retained
    assert kept.completed(2) == LogPosition(1, 10)
    # 3's notification is lost: 4's subsumes it, and the second newest known is 2
    assert kept.completed(4) == LogPosition(2, 10)
    kept.taken(5, LogPosition(5, 0))
    assert kept.completed(5) == LogPosition(4, 10)

    restored = RetainedPositions(1)
    restored.restored(7, LogPosition(3, 4))
    assert restored.keep_from() == LogPosition(3, 4)
    assert restored.completed(8) == LogPosition(3, 4)  # 8 was never taken here


# -- the log on a file system ----------------------------------------------------------------

def test_append_replay_from_positions(open_log: OpenLog):
    log = open_log()
    assert log.end == LOG_START
    positions = [log.end]
    for payload in (b"alpha\n", b"be", b"ta\ngamma\n"):
        positions.append(log.append(0, payload))
    log.append(2, b"")  # a marker entry without payload
    entries = list(log.replay(LOG_START))
    assert [(e.tag, e.payload) for e in entries] == [
        (0, b"alpha\n"), (0, b"be"), (0, b"ta\ngamma\n"), (2, b"")]
    assert [e.position for e in entries[:3]] == [_normal(log, p) for p in positions[:3]]
    assert all(a.next <= b.position or _same(log, a.next, b.position)
               for a, b in zip(entries, entries[1:]))
    # from each entry's position: that entry and everything after it
    for index, entry in enumerate(entries):
        assert _replayed(log, entry.position) == [(e.tag, e.payload) for e in entries[index:]]
    assert _replayed(log, entries[-1].next) == []
    log.close()


def test_a_reopened_log_writes_new_segments_after_the_old_ones(open_log: OpenLog):
    first = open_log()
    first.append(0, b"a")
    first.append(0, b"b")
    middle = first.end
    first.close()
    second = open_log()
    assert second.end.segment > max(second.segments())
    second.append(0, b"c")
    assert _replayed(second) == [(0, b"a"), (0, b"b"), (0, b"c")]
    assert _replayed(second, middle) == [(0, b"c")]
    second.close()


def test_roll_and_delete_before(open_log: OpenLog):
    log = open_log()
    log.append(0, b"1")
    log.append(0, b"2")
    log.roll()
    keep = log.end
    log.append(0, b"3")
    log.roll()
    log.append(0, b"4")
    deleted = log.delete_before(keep)
    assert deleted and all(n < keep.segment for n in deleted)
    assert _replayed(log, keep) == [(0, b"3"), (0, b"4")]
    for gone in (LogPosition(0, 5), LogPosition(0, 0)):
        with pytest.raises(LogTruncated, match="were deleted"):
            list(log.replay(gone))
    # a position nothing was written at yet replays nothing
    log.roll()
    assert _replayed(log, log.end) == []
    log.close()


def test_local_segments_hold_many_entries_until_they_roll(tmp_path: Path):
    log = WriteAheadLog(pafs.LocalFileSystem(), str(tmp_path / "log"), roll_bytes=100)
    for i in range(20):
        log.append(0, b"x" * 30 + str(i).encode())
    assert 5 <= len(log.segments()) <= 10  # about three 44-byte frames per segment
    assert [p for _, p in _replayed(log)] == [b"x" * 30 + str(i).encode() for i in range(20)]
    log.close()


def test_torn_last_segment_after_a_crash(tmp_path: Path):
    directory = tmp_path / "log"
    log = WriteAheadLog(pafs.LocalFileSystem(), str(directory))
    log.append(0, b"kept-1")
    position = log.append(0, b"kept-2")
    log.append(0, b"torn by the crash")
    # the process dies while the last frame is half written: no close, file cut short
    log._stream = None  # noqa: SLF001 -- the crash: the stream is never closed
    (segment,) = directory.iterdir()
    with open(segment, "r+b") as handle:
        handle.truncate(os.path.getsize(segment) - 5)

    restarted = WriteAheadLog(pafs.LocalFileSystem(), str(directory))
    assert _replayed(restarted) == [(0, b"kept-1"), (0, b"kept-2")]
    assert restarted.stats.torn_segments == 1
    assert _replayed(restarted, position) == []
    # the restarted writer goes on in a new segment; the torn one is never extended
    restarted.append(0, b"after")
    assert _replayed(restarted, position) == [(0, b"after")]
    assert len(restarted.segments()) == 2
    restarted.close()


def _normal(log: WriteAheadLog, position: LogPosition) -> LogPosition:
    """On an object store an entry's end is the next segment's start."""
    if log.appendable:
        return position
    return position if position.offset == 0 else LogPosition(position.segment + 1, 0)


def _same(log: WriteAheadLog, a: LogPosition, b: LogPosition) -> bool:
    return _normal(log, a) == _normal(log, b)
