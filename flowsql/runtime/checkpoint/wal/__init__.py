"""A write-ahead log for sources that cannot rewind (Spark Streaming's receiver log).

A source that receives pushed data (a socket) cannot ask for it again after a failure,
so it writes every chunk it receives to this log *before* passing it downstream, and
records a position in the log in its checkpointed state. A restored source replays the
log from the recorded position to its end -- what it received after the checkpoint and
before the failure -- and then reads on. Segments no retained checkpoint needs are
deleted as checkpoints complete.

* :mod:`~flowsql.runtime.checkpoint.wal.frames` -- the bytes of one entry, torn-frame
  detection (pure);
* :mod:`~flowsql.runtime.checkpoint.wal.segments` -- segment names, positions, which
  segments to delete (pure);
* :mod:`~flowsql.runtime.checkpoint.wal.log` -- append, replay and delete over
  ``pyarrow.fs`` (local paths and object stores);
* :mod:`~flowsql.runtime.checkpoint.wal.retained_positions` -- which log position the
  retained checkpoints still need (pure);
* :mod:`~flowsql.runtime.checkpoint.wal.location` -- where a source subtask's log lives.
"""

from flowsql.runtime.checkpoint.wal.log import LogEntry, LogTruncated, WriteAheadLog
from flowsql.runtime.checkpoint.wal.segments import LOG_START, LogPosition

__all__ = ["LOG_START", "LogEntry", "LogPosition", "LogTruncated", "WriteAheadLog"]
