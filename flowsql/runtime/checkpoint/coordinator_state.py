"""The checkpoint coordinator's bookkeeping: pending checkpoints as a state machine.

No I/O, no clock, no threads: the coordinator feeds in events with the current time
(``now_ms``) and carries out what the returned values say (inject barriers, write the
metadata, notify tasks, delete an aborted checkpoint's files). The life of checkpoint ``n``::

    trigger --> PENDING --every (operator, subtask) acknowledged--> ACKNOWLEDGED
                   |                                                    |
       declined, expired, job failure,                 metadata written | metadata failed
       subsumed by a newer completion                                   v
                   v                                  COMPLETED (notify tasks)  ABORTED
                ABORTED

Rules (Flink's, with its option names in ``CheckpointingConfig``):

* a periodic trigger needs ``interval_ms`` since the previous trigger, ``min_pause_ms`` since
  the previous *completion*, and fewer than ``max_concurrent`` checkpoints not yet completed
  (default 1: one at a time); a savepoint is forced past all three;
* ids increase by one per trigger and are never reused, aborted or not;
* a checkpoint completes when every subtask of every operator acknowledged it with its
  snapshot handles; ``AllAcknowledged`` carries the metadata to write, and only after
  ``metadata_written`` are tasks told (``notify_checkpoint_complete``): a two-phase-commit
  sink must never commit a checkpoint that recovery could not restore;
* completing ``n`` aborts every pending checkpoint older than ``n`` (subsumed);
* a pending checkpoint expires ``timeout_ms`` after its trigger; a declined or expired one,
  or one whose metadata could not be written, counts as a failure: more than
  ``tolerable_failures`` consecutive failures ask for a job failover (``fail_job``); aborts
  because the job failed, or because a newer checkpoint completed, do not count;
* an acknowledgement for a checkpoint no longer pending is ``Late``: its files belong to no
  checkpoint and the caller deletes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from flowsql.errors import ExecutionError
from flowsql.runtime.checkpoint.metadata import CheckpointMetadata, OperatorState, SubtaskState

#: one acknowledging unit: (operator id, subtask index)
SubtaskKey = tuple[str, int]


@dataclass(frozen=True)
class CheckpointingConfig:
    """Flink's ``execution.checkpointing.*`` options: ``interval``, ``timeout`` (10 min),
    ``min-pause`` (0), ``max-concurrent-checkpoints`` (1),
    ``tolerable-failed-checkpoints`` (0)."""

    interval_ms: int
    timeout_ms: int = 600_000
    min_pause_ms: int = 0
    max_concurrent: int = 1
    tolerable_failures: int = 0

    def __post_init__(self) -> None:
        if self.interval_ms <= 0 or self.timeout_ms <= 0:
            raise ValueError("checkpoint interval and timeout must be positive")
        if self.min_pause_ms < 0 or self.max_concurrent < 1 or self.tolerable_failures < 0:
            raise ValueError("min pause and tolerable failures must not be negative, "
                             "max concurrent checkpoints must be at least 1")


@dataclass(frozen=True)
class JobVertex:
    """An operator whose subtasks acknowledge checkpoints."""

    operator_id: str
    parallelism: int
    max_parallelism: int


@dataclass(frozen=True)
class Triggered:
    """Inject barrier ``checkpoint_id`` (stamped ``timestamp_ms``) at every source."""

    checkpoint_id: int
    timestamp_ms: int
    kind: str


@dataclass(frozen=True)
class NotTriggered:
    """Not now; ``retry_at_ms`` is the earliest time it could work (None: after a pending
    checkpoint ends)."""

    reason: str
    retry_at_ms: int | None


@dataclass(frozen=True)
class StillPending:
    checkpoint_id: int
    remaining: int


@dataclass(frozen=True)
class AllAcknowledged:
    """Write ``metadata`` (``CheckpointStorage.commit``), then call ``metadata_written``."""

    metadata: CheckpointMetadata


@dataclass(frozen=True)
class Late:
    """An acknowledgement of a checkpoint that is no longer pending: delete its files."""

    checkpoint_id: int
    state: SubtaskState


@dataclass(frozen=True)
class Aborted:
    """Checkpoint ``checkpoint_id`` is gone: delete its directory and tell tasks to drop it
    (``acknowledged`` lists the snapshots uploaded so far). ``fail_job``: the tolerance of
    consecutive checkpoint failures is exhausted."""

    checkpoint_id: int
    reason: str
    acknowledged: tuple[SubtaskState, ...]
    fail_job: bool = False


@dataclass(frozen=True)
class CompletionNotice:
    """Checkpoint ``checkpoint_id`` is durable: call ``notify_checkpoint_complete`` on every
    subtask in ``notify``; ``subsumed`` are older pending checkpoints aborted by it."""

    checkpoint_id: int
    notify: tuple[SubtaskKey, ...]
    subsumed: tuple[Aborted, ...]


@dataclass
class _Pending:
    checkpoint_id: int
    timestamp_ms: int
    kind: str
    awaiting: set[SubtaskKey]
    acknowledged: dict[SubtaskKey, SubtaskState] = field(default_factory=dict)
    all_acknowledged_ms: int | None = None


class CheckpointCoordinatorState:
    """Pending checkpoints of one job; see the module docstring for the rules."""

    def __init__(self, job_id: str, config: CheckpointingConfig, vertices: Sequence[JobVertex],
                 started_ms: int, next_checkpoint_id: int = 1) -> None:
        if len({v.operator_id for v in vertices}) != len(vertices):
            raise ExecutionError("operator ids of a job must be unique")
        self.job_id = job_id
        self.config = config
        self.vertices = tuple(vertices)
        self.next_checkpoint_id = next_checkpoint_id
        self.last_completed_id: int | None = None
        self.consecutive_failures = 0
        self._pending: dict[int, _Pending] = {}
        # the first periodic checkpoint is due one interval after the start
        self._last_trigger_ms = started_ms
        self._last_completion_ms: int | None = None

    @property
    def pending_ids(self) -> tuple[int, ...]:
        return tuple(sorted(self._pending))

    def subtasks(self) -> tuple[SubtaskKey, ...]:
        return tuple((v.operator_id, s) for v in self.vertices for s in range(v.parallelism))

    def shared_files_in_use(self) -> dict[int, tuple[str, ...]]:
        """Per pending checkpoint, the shared files its acknowledgements reference (retention
        must keep them)."""
        return {n: tuple(sorted({name for s in p.acknowledged.values()
                                 for name in s.shared_files}))
                for n, p in self._pending.items()}

    # -- triggering --------------------------------------------------------------------------

    def trigger(self, now_ms: int, kind: str = "checkpoint",
                force: bool = False) -> Triggered | NotTriggered:
        """Start checkpoint ``next_checkpoint_id`` if the rules allow it now; ``kind`` is
        ``checkpoint`` or ``savepoint``. ``force`` (the final checkpoint of a job whose
        input ended, the one a stop takes) passes interval, pause and concurrency, as a
        savepoint does."""
        if kind not in ("checkpoint", "savepoint"):
            raise ValueError(f"unknown checkpoint kind {kind!r}")
        if kind == "checkpoint" and not force:
            refusal = self._refusal(now_ms)
            if refusal is not None:
                return refusal
        checkpoint_id = self.next_checkpoint_id
        self.next_checkpoint_id += 1
        self._last_trigger_ms = now_ms
        self._pending[checkpoint_id] = _Pending(checkpoint_id, now_ms, kind,
                                                set(self.subtasks()))
        return Triggered(checkpoint_id, now_ms, kind)

    def _refusal(self, now_ms: int) -> NotTriggered | None:
        if len(self._pending) >= self.config.max_concurrent:
            return NotTriggered(f"{len(self._pending)} checkpoint(s) in progress, at most "
                                f"{self.config.max_concurrent}", None)
        due = self._last_trigger_ms + self.config.interval_ms
        if self._last_completion_ms is not None:
            due = max(due, self._last_completion_ms + self.config.min_pause_ms)
        if now_ms < due:
            return NotTriggered("interval or minimum pause not elapsed", due)
        return None

    # -- acknowledgements --------------------------------------------------------------------

    def acknowledge(self, checkpoint_id: int, operator_id: str, state: SubtaskState,
                    now_ms: int) -> StillPending | AllAcknowledged | Late:
        """Subtask ``state.subtask`` of ``operator_id`` snapshotted and uploaded ``state``."""
        pending = self._pending.get(checkpoint_id)
        if pending is None:
            return Late(checkpoint_id, state)
        key = (operator_id, state.subtask)
        if key not in pending.awaiting:
            known = key in pending.acknowledged
            raise ExecutionError(
                f"checkpoint {checkpoint_id}: {'duplicate' if known else 'unexpected'} "
                f"acknowledgement from subtask {state.subtask} of '{operator_id}'")
        pending.awaiting.discard(key)
        pending.acknowledged[key] = state
        if pending.awaiting:
            return StillPending(checkpoint_id, len(pending.awaiting))
        pending.all_acknowledged_ms = now_ms
        return AllAcknowledged(self._metadata(pending, now_ms))

    def _metadata(self, pending: _Pending, now_ms: int) -> CheckpointMetadata:
        operators = tuple(
            OperatorState(v.operator_id, v.parallelism, v.max_parallelism,
                          tuple(pending.acknowledged[(v.operator_id, s)]
                                for s in range(v.parallelism)))
            for v in self.vertices)
        return CheckpointMetadata(self.job_id, pending.checkpoint_id, pending.timestamp_ms,
                                  now_ms, operators, pending.kind)

    # -- completion --------------------------------------------------------------------------

    def metadata_written(self, checkpoint_id: int, now_ms: int) -> CompletionNotice:
        """The metadata of a fully acknowledged checkpoint is durable: it is completed."""
        pending = self._pending.get(checkpoint_id)
        if pending is None or pending.all_acknowledged_ms is None:
            raise ExecutionError(f"checkpoint {checkpoint_id} is not fully acknowledged")
        del self._pending[checkpoint_id]
        self.last_completed_id = checkpoint_id
        self._last_completion_ms = now_ms
        self.consecutive_failures = 0
        subsumed = tuple(self._abort(n, f"subsumed by checkpoint {checkpoint_id}",
                                     counts=False)
                         for n in sorted(self._pending) if n < checkpoint_id)
        return CompletionNotice(checkpoint_id, self.subtasks(), subsumed)

    def metadata_failed(self, checkpoint_id: int, reason: str) -> Aborted:
        return self._abort(checkpoint_id, f"metadata could not be written: {reason}",
                           counts=True)

    # -- failures ----------------------------------------------------------------------------

    def decline(self, checkpoint_id: int, operator_id: str, subtask: int,
                reason: str) -> Aborted | None:
        """A subtask could not take its snapshot; None when the checkpoint is already gone."""
        if checkpoint_id not in self._pending:
            return None
        return self._abort(checkpoint_id,
                           f"declined by subtask {subtask} of '{operator_id}': {reason}",
                           counts=True)

    def expire(self, now_ms: int) -> tuple[Aborted, ...]:
        """Abort every checkpoint still waiting for acknowledgements ``timeout_ms`` after
        its trigger (one whose metadata is being written does not expire)."""
        expired = [n for n, p in sorted(self._pending.items())
                   if p.all_acknowledged_ms is None
                   and now_ms >= p.timestamp_ms + self.config.timeout_ms]
        return tuple(self._abort(n, "expired before every subtask acknowledged", counts=True)
                     for n in expired)

    def abort_all(self, reason: str) -> tuple[Aborted, ...]:
        """The job fails over (or no task can acknowledge any more): every pending
        checkpoint is aborted, not counted as a checkpoint failure -- except one whose
        acknowledgements are all in: its metadata is being written, and only
        ``metadata_written`` or ``metadata_failed`` decide its fate (deleting its files
        under a ``_metadata`` that lands a moment later would leave a completed checkpoint
        that cannot be restored)."""
        return tuple(self._abort(n, reason, counts=False) for n, p in sorted(self._pending.items())
                     if p.all_acknowledged_ms is None)

    def _abort(self, checkpoint_id: int, reason: str, counts: bool) -> Aborted:
        pending = self._pending.pop(checkpoint_id)
        if counts:
            self.consecutive_failures += 1
        return Aborted(checkpoint_id, reason, _in_order(pending.acknowledged.items()),
                       fail_job=counts
                       and self.consecutive_failures > self.config.tolerable_failures)


def _in_order(items: Iterable[tuple[SubtaskKey, SubtaskState]]) -> tuple[SubtaskState, ...]:
    return tuple(state for _, state in sorted(items, key=lambda item: item[0]))
