"""Which checkpoint to restore, which to delete, which shared files are garbage (pure).

Rules (as Flink's ``state.checkpoints.num-retained``, default 1):

* the checkpoint to restore is the *completed* one (``_metadata`` present) with the highest
  id; an incomplete ``chk-<n>`` (a crash before its metadata was written, an aborted or a
  still running checkpoint) is never restored;
* after a checkpoint completes, the ``num_retained`` newest completed checkpoints stay; older
  completed ones are deleted, and so is every incomplete directory older than the newest
  completed one (it was aborted or subsumed), unless the caller says it is still in
  progress; an incomplete directory *newer* than the newest completed one may be a running
  checkpoint and is left alone;
* a shared file is deleted only when a deleted checkpoint referenced it and no retained
  checkpoint (nor a checkpoint still in progress) references it: reference counting over the
  ``shared_files`` of the metadata documents. A shared file no completed checkpoint ever
  referenced (an upload of a running checkpoint) is never deleted by this rule.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from flowsql.runtime.checkpoint.paths import CheckpointDirectory

#: Flink's ``state.checkpoints.num-retained`` default
DEFAULT_NUM_RETAINED = 1


def latest_completed(directories: Iterable[CheckpointDirectory]) -> int | None:
    """Id of the newest completed checkpoint, None when there is none."""
    return max((d.checkpoint_id for d in directories if d.completed), default=None)


@dataclass(frozen=True, slots=True)
class RetentionPlan:
    """Checkpoints to keep and to delete, by id, each ascending."""

    retained: tuple[int, ...]
    deleted: tuple[int, ...]


def plan_retention(directories: Iterable[CheckpointDirectory], num_retained: int,
                   in_progress: Iterable[int] = ()) -> RetentionPlan:
    """Apply the rules of the module docstring to a listing."""
    if num_retained < 1:
        raise ValueError(f"num-retained must be at least 1, got {num_retained}")
    directories = list(directories)
    running = set(in_progress)
    completed = sorted(d.checkpoint_id for d in directories if d.completed)
    retained = completed[-num_retained:]
    newest = completed[-1] if completed else None
    deleted = [n for n in completed[:-num_retained]]
    deleted += [d.checkpoint_id for d in directories
                if not d.completed and newest is not None and d.checkpoint_id < newest
                and d.checkpoint_id not in running]
    return RetentionPlan(tuple(retained), tuple(sorted(deleted)))


def shared_files_to_delete(discarded: Iterable[Iterable[str]],
                           retained: Iterable[Iterable[str]],
                           in_use: Iterable[str] = ()) -> frozenset[str]:
    """Shared files referenced by a discarded checkpoint and by no retained one.

    ``discarded`` and ``retained`` hold, per checkpoint, its metadata's ``shared_files``;
    ``in_use`` are files that running checkpoints have already referenced in their
    acknowledgements (they have no metadata yet)."""
    candidates = {name for files in discarded for name in files}
    referenced = {name for files in retained for name in files} | set(in_use)
    return frozenset(candidates - referenced)
