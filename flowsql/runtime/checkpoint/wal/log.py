"""A write-ahead log over ``pyarrow.fs``: the I/O edge of the log (frames and segment
rules are in ``frames`` and ``segments``).

Contract:

* ``append`` returns only once the entry's frame is written whole where a crash of the
  writing process cannot lose it: on a local (or any appendable) file system the frame
  is written to the open segment file, unbuffered, so it is in the operating system's
  hands (a process kill keeps it; only a machine crash without fsync could not); on an
  object store (S3, GCS, Azure), which cannot append, every entry is a segment object of
  its own, uploaded in one request that becomes visible whole or not at all. A caller
  passes an entry on (downstream) only after ``append`` returned: that is what makes the
  log *ahead*;
* a writer never touches segments that existed when it opened the log: its first
  segment comes after the highest present, so a torn segment a crashed writer left is
  read up to its torn frame (``parse_frames``) and never extended;
* ``replay(start)`` yields every entry from ``start`` to the end of the log in log
  order (segment by segment, frame by frame), each with its position and the position
  after it. A start whose segment is gone is an error (the entries it names were
  deleted), unless nothing was written there yet (no later segment, offset 0);
* ``delete_before(position)`` deletes the segments wholly before ``position``; the
  segment holding it and everything after stay.

One writer per log directory at a time (a source subtask owns its directory; a restarted
subtask opens the log only after the failed one ended).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs

from flowsql.runtime.checkpoint.wal.frames import encode_frame, parse_frames
from flowsql.runtime.checkpoint.wal.segments import (
    LogPosition,
    parse_segments,
    segment_name,
    segments_to_delete,
)

#: file systems that cannot append: every entry is a segment object of its own
_OBJECT_STORES = frozenset({"s3", "gcs", "abfs"})
#: an appendable segment is closed and the next one started at this size
ROLL_BYTES = 64 * 2**20


@dataclass(frozen=True)
class LogEntry:
    """One entry replayed: where its frame starts, its tag and payload, and the position
    right after it (where the next entry starts)."""

    position: LogPosition
    tag: int
    payload: bytes
    next: LogPosition


@dataclass
class ReplayStats:
    """What a replay met besides entries: segments whose last frame was torn by a crash."""

    torn_segments: int = 0


class WriteAheadLog:
    """The log in ``directory`` of ``filesystem`` (see the module contract)."""

    def __init__(self, filesystem: pafs.FileSystem, directory: str,
                 roll_bytes: int = ROLL_BYTES) -> None:
        self.filesystem = filesystem
        self.directory = directory.rstrip("/")
        self.roll_bytes = roll_bytes
        self.appendable = filesystem.type_name not in _OBJECT_STORES
        if self.appendable:
            filesystem.create_dir(self.directory, recursive=True)
        present = self.segments()
        #: the segment the next append writes (created on that append)
        self._segment = present[-1] + 1 if present else 0
        self._offset = 0
        self._stream: pa.NativeFile | None = None
        self.stats = ReplayStats()

    # -- writing ----------------------------------------------------------------------------

    @property
    def end(self) -> LogPosition:
        """The position the next appended entry will have."""
        return LogPosition(self._segment, self._offset)

    def append(self, tag: int, payload: bytes) -> LogPosition:
        """Write one entry (see the module contract); returns the position after it."""
        frame = encode_frame(tag, payload)
        if not self.appendable:
            with self.filesystem.open_output_stream(self._path(self._segment),
                                                    compression=None) as sink:
                sink.write(frame)
            self._segment += 1
            return self.end
        if self._stream is None:
            self._stream = self.filesystem.open_output_stream(self._path(self._segment),
                                                              compression=None)
        self._stream.write(frame)
        self._stream.flush()
        self._offset += len(frame)
        if self._offset >= self.roll_bytes:
            self.roll()
        return self.end

    def roll(self) -> None:
        """Close the current segment (if it has entries): the next append starts a new one,
        so everything so far becomes deletable as a whole once no one needs it."""
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        if self._offset:
            self._segment += 1
            self._offset = 0

    def close(self) -> None:
        self.roll()

    # -- reading ----------------------------------------------------------------------------

    def segments(self) -> list[int]:
        """The segment numbers present, ascending."""
        selector = pafs.FileSelector(self.directory, allow_not_found=True)
        infos = self.filesystem.get_file_info(selector)
        return parse_segments(info.base_name for info in infos
                              if info.type == pafs.FileType.File)

    def replay(self, start: LogPosition) -> Iterator[LogEntry]:
        """The entries from ``start`` to the end of the log (see the module contract)."""
        present = [n for n in self.segments() if n >= start.segment]
        # segment numbers have no gaps but a deleted prefix, and a segment exists once an
        # entry was written to it: a missing start segment with later ones, or a missing
        # start segment holding the position's bytes, was deleted
        missing = not present or present[0] != start.segment
        if missing and (present or start.offset):
            raise LogTruncated(f"write-ahead log {self.directory}: segment {start.segment} "
                               "is gone; the entries a restore needs were deleted")
        for segment in present:
            with self.filesystem.open_input_file(self._path(segment)) as source:
                data = source.read()
            offset = start.offset if segment == start.segment else 0
            if offset > len(data):
                raise LogTruncated(f"write-ahead log {self.directory}: segment {segment} "
                                   f"has {len(data)} bytes, not the {offset} a restore needs")
            frames, torn = parse_frames(data, offset,
                                        f"write-ahead log {self._path(segment)}")
            self.stats.torn_segments += int(torn)
            for frame in frames:
                yield LogEntry(LogPosition(segment, frame.offset), frame.tag, frame.payload,
                               LogPosition(segment, frame.end))

    # -- cleaning up ------------------------------------------------------------------------

    def delete_before(self, position: LogPosition) -> list[int]:
        """Delete the segments wholly before ``position``; returns their numbers."""
        doomed = segments_to_delete(self.segments(), position)
        for segment in doomed:
            with contextlib.suppress(FileNotFoundError):
                self.filesystem.delete_file(self._path(segment))
        return doomed

    def _path(self, segment: int) -> str:
        return f"{self.directory}/{segment_name(segment)}"


class LogTruncated(RuntimeError):
    """A replay asked for entries that were deleted."""
