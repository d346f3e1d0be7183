"""Where a source subtask's write-ahead log lives, from the job's checkpoint settings.

``<checkpoint dir>/<job id>/wal/<operator id>/<subtask>/``: next to the job's
checkpoints, on the same ``pyarrow.fs`` file system (a local path, ``file://`` or
``s3://``), resolved by the same rule as the checkpoint storage. Job and operator ids are
made file-safe as checkpoint paths are. A source records its log's directory *relative to
the checkpoint directory* in its state, so a job restored from another job's checkpoint
replays that job's log and writes its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pyarrow.fs as pafs

from flowsql.planner.config.settings import SettingValues
from flowsql.runtime.checkpoint import paths
from flowsql.runtime.checkpoint.config import CheckpointSettings
from flowsql.runtime.checkpoint.storage import CheckpointStorage
from flowsql.runtime.checkpoint.wal.log import WriteAheadLog

WAL_DIR = "wal"
#: the setting turning the write-ahead log of non-rewindable sources on or off
ENABLED = "execution.source.wal.enabled"


@dataclass(frozen=True)
class LogLocation:
    """A checkpoint directory's file system and base path."""

    filesystem: pafs.FileSystem
    base_path: str
    num_retained: int

    def relative(self, job_id: str, operator_id: str, subtask: int) -> str:
        """The log directory of one source subtask, relative to the base path."""
        return "/".join((paths.file_safe(job_id), WAL_DIR, paths.file_safe(operator_id),
                         str(subtask)))

    def open(self, relative: str) -> WriteAheadLog:
        return WriteAheadLog(self.filesystem, paths.join(self.base_path, relative))


def log_location(settings: Mapping[str, str], checkpointing: bool) -> LogLocation | None:
    """Where this job's source logs go; None when no log is written: checkpointing is
    off (nothing could be restored from it) or ``execution.source.wal.enabled`` is false."""
    if not checkpointing:
        return None
    config = CheckpointSettings.of(settings)
    if config is None or not SettingValues(settings).boolean(ENABLED):
        return None
    # only the file system and base path are used: the job id is not part of them
    storage = CheckpointStorage.from_uri(config.directory, job_id="-")
    return LogLocation(storage.filesystem, storage.base_path, config.num_retained)
